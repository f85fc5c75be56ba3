/**
 * The cdk8s app entry used by cdk8s.yaml: `node lib/src/main.js <spec folder>...`. It is
 * `prewarm synth <spec folder>... -o $CDK8S_OUTDIR`, run in-process: the same charts, the same
 * output marker, the same checks and exit codes.
 */
import { run } from './cli/main.js';

// `./` keeps a spec path that starts with a dash from being read as an option.
const paths = process.argv.slice(2).map((p) => (p.startsWith('-') ? `./${p}` : p));
process.exitCode = await run(['synth', ...paths, '--output', process.env['CDK8S_OUTDIR'] ?? 'dist']);
