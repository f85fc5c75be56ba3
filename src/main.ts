/**
 * The cdk8s app entry used by cdk8s.yaml: `node lib/src/main.js <spec folder>...`. cdk8s sets
 * CDK8S_OUTDIR; the charts are the same ones `prewarm synth` writes.
 */
import { createApp } from './synth/app.js';
import { formatDiagnostic, SpecError, type Diagnostic } from './imagecache/errors.js';
import { loadBundle } from './imagecache/load.js';
import { DEFAULT_RECONCILER_IMAGE } from './version.js';

const paths = process.argv.slice(2);
try {
  if (paths.length === 0) throw new Error('usage: node lib/src/main.js <spec folder>...');
  const { bundle, warnings } = await loadBundle(paths);
  const onWarning = (w: Diagnostic) => process.stderr.write(`${formatDiagnostic(w)}\n`);
  for (const w of warnings) onWarning(w);
  createApp(bundle, { reconciler: { image: DEFAULT_RECONCILER_IMAGE }, onWarning }, process.env['CDK8S_OUTDIR'] ?? 'dist').synth();
} catch (err) {
  if (err instanceof SpecError) for (const d of err.diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
  else process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
