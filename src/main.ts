/**
 * The cdk8s app entry used by cdk8s.yaml: `node lib/src/main.js [--own-namespace NS]... <spec
 * folder>...`. cdk8s sets CDK8S_OUTDIR; the charts are the same ones `prewarm synth` writes with
 * the same options.
 */
import { createApp } from './synth/app.js';
import { formatDiagnostic, SpecError, type Diagnostic } from './imagecache/errors.js';
import { loadBundle } from './imagecache/load.js';
import { DEFAULT_RECONCILER_IMAGE } from './version.js';

const paths: string[] = [];
const ownedNamespaces: string[] = [];
try {
  const args = process.argv.slice(2);
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--own-namespace' && i + 1 < args.length) ownedNamespaces.push(args[++i] as string);
    else paths.push(arg);
  }
  if (paths.length === 0) throw new Error('usage: node lib/src/main.js [--own-namespace NS]... <spec folder>...');
  const { bundle, warnings } = await loadBundle(paths);
  const onWarning = (w: Diagnostic) => process.stderr.write(`${formatDiagnostic(w)}\n`);
  for (const w of warnings) onWarning(w);
  createApp(bundle, { reconciler: { image: DEFAULT_RECONCILER_IMAGE }, ownedNamespaces, onWarning }, process.env['CDK8S_OUTDIR'] ?? 'dist').synth();
} catch (err) {
  if (err instanceof SpecError) for (const d of err.diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
  else process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
