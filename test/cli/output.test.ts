import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, symlink, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { checkOutput, replaceDirectory } from '../../src/cli/output.js';
import { OUTPUT_MARKER } from '../../src/cli/output-marker.js';

const writeOne = (text: string) => async (dir: string) => writeFile(join(dir, 'prewarm-cluster.k8s.yaml'), text);
const mode = async (path: string) => (await stat(path)).mode & 0o7777;

async function workdir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'prewarm-output-'));
}

describe('replaceDirectory', () => {
  it('gives a new folder the mode mkdir gives under the umask, not mkdtemp 0700', async () => {
    const root = await workdir();
    await mkdir(join(root, 'reference'));
    await replaceDirectory(join(root, 'nested', 'out'), writeOne('a'));
    expect(await mode(join(root, 'nested', 'out'))).toBe(await mode(join(root, 'reference')));
    expect(await mode(join(root, 'nested'))).toBe(await mode(join(root, 'reference')));
  });

  it.each([0o700, 0o750, 0o755, 0o775, 0o2775])('keeps the mode %o of the folder it replaces', async (m) => {
    const root = await workdir();
    const out = join(root, 'out');
    await replaceDirectory(out, writeOne('a'));
    await chmod(out, m);
    await replaceDirectory(out, writeOne('b'));
    expect(await mode(out)).toBe(m);
    expect(await readFile(join(out, 'prewarm-cluster.k8s.yaml'), 'utf8')).toBe('b');
  });

  it.each<[string, (root: string) => Promise<string>]>([
    [
      'a link to a previous output',
      async (root) => (
        await replaceDirectory(join(root, 'real'), writeOne('a')),
        await symlink('real', join(root, 'out')),
        join(root, 'real')
      ),
    ],
    [
      'a link to a link',
      async (root) => (
        await replaceDirectory(join(root, 'real'), writeOne('a')),
        await symlink('real', join(root, 'mid')),
        await symlink(join(root, 'mid'), join(root, 'out')),
        join(root, 'real')
      ),
    ],
    [
      'a link to an empty folder elsewhere',
      async (root) => (
        await mkdir(join(root, 'elsewhere', 'real'), { recursive: true }),
        await symlink(join(root, 'elsewhere', 'real'), join(root, 'out')),
        join(root, 'elsewhere', 'real')
      ),
    ],
    [
      'a dangling link',
      async (root) => (await mkdir(join(root, 'build')), await symlink('build/dist', join(root, 'out')), join(root, 'build', 'dist')),
    ],
  ])('keeps %s a link and writes into the folder it leads to', async (_name, layout) => {
    const root = await workdir();
    const real = await layout(root);
    const link = await readlink(join(root, 'out'));
    await replaceDirectory(join(root, 'out'), writeOne('new'));
    expect((await lstat(join(root, 'out'))).isSymbolicLink()).toBe(true);
    expect(await readlink(join(root, 'out'))).toBe(link);
    expect(await readFile(join(real, 'prewarm-cluster.k8s.yaml'), 'utf8')).toBe('new');
    expect((await readdir(real)).sort()).toEqual([OUTPUT_MARKER, 'prewarm-cluster.k8s.yaml']);
  });

  it('leaves the old output and no temporary folder behind when writing fails', async () => {
    const root = await workdir();
    const out = join(root, 'out');
    await replaceDirectory(out, writeOne('old'));
    await chmod(out, 0o750);
    const failing = async (dir: string) => {
      await writeFile(join(dir, 'prewarm-cluster.k8s.yaml'), 'half');
      throw new Error('synth failed');
    };
    await expect(replaceDirectory(out, failing)).rejects.toThrow('synth failed');
    expect(await readFile(join(out, 'prewarm-cluster.k8s.yaml'), 'utf8')).toBe('old');
    expect(await mode(out)).toBe(0o750);
    expect(await readdir(root)).toEqual(['out']);
  });

  it('reports a loop of links as an I/O failure on the target (exit 70)', async () => {
    const root = await workdir();
    await symlink('b', join(root, 'a'));
    await symlink('a', join(root, 'b'));
    await expect(replaceDirectory(join(root, 'a'), writeOne('x'))).rejects.toMatchObject({
      exitCode: ExitCode.Internal,
      message: `cannot write ${join(root, 'a')}: too many symbolic links encountered (ELOOP)`,
    });
    await rm(root, { recursive: true });
  });
});

describe('checkOutput', () => {
  it('escapes the names of foreign files it refuses, so none puts an escape sequence on the terminal', async () => {
    const out = join(await workdir(), 'dist');
    await mkdir(out);
    await writeFile(join(out, '\u001b[2J\u001b]0;owned\u0007.yaml'), 'x');
    const err = await checkOutput(out).catch((e: unknown) => e);
    expect(err).toMatchObject({ exitCode: ExitCode.InvalidInput });
    const message = (err as Error).message;
    expect(message).toContain('it holds \\x1b[2J\\x1b]0;owned\\x07.yaml, which prewarm did not write');
    // eslint-disable-next-line no-control-regex -- the point: no raw control character in the message
    expect(message).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });
});
