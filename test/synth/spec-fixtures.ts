/** ImageCache files and bundles for the synth checks' tests. */
import { expect } from 'vitest';
import { buildBundle } from '../../src/imagecache/bundle.js';
import type { Bundle } from '../../src/imagecache/model.js';
import { parseFiles, type SourceFile } from '../../src/imagecache/parse.js';

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
