/** ImageCache files and bundles for the synth checks' tests. */
import { expect } from 'vitest';
import { buildBundle } from '../../src/imagecache/bundle.js';
import type { Bundle } from '../../src/imagecache/model.js';
import { parseFiles, type SourceFile } from '../../src/imagecache/parse.js';
import { formatDiagnostic, SpecError } from '../../src/imagecache/errors.js';
import { synthYaml, type SynthOptions } from '../../src/synth/app.js';

/** A prewarm.dev ImageCache `namespace/name` in `file`, whose spec is `spec` (indented YAML). */
export function cache(file: string, name: string, namespace: string, spec: string): SourceFile {
  return {
    path: file,
    text: `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: ${name}, namespace: ${namespace}}\nspec:\n${spec}`,
  };
}

/** The bundle of `files`, which must parse and group without errors. */
export function bundleOf(files: SourceFile[]): Bundle {
  const parsed = parseFiles(files);
  expect(parsed.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  const grouped = buildBundle(parsed.caches);
  expect(grouped.diagnostics).toEqual([]);
  return grouped.bundle;
}

/** The diagnostics synth throws for `files`, formatted as the CLI prints them; by default with the sidecar. */
export function refusal(
  files: SourceFile[],
  options: SynthOptions = { reconciler: { image: 'ghcr.io/prewarm-dev/reconciler:0.1.0' } },
): string[] {
  const bundle = bundleOf(files);
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
