/**
 * The import boundaries between the top-level folders: src/ ships and imports none of the rest;
 * harness/ serves tests and benchmarks alike, so it imports neither; benchmarks use the harness,
 * never the tests; tests never import benchmark code.
 *
 * Inside src/, the layers of the README's Layout section: every import points down, never up. And
 * harness/ and bench/ reach into src/ only through its public entry points, the contract and the
 * HTTP leaf, with the few exceptions listed below, each with its reason.
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

/**
 * The layers of src/: a folder (or a file at the top of src/) -> the layers it may import from.
 * Imports within a layer are free. Written out in full rather than derived, so a new edge is a
 * decision someone makes here, next to the README's Layout section.
 */
const LAYERS: Readonly<Record<string, readonly string[]>> = {
  text: [],
  files: [],
  contract: [],
  'version.ts': [],
  http: ['text'],
  oci: ['http', 'contract', 'text', 'files'],
  imagecache: ['oci', 'http', 'contract', 'text', 'files'],
  synth: ['imagecache', 'oci', 'http', 'contract', 'text'],
  migrate: ['imagecache', 'oci', 'contract', 'text'],
  discover: ['imagecache', 'oci', 'contract', 'text'],
  reconciler: ['oci', 'http', 'contract', 'text'],
  status: ['oci', 'http', 'contract', 'text'],
  doctor: ['status', 'oci', 'http', 'contract', 'text'],
  cli: ['doctor', 'status', 'migrate', 'discover', 'synth', 'imagecache', 'oci', 'http', 'contract', 'text', 'files', 'version.ts'],
  'index.ts': ['synth', 'imagecache', 'oci', 'contract', 'files', 'version.ts'],
  'main.ts': ['cli'],
};

/**
 * Imports in src/ allowed to point up the layers, as "file -> module" with the reason each stays.
 * Empty: a new entry is a decision to argue for in review.
 */
const LAYER_EXCEPTIONS: Readonly<Record<string, string>> = {};

/** What harness/ and bench/ may import from src/: the public entry points, the contract and the HTTP leaf. */
const PUBLIC = ['src/index.ts', 'src/cli/main.ts', 'src/cli/exit-codes.ts', 'src/contract/', 'src/http/'];

/** Modules of src/ that harness/ and bench/ may import besides {@link PUBLIC}, with the reason. */
const PUBLIC_EXCEPTIONS: Readonly<Record<string, string>> = {
  'src/reconciler/kube-types.ts': "the sidecar's Node and Pod wire types, which the fake apiserver and the footprint bench serve",
  'src/reconciler/ports.ts': 'the JSON patch operation the fake apiserver applies as the sidecar sends it',
  'src/status/timeline.ts': 'the time-to-warm bench and the timeline recorder build the timeline `prewarm status --node` prints',
  'src/status/timeline-render.ts': 'the time-to-warm bench draws the same waterfall as `prewarm status --node`',
  'src/synth/lanes.ts': 'bench:lanes measures the split itself (evenness, pullers changed per image)',
  'src/oci/reference.ts': 'bench:lanes builds the image references the split takes',
  'src/imagecache/duration.ts': 'the kube-fledged model reads durations as the spec does',
  'src/synth/pull-daemonset.ts': "the helper binary's paths, which the workload harness reuses",
  'src/reconciler/image-files.mjs': 'the e2e image holds the files the shipped image holds, from the one list',
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

/** The repository-relative .ts module a relative specifier of `file` names. */
function target(file: string, specifier: string): string {
  return relative(ROOT, resolve(ROOT, dirname(file), specifier))
    .split(sep)
    .join('/')
    .replace(/\.js$/, '.ts');
}

/** The layer of a module under src/: its folder, or its file name at the top of src/. */
function layerOf(module: string): string {
  return module.split('/')[1] ?? '';
}

/** `file`'s imports that break the layering, as "specifier -> module". */
function layerViolations(file: string, text: string): string[] {
  const from = file.split(sep).join('/');
  const own = from.split('/')[0] ?? '';
  const bad: string[] = [];
  for (const s of specifiers(text).filter((x) => x.startsWith('.'))) {
    const to = target(file, s);
    if (!to.startsWith('src/')) continue;
    if (own === 'src') {
      const [a, b] = [layerOf(from), layerOf(to)];
      if (a === b || (LAYERS[a] ?? []).includes(b) || `${from} -> ${to}` in LAYER_EXCEPTIONS) continue;
    } else if (own === 'harness' || own === 'bench') {
      if (PUBLIC.some((p) => (p.endsWith('/') ? to.startsWith(p) : to === p)) || to in PUBLIC_EXCEPTIONS) continue;
    } else {
      continue;
    }
    bad.push(`${s} -> ${to}`);
  }
  return bad;
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

describe('layers', () => {
  it.each(['src', 'harness', 'bench'])('no file under %s/ imports up the layers or past the public entry points', (dir) => {
    const bad: Record<string, string[]> = {};
    for (const f of tsFiles(dir)) {
      const v = layerViolations(f, readFileSync(join(ROOT, f), 'utf8'));
      if (v.length > 0) bad[f] = v;
    }
    expect(bad).toEqual({});
  });

  it('names every folder of src/ in a layer, so a new folder is placed on purpose', () => {
    const layers = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
      .filter((e) => e.isDirectory() || e.name.endsWith('.ts'))
      .map((e) => e.name);
    expect(layers.filter((l) => !(l in LAYERS))).toEqual([]);
  });

  it('lists no exception that no import needs any more', () => {
    const used = new Set<string>();
    for (const f of [...tsFiles('src'), ...tsFiles('harness'), ...tsFiles('bench')]) {
      const from = f.split(sep).join('/');
      for (const s of specifiers(readFileSync(join(ROOT, f), 'utf8')).filter((x) => x.startsWith('.'))) {
        const to = target(f, s);
        used.add(`${from} -> ${to}`);
        if (!from.startsWith('src/')) used.add(to);
      }
    }
    expect([...Object.keys(LAYER_EXCEPTIONS), ...Object.keys(PUBLIC_EXCEPTIONS)].filter((e) => !used.has(e))).toEqual([]);
  });

  it.each([
    ['src/oci/x.ts', "import { synthYaml } from '../synth/app.js';", ['../synth/app.js -> src/synth/app.ts']],
    ['src/oci/x.ts', "import { request } from '../http/client.js';\nimport { ENV } from '../contract/names.js';", []],
    ['src/http/x.ts', "import { ENV } from '../contract/names.js';", ['../contract/names.js -> src/contract/names.ts']],
    ['src/contract/x.ts', "import type { Endpoint } from '../http/client.js';", ['../http/client.js -> src/http/client.ts']],
    ['src/imagecache/x.ts', "import { parseImageRef } from '../oci/reference.js';", []],
    [
      'src/imagecache/x.ts',
      "export { PullDaemonSet } from '../synth/pull-daemonset.js';",
      ['../synth/pull-daemonset.js -> src/synth/pull-daemonset.ts'],
    ],
    ['src/synth/x.ts', "const m = await import('../cli/main.js');", ['../cli/main.js -> src/cli/main.ts']],
    ['src/reconciler/adapters/x.ts', "import { configFromEnv } from '../../contract/sidecar-env.js';", []],
    ['src/reconciler/x.ts', "import { loadBundle } from '../imagecache/load.js';", ['../imagecache/load.js -> src/imagecache/load.ts']],
    ['src/status/x.ts', "import type { Gate } from '../reconciler/gate.js';", ['../reconciler/gate.js -> src/reconciler/gate.ts']],
    ['src/version.ts', "import { GROUP } from './contract/names.js';", ['./contract/names.js -> src/contract/names.ts']],
    ['src/cli/x.ts', "import { VERSION } from '../version.js';\nimport { addPrewarmCharts } from '../synth/app.js';", []],
    ['src/oci/docker-config.ts', "import { readNamedFile } from '../files/read.js';", []],
    ['src/oci/keyring.ts', "import { readNamedFile } from '../imagecache/load.js';", ['../imagecache/load.js -> src/imagecache/load.ts']],
    ['src/files/x.ts', "import { compareStrings } from '../contract/order.js';", ['../contract/order.js -> src/contract/order.ts']],
    ['harness/x.ts', "import { createApp } from '../src/index.js';\nimport { roleOf } from '../src/contract/roles.js';", []],
    ['harness/x.ts', "import { synthYaml } from '../src/synth/app.js';", ['../src/synth/app.js -> src/synth/app.ts']],
    ['bench/support/x.ts', "import { ApiError } from '../../src/http/api-error.js';", []],
    ['bench/x.ts', "import { decide } from '../src/reconciler/gate.js';", ['../src/reconciler/gate.js -> src/reconciler/gate.ts']],
    ['bench/x.ts', "import type { KPod } from '../src/reconciler/kube-types.js';", []],
    ['test/x.test.ts', "import { decide } from '../src/reconciler/gate.js';", []],
  ])('the check itself: %s with %j', (file, text, want) => {
    expect(layerViolations(file, text)).toEqual(want);
  });
});

/** The import graph of the .ts files under `dir`: each file -> the files of that set it imports (type-only included). */
function importGraph(files: readonly string[], read: (file: string) => string): Map<string, string[]> {
  const known = new Set(files.map((f) => f.split(sep).join('/')));
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const from = f.split(sep).join('/');
    const to = specifiers(read(f))
      .filter((s) => s.startsWith('.'))
      .map((s) => target(f, s))
      .filter((t) => known.has(t));
    graph.set(from, [...new Set(to)].sort());
  }
  return graph;
}

/** The import cycles of a graph: its strongly connected components of more than one file, or a file importing itself (Tarjan). */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v) ?? 0);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop(); w !== undefined; w = w === v ? undefined : stack.pop()) {
      onStack.delete(w);
      component.push(w);
    }
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

describe('cycles', () => {
  it.each(['src', 'harness'])('no import cycle under %s/, type-only imports included', (dir) => {
    const graph = importGraph(tsFiles(dir), (f) => readFileSync(join(ROOT, f), 'utf8'));
    expect(graph.size).toBeGreaterThan(0);
    expect(cycles(graph)).toEqual([]);
  });

  it.each([
    [{ 'src/a.ts': "import { b } from './b.js';", 'src/b.ts': "import type { A } from './a.js';" }, [['src/a.ts', 'src/b.ts']]],
    [
      {
        'src/a.ts': "import { b } from './b.js';",
        'src/b.ts': "import { c } from './c.js';",
        'src/c.ts': "export type { A } from './a.js';",
      },
      [['src/a.ts', 'src/b.ts', 'src/c.ts']],
    ],
    [{ 'src/a.ts': "import { b } from './b.js';", 'src/b.ts': "import { c } from './c.js';", 'src/c.ts': '' }, []],
    [{ 'src/a.ts': "import { a } from './a.js';" }, [['src/a.ts']]],
  ])('the check itself: %j', (texts: Record<string, string>, want) => {
    const graph = importGraph(Object.keys(texts), (f) => texts[f] ?? '');
    expect(cycles(graph)).toEqual(want);
  });
});
