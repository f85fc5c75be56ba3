/** What synth refuses, for the synth checks' tests. */
import type { SourceFile } from '../../src/imagecache/parse.js';
import { formatDiagnostic, SpecError } from '../../src/imagecache/errors.js';
import { synthYaml, type SynthOptions } from '../../src/synth/app.js';
import { bundleOfFiles } from '../helpers.js';

/** The diagnostics synth throws for `files`, formatted as the CLI prints them; by default with the sidecar. */
export function refusal(
  files: SourceFile[],
  options: SynthOptions = { reconciler: { image: 'ghcr.io/prewarm-dev/reconciler:0.1.0' } },
): string[] {
  const bundle = bundleOfFiles(files);
  try {
    synthYaml(bundle, options);
  } catch (err) {
    if (err instanceof SpecError) return err.diagnostics.map(formatDiagnostic);
    throw err;
  }
  throw new Error('synth did not refuse');
}
