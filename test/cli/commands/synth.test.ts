import { execFile } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { OUTPUT_MARKER } from '../../../src/cli/output-marker.js';

const exec = promisify(execFile);
const BIN = join(process.cwd(), 'src/cli/bin.ts');
const TSX = pathToFileURL(join(process.cwd(), 'node_modules/tsx/dist/loader.mjs')).href;

const spec = `apiVersion: kubefledged.io/v1alpha2
kind: ImageCache
metadata: {name: c, namespace: ns}
spec:
  cacheSpec:
  - images: [redis:7]
`;

/** The real executable, run from `cwd` as a CI job runs it from its checkout. */
async function synthIn(cwd: string, ...args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    const r = await exec(process.execPath, ['--import', TSX, BIN, 'synth', ...args], { cwd });
    return { code: 0, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { code: e.code, stderr: e.stderr };
  }
}

describe('synth -o and links in the checkout', () => {
  it('refuses a committed dist link that leaves the checkout, and follows it with --follow-output-link', async () => {
    const root = await mkdtemp(join(tmpdir(), 'prewarm-synth-'));
    const checkout = join(root, 'checkout');
    await mkdir(join(root, 'elsewhere'));
    await writeFile(join(root, 'elsewhere', 'keep.txt'), 'theirs');
    await mkdir(checkout);
    await writeFile(join(checkout, 'a.yaml'), spec);
    await symlink('../elsewhere', join(checkout, 'dist'));

    const refused = await synthIn(checkout, 'a.yaml', '-o', 'dist', '--force');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      'refusing to write dist: dist is a link that leads out of the folder it lies in and out of the current directory',
    );
    expect(refused.stderr).not.toContain('elsewhere');
    expect(await readdir(join(root, 'elsewhere'))).toEqual(['keep.txt']);

    const followed = await synthIn(checkout, 'a.yaml', '-o', 'dist', '--force', '--follow-output-link');
    expect(followed.code, followed.stderr).toBe(0);
    expect((await readdir(join(root, 'elsewhere'))).sort()).toEqual([OUTPUT_MARKER, 'prewarm-cluster.k8s.yaml', 'prewarm-ns-ns.k8s.yaml']);
    expect((await lstat(join(checkout, 'dist'))).isSymbolicLink()).toBe(true);
    await rm(root, { recursive: true });
  }, 60_000);

  it('follows a link that leaves its own folder but stays inside the current directory', async () => {
    const root = await mkdtemp(join(tmpdir(), 'prewarm-synth-'));
    await mkdir(join(root, 'deploy'));
    await mkdir(join(root, 'build'));
    await writeFile(join(root, 'a.yaml'), spec);
    await symlink('../build', join(root, 'deploy', 'dist'));
    const r = await synthIn(root, 'a.yaml', '-o', 'deploy/dist');
    expect(r.code, r.stderr).toBe(0);
    expect(await readdir(join(root, 'build'))).toContain('prewarm-cluster.k8s.yaml');
    await rm(root, { recursive: true });
  }, 60_000);
});
