/** Test helpers: build models from short YAML snippets, and synthesize them. */
import { Testing } from 'cdk8s';
import type { ExitCode } from '../src/cli/exit-codes.js';
import { run } from '../src/cli/main.js';
import { buildBundle } from '../src/imagecache/bundle.js';
import type { Bundle, Pool } from '../src/imagecache/model.js';
import { parseFiles } from '../src/imagecache/parse.js';

/** A bundle from prewarm.dev ImageCache `spec` bodies, one per entry of `specs`. */
export function bundleOf(...specs: string[]): Bundle {
  const files = specs.map((spec, i) => ({
    path: `spec-${i}.yaml`,
    text: `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: c${i}, namespace: ml}\nspec:\n${spec}`,
  }));
  const parsed = parseFiles(files);
  const errors = parsed.diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) throw new Error(`bad test spec: ${JSON.stringify(errors)}`);
  const grouped = buildBundle(parsed.caches);
  if (grouped.diagnostics.length > 0) throw new Error(`bad test bundle: ${JSON.stringify(grouped.diagnostics)}`);
  return grouped.bundle;
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
