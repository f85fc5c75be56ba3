import { mkdtemp, mkdir, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SpecError } from '../../src/imagecache/errors.js';
import { loadBundle } from '../../src/imagecache/load.js';

const doc = (name: string) =>
  `apiVersion: kubefledged.io/v1alpha2\nkind: ImageCache\nmetadata: {name: ${name}, namespace: ns}\nspec:\n  cacheSpec:\n  - images: [redis:7]\n`;

describe('loadBundle', () => {
  it('walks folders recursively for .yaml and .yml, skipping hidden entries and other files', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-load-'));
    await mkdir(join(dir, 'sub', 'deeper'), { recursive: true });
    await mkdir(join(dir, '.git'));
    await writeFile(join(dir, 'a.yaml'), doc('a'));
    await writeFile(join(dir, 'sub', 'deeper', 'b.yml'), doc('b'));
    await writeFile(join(dir, '.git', 'c.yaml'), doc('c'));
    await writeFile(join(dir, '.hidden.yaml'), doc('d'));
    await writeFile(join(dir, 'README.md'), '# not yaml');
    const result = await loadBundle([dir]);
    expect(result.imageCaches).toBe(2);
    expect(result.bundle.pools[0]?.sources).toEqual(['ns/a', 'ns/b']);
  });

  it('reads links to files, never walks links to folders, and reports dangling links', async () => {
    const shared = await mkdtemp(join(tmpdir(), 'prewarm-load-shared-'));
    await writeFile(join(shared, 'common.yaml'), doc('common'));
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-load-'));
    await writeFile(join(dir, 'a.yaml'), doc('a'));
    await symlink(join(shared, 'common.yaml'), join(dir, 'common.yaml'));
    await symlink(dir, join(dir, 'loop.yaml')); // a folder link with a YAML name: not followed
    expect((await loadBundle([dir])).bundle.pools[0]?.sources).toEqual(['ns/a', 'ns/common']);
    await symlink(join(shared, 'gone.yaml'), join(dir, 'dangling.yaml'));
    await expect(loadBundle([dir])).rejects.toThrow(/dangling\.yaml.*cannot read: ENOENT/s);
  });

  it('never reads excluded folders, such as the output folder inside a spec folder', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-load-'));
    await mkdir(join(dir, 'dist'));
    await writeFile(join(dir, 'a.yaml'), doc('a'));
    await writeFile(join(dir, 'dist', 'out.k8s.yaml'), 'apiVersion: apps/v1\nkind: DaemonSet\n');
    expect((await loadBundle([dir], { exclude: [join(dir, 'dist')] })).imageCaches).toBe(1);
    await expect(loadBundle([dir])).rejects.toThrow('unsupported apiVersion "apps/v1"');
  });

  it('throws one SpecError listing every problem, including unreadable paths', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-load-'));
    await writeFile(join(dir, 'bad.yaml'), doc('a').replace('redis:7', 'Redis:7'));
    const missing = join(dir, 'missing.yaml');
    const err = await loadBundle([dir, missing]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SpecError);
    expect((err as SpecError).diagnostics.map((d) => [d.file, d.message])).toEqual([
      [join(dir, 'bad.yaml'), 'invalid image reference "Redis:7": repository name "Redis" must be lowercase'],
      [missing, 'cannot read: ENOENT'],
    ]);
  });
});
