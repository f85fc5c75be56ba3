/** What synth refuses, for the synth checks' tests. */
import type { SourceFile } from '../../src/imagecache/parse.js';
import { formatDiagnostic, SpecError } from '../../src/imagecache/errors.js';
import { synthYaml, type SynthOptions } from '../../src/synth/app.js';
import { bundleOfFiles, cache } from '../helpers.js';

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

/** `n` pools that all select the nodes labelled tier=web: one on that label, the rest on every node (told apart by a toleration). */
export function poolsOnOneNode(n: number): SourceFile[] {
  const entries = ['  - images: [redis:7]\n    nodeSelector: {tier: web}\n'];
  for (let i = 1; i < n; i++) entries.push(`  - images: [redis:7]\n    tolerations: [{key: t${i}, operator: Exists}]\n`);
  return [cache('a.yaml', 'a', 'ml', `  lanes: 1\n  cacheSpec:\n${entries.join('')}`)];
}
