import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from '../../../src/cli/main.js';
import { formatDiagnostic } from '../../../src/imagecache/errors.js';
import { MAX_RUN_SPEC_BYTES, MAX_SPEC_FILES, MAX_WALK_ENTRIES } from '../../../src/imagecache/load.js';
import { MAX_SPEC_FILE_BYTES } from '../../../src/files/read.js';
import type { Bundle } from '../../../src/imagecache/model.js';
import { createApp } from '../../../src/synth/app.js';
import { checkBundleSize, MAX_POOL_IMAGES, MAX_RUN_IMAGES, MIN_IMAGE_CONTAINER_BYTES } from '../../../src/synth/checks/budget.js';
import { bundleOfFiles } from '../../helpers.js';

/** One ImageCache of `pools` pools (each its own selector) of `images` images each, in block style. */
function spec(name: string, pools: number, images: number, lanes = 4): string {
  const out = [
    `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: ${name}, namespace: ml}\nspec:\n  lanes: ${lanes}\n  cacheSpec:\n`,
  ];
  for (let p = 0; p < pools; p++) {
    out.push(`  - pool: ${name}-${p}\n    nodeSelector: {pool: ${name}-${p}}\n    images:\n`);
    for (let i = 0; i < images; i++) out.push(`    - r.example/a-${i}:1\n`);
  }
  return out.join('');
}

const bundleOf = (text: string): Bundle => bundleOfFiles([{ path: 'big.yaml', text }]);

async function cli(argv: string[]): Promise<{ code: number; stderr: string }> {
  let stderr = '';
  const code = await run(argv, { stdout: () => undefined, stderr: (t) => (stderr += t) });
  return { code, stderr };
}

describe('what one image adds to a DaemonSet: the bound the pool check relies on', () => {
  it('the container of the shortest reference is at least MIN_IMAGE_CONTAINER_BYTES of JSON', () => {
    const app = createApp(bundleOf(spec('s', 1, 0).replace('    images:\n', '    images: [a.b/c:1]\n')), {
      reconciler: { image: 'ghcr.io/prewarm-dev/reconciler:0.1.0' },
    });
    const ds = app.charts
      .flatMap((c) => c.toJson() as { kind: string; spec?: { template: { spec: { containers: { image: string }[] } } } }[])
      .find((m) => m.kind === 'DaemonSet');
    const container = ds?.spec?.template.spec.containers.find((c) => c.image === 'a.b/c:1');
    expect(container).toBeDefined();
    expect(Buffer.byteLength(JSON.stringify(container))).toBeGreaterThanOrEqual(MIN_IMAGE_CONTAINER_BYTES);
    expect(MAX_POOL_IMAGES).toBe(3276);
  });
});

describe('checkBundleSize: refused on the model, before anything is built', () => {
  it('a pool of MAX_POOL_IMAGES images passes; one more is refused at the pool, naming the limit', () => {
    expect(checkBundleSize(bundleOf(spec('ok', 1, MAX_POOL_IMAGES)))).toEqual([]);
    expect(checkBundleSize(bundleOf(spec('big', 1, MAX_POOL_IMAGES + 1))).map(formatDiagnostic)).toEqual([
      'big.yaml:7:5: error: document 1: spec.cacheSpec[0]: DaemonSet ml/prewarm-big-0 would hold 3,277 images, at least 480 bytes of JSON each: ' +
        "over 1,572,864 bytes, which the apiserver refuses (at most 3,276 images fit in any case); split the pool's images across pools",
    ]);
  });

  it('MAX_RUN_IMAGES over all pools passes; one more is refused at the pool that crosses it', () => {
    expect(MAX_RUN_IMAGES).toBe(10_000);
    expect(checkBundleSize(bundleOf(spec('ok', 4, 2_500)))).toEqual([]);
    const got = checkBundleSize(bundleOf(`${spec('r', 4, 2_500)}  - pool: r-4\n    nodeSelector: {pool: r-4}\n    images: [x:1]\n`));
    expect(got.map(formatDiagnostic)).toEqual([
      expect.stringMatching(
        /^big\.yaml:\d+:5: error: document 1: spec\.cacheSpec\[4\]: with this pool, the pools of this run hold more than 10,000 images in all \(an image counts once per pool\), the most one run synthesizes; not built/,
      ),
    ]);
  });
});

describe('the CLI: validate and synth refuse a bundle too large to build, quickly and alike (exit 1, nothing written)', () => {
  it.each([
    [
      'one pool of 60,000 images (the 1.6 MB flow list of issue 20)',
      `spec.cacheSpec[0]: DaemonSet ml/prewarm-f-0 would hold 60,000 images`,
      spec('f', 1, 60_000),
    ],
    [
      'six pools of 2,000 images',
      'spec.cacheSpec[5]: with this pool, the pools of this run hold more than 10,000 images in all',
      spec('p', 6, 2_000),
    ],
  ])(
    '%s',
    async (_, message, text) => {
      const dir = await mkdtemp(join(tmpdir(), 'prewarm-budget-'));
      await writeFile(join(dir, 'big.yaml'), text);
      for (const argv of [
        ['validate', join(dir, 'big.yaml')],
        ['synth', join(dir, 'big.yaml'), '-o', join(dir, 'out')],
      ]) {
        const started = Date.now();
        const r = await cli(argv);
        expect(r.code, r.stderr).toBe(1);
        expect(r.stderr).toContain(`${join(dir, 'big.yaml')}:`);
        expect(r.stderr).toContain(message);
        // Refused on the model: no pull pod was built, so it ends in seconds, not minutes.
        expect(Date.now() - started).toBeLessThan(20_000);
      }
      expect(await readdir(dir)).toEqual(['big.yaml']);
    },
    60_000,
  );
});

describe('the run-wide byte budget: many files, each under the per-file limit', () => {
  it('stops reading at the file that crosses MAX_RUN_SPEC_BYTES, naming it and how many were left; exit 1, nothing written', async () => {
    expect(MAX_RUN_SPEC_BYTES).toBe(4 * MAX_SPEC_FILE_BYTES);
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-run-bytes-'));
    const specs = join(dir, 'specs');
    await import('node:fs/promises').then((fs) => fs.mkdir(specs));
    // Five files of 3.9 MiB: a valid ImageCache padded with one long comment line (cheap to parse).
    const head = spec('c', 1, 1);
    for (let i = 0; i < 6; i++) {
      const text = head.replace('name: c,', `name: c${i},`).replace(/pool: c-0/g, `pool: c${i}`);
      await writeFile(join(specs, `f${i}.yaml`), `${text}#${'x'.repeat(3.9 * 1024 * 1024 - text.length)}\n`);
    }
    for (const argv of [
      ['validate', specs],
      ['synth', specs, '-o', join(dir, 'out')],
    ]) {
      const r = await cli(argv);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr.split('\n').filter((l) => l.includes('error:'))).toEqual([
        `${join(specs, 'f4.yaml')}: error: brings the spec files of this run to more than 16.0 MiB (16777216 bytes), the limit for all the files ` +
          'of one run; not read nor the 1 file after it (name fewer files or folders per run)',
      ]);
    }
    expect(await readdir(dir)).toEqual(['specs']);
    // The same files four at a time are read.
    const four = await cli(['validate', join(specs, 'f0.yaml'), join(specs, 'f1.yaml'), join(specs, 'f2.yaml'), join(specs, 'f3.yaml')]);
    expect(four.code, four.stderr).toBe(0);
  }, 60_000);
});

/** Writes `count` files, `make(i)` naming each and its text, a thousand at a time. */
async function files(count: number, make: (i: number) => [string, string]): Promise<void> {
  for (let start = 0; start < count; start += 1000) {
    const batch = Array.from({ length: Math.min(1000, count - start) }, (_, k) => make(start + k));
    await Promise.all(batch.map(([path, text]) => writeFile(path, text)));
  }
}

describe('the run-wide file and entry bounds: many small files', () => {
  const tiny = (i: number) =>
    `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: c${i}, namespace: ml}\nspec:\n  cacheSpec:\n  - images: [redis:7]\n`;

  it(`refuses a tree of more than MAX_SPEC_FILES YAML files in every command that walks spec roots, before reading any; exit 1`, async () => {
    expect(MAX_SPEC_FILES).toBe(10_000);
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-run-files-'));
    const specs = join(dir, 'specs');
    await mkdir(join(specs, 'more'), { recursive: true });
    await files(MAX_SPEC_FILES, (i) => [join(specs, `c${i}.yaml`), tiny(i)]);
    await writeFile(join(specs, 'more', 'one-more.yml'), tiny(MAX_SPEC_FILES));
    const message =
      `${specs}: error: the spec paths of this run hold more than 10,000 YAML files with this one, the most one run reads; nothing was read ` +
      '(name fewer files or folders per run, or put more ImageCaches in each file)';
    for (const argv of [
      ['validate', specs],
      ['synth', specs, '-o', join(dir, 'out')],
      ['pin', specs, '--dry-run'],
      ['specs', specs],
    ]) {
      const r = await cli(argv);
      expect(r.code, `${argv[0]}: ${r.stderr}`).toBe(1);
      expect(r.stderr.split('\n').filter((l) => l.includes('error:'))).toEqual([message]);
    }
    // Named files count toward the same bound.
    const named = await cli(['validate', specs, join(specs, 'c0.yaml')]);
    expect(named.code).toBe(1);
    expect(named.stderr).toContain('hold more than 10,000 YAML files');
    expect(await readdir(dir)).toEqual(['specs']);
    await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it('refuses a walk of more than MAX_WALK_ENTRIES folder entries, whatever their names; exit 1', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-run-entries-'));
    await writeFile(join(dir, 'cache.yaml'), tiny(0));
    // One folder of empty non-YAML files, just past the bound with cache.yaml and the folder.
    const junk = join(dir, 'junk');
    await mkdir(junk);
    await files(MAX_WALK_ENTRIES, (i) => [join(junk, `f${i}`), '']);
    const r = await cli(['validate', dir]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(
      `${dir}: error: the spec paths of this run hold more than 100,000 folder entries with this one, the most one run lists; nothing was read`,
    );
    await rm(dir, { recursive: true, force: true });
  }, 240_000);
});
