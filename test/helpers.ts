/** Test helpers: build models from short YAML snippets, and synthesize them. */
import { Testing } from 'cdk8s';
import type { ExitCode } from '../src/cli/exit-codes.js';
import { run } from '../src/cli/main.js';
import { buildBundle } from '../src/imagecache/bundle.js';
import type { Bundle, Pool } from '../src/imagecache/model.js';
import { parseFiles, type SourceFile } from '../src/imagecache/parse.js';

/** A prewarm.dev ImageCache `namespace/name` in `file`, whose spec is `spec` (indented YAML). */
export function cache(file: string, name: string, namespace: string, spec: string): SourceFile {
  return {
    path: file,
    text: `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: ${name}, namespace: ${namespace}}\nspec:\n${spec}`,
  };
}

/** The bundle of `files`, which must parse and group without errors. */
export function bundleOfFiles(files: readonly SourceFile[]): Bundle {
  const parsed = parseFiles(files);
  const errors = parsed.diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) throw new Error(`bad test spec: ${JSON.stringify(errors)}`);
  const grouped = buildBundle(parsed.caches);
  if (grouped.diagnostics.length > 0) throw new Error(`bad test bundle: ${JSON.stringify(grouped.diagnostics)}`);
  return grouped.bundle;
}

/** A bundle of ImageCaches `c0`, `c1`, … in namespace `ml`, one per `spec` body. */
export function bundleOf(...specs: string[]): Bundle {
  return bundleOfFiles(specs.map((spec, i) => cache(`spec-${i}.yaml`, `c${i}`, 'ml', spec)));
}

/** The single pool of a one-spec bundle. */
export function poolOf(spec: string): Pool {
  const pool = bundleOf(spec).pools[0];
  if (pool === undefined) throw new Error('no pool');
  return pool;
}

/** A chart for construct tests. */
export function chart() {
  return Testing.chart();
}

/** Finds the one manifest of a kind in synthesized output. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function only(manifests: any[], kind: string): any {
  const found = manifests.filter((m) => m.kind === kind);
  if (found.length !== 1) throw new Error(`expected one ${kind}, found ${found.length}`);
  return found[0];
}

/** Runs the CLI in-process, as a shell would, with both streams captured and the time it took. */
export async function cli(...argv: string[]): Promise<{ code: ExitCode; stdout: string; stderr: string; ms: number }> {
  let stdout = '';
  let stderr = '';
  const started = Date.now();
  const code = await run(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr, ms: Date.now() - started };
}

/**
 * The body of the fenced code block that follows the line `<!-- recipe: NAME ... -->` in a
 * Markdown file of the repository, so that tests check the text readers copy, not a copy of it.
 * Throws when the marker is missing, repeated, or not directly followed by a fence.
 */
export function docBlock(markdown: string, name: string): string {
  const lines = markdown.split('\n');
  const at = lines.flatMap((l, i) => (new RegExp(`^<!-- recipe: ${name}[ >]`).test(l) ? [i] : []));
  if (at.length !== 1) throw new Error(`expected one "<!-- recipe: ${name}" marker, found ${at.length}`);
  const open = lines[at[0]! + 1] ?? '';
  const fence = /^(`{3,})\w*$/.exec(open);
  if (!fence) throw new Error(`"<!-- recipe: ${name}" is not followed by a fenced block, but by: ${open}`);
  const end = lines.indexOf(fence[1]!, at[0]! + 2);
  if (end < 0) throw new Error(`the block of "<!-- recipe: ${name}" is never closed`);
  return lines.slice(at[0]! + 2, end).join('\n') + '\n';
}
