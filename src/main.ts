/**
 * The cdk8s app entry used by cdk8s.yaml: `node lib/src/main.js [--own-namespace NS]... <spec
 * folder>...`. It is `prewarm synth <spec folder>... -o $CDK8S_OUTDIR [--own-namespace NS]...`,
 * run in-process: the same charts, the same output marker, the same checks and exit codes.
 */
import { run } from './cli/main.js';

const argv = process.argv.slice(2);
const args: string[] = [];
for (let i = 0; i < argv.length; i++) {
  const arg = argv[i] as string;
  if (arg === '--own-namespace' && i + 1 < argv.length) args.push(arg, argv[++i] as string);
  // `./` keeps a spec path that starts with a dash from being read as an option.
  else args.push(arg.startsWith('-') ? `./${arg}` : arg);
}
process.exitCode = await run(['synth', ...args, '--output', process.env['CDK8S_OUTDIR'] ?? 'dist']);
