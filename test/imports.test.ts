/**
 * The import boundaries between the top-level folders: src/ ships and imports none of the rest;
 * harness/ serves tests and benchmarks alike, so it imports neither; benchmarks use the harness,
 * never the tests; tests never import benchmark code.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Top-level folder -> the top-level folders its files must not import from. */
const FORBIDDEN: Readonly<Record<string, readonly string[]>> = {
  src: ['harness', 'test', 'bench'],
  harness: ['test', 'bench'],
  bench: ['test'],
  test: ['bench'],
};

/** Every .ts file below `dir`, relative to the repository root. */
function tsFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

/** The module specifiers a file names: static imports, re-exports, dynamic import() and import type. */
function specifiers(text: string): string[] {
  return ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
}

/** `file`'s imports that land in a folder its own top-level folder must not import from, as "specifier -> folder". */
function violations(file: string, text: string): string[] {
  const own = file.split(sep)[0] ?? '';
  const banned = FORBIDDEN[own] ?? [];
  return specifiers(text)
    .filter((s) => s.startsWith('.'))
    .map((s) => [s, relative(ROOT, resolve(ROOT, dirname(file), s)).split(sep)[0] ?? ''] as const)
    .filter(([, top]) => banned.includes(top))
    .map(([s, top]) => `${s} -> ${top}/`);
}

describe('import boundaries', () => {
  it.each(Object.keys(FORBIDDEN))('no file under %s/ imports a folder it must not', (dir) => {
    const files = tsFiles(dir);
    expect(files.length).toBeGreaterThan(0);
    const bad: Record<string, string[]> = {};
    for (const f of files) {
      const v = violations(f, readFileSync(join(ROOT, f), 'utf8'));
      if (v.length > 0) bad[f] = v;
    }
    expect(bad).toEqual({});
  });

  it.each([
    ['test/e2e/x.test.ts', "import { Kube } from '../../bench/support/kube.js';", ['../../bench/support/kube.js -> bench/']],
    ['test/e2e/x.test.ts', "import type { Kube } from '../../harness/kube.js';", []],
    ['src/cli/x.ts', "export { run } from '../../harness/cluster/sh.js';", ['../../harness/cluster/sh.js -> harness/']],
    ['src/cli/x.ts', "const m = await import('../../test/helpers.js');", ['../../test/helpers.js -> test/']],
    ['src/x.ts', "import '../bench/synth.js';", ['../bench/synth.js -> bench/']],
    ['src/x.ts', "import { parse } from 'yaml';", []],
    ['bench/x.ts', "import { synth } from '../test/e2e/helpers.js';", ['../test/e2e/helpers.js -> test/']],
    ['bench/x.ts', "import { Kube } from '../harness/kube.js';\nimport { run } from '../src/cli/main.js';", []],
    ['harness/x.ts', "import { log } from '../bench/support/stats.js';", ['../bench/support/stats.js -> bench/']],
    ['test/x.test.ts', "import { only } from './helpers.js';", []],
  ])('the check itself: %s with %j', (file, text, want) => {
    expect(violations(file, text)).toEqual(want);
  });
});
