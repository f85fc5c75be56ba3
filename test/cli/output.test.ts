import { chmod, chown, lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { checkOutput, replaceDirectory } from '../../src/cli/output.js';
import { OUTPUT_MARKER } from '../../src/cli/output-marker.js';

const execFileP = promisify(execFile);
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

  it('puts the owner of the folder it replaces back when run as root', async () => {
    const root = await workdir();
    const out = join(root, 'out');
    await replaceDirectory(out, writeOne('a'));
    // Only root may give a folder away; as anyone else the owner cannot change in the first place.
    if (process.getuid?.() === 0) await chown(out, 1234, 2345);
    const before = await stat(out);
    await replaceDirectory(out, writeOne('b'));
    const after = await stat(out);
    expect([after.uid, after.gid]).toEqual([before.uid, before.gid]);
    expect(await readFile(join(out, 'prewarm-cluster.k8s.yaml'), 'utf8')).toBe('b');
    await rm(root, { recursive: true });
  });
});

/** A project folder and a folder outside it, with a previous output and a file standing for a secret. */
async function hostile(): Promise<{ root: string; project: string; outside: string; snapshot: () => Promise<Record<string, string>> }> {
  const root = await workdir();
  const project = join(root, 'project');
  const outside = join(root, 'outside');
  await mkdir(project);
  await replaceDirectory(outside, writeOne('theirs'));
  await writeFile(join(root, 'passwd'), 'root:x:0:0\n');
  const snapshot = async () => {
    const out: Record<string, string> = {};
    for (const dir of [root, outside]) {
      for (const e of await readdir(dir, { withFileTypes: true })) {
        if (e.isFile()) out[join(dir, e.name)] = await readFile(join(dir, e.name), 'utf8');
        else out[join(dir, e.name)] = e.isSymbolicLink() ? 'link' : 'dir';
      }
    }
    return out;
  };
  return { root, project, outside, snapshot };
}

describe('replaceDirectory and output links', () => {
  it.each<[string, (h: { project: string; outside: string }) => Promise<string>, string]>([
    ['a link out of the project', async (h) => (await symlink(h.outside, join(h.project, 'dist')), 'dist'), 'dist'],
    ['a dangling link out of the project', async (h) => (await symlink(join(h.outside, 'new'), join(h.project, 'dist')), 'dist'), 'dist'],
    [
      'a chain of links whose last step leaves',
      async (h) => (await symlink('mid', join(h.project, 'dist')), await symlink(h.outside, join(h.project, 'mid')), 'dist'),
      'mid',
    ],
    ['a link to the parent folder', async (h) => (await symlink('..', join(h.project, 'dist')), 'dist'), 'dist'],
    ['a link to the parent of the output', async (h) => (await symlink(h.outside, join(h.project, 'build')), 'build/dist'), 'build'],
    [
      'a relative link that climbs out',
      async (h) => (await mkdir(join(h.project, 'sub')), await symlink('../../outside', join(h.project, 'sub', 'dist')), 'sub/dist'),
      'sub/dist',
    ],
  ])('refuses %s, even with --force, and changes nothing', async (_name, layout, link) => {
    const h = await hostile();
    const target = join(h.project, await layout(h));
    const before = await h.snapshot();
    for (const force of [false, true]) {
      await expect(replaceDirectory(target, writeOne('mine'), { force })).rejects.toMatchObject({
        exitCode: ExitCode.InvalidInput,
        message: expect.stringContaining(
          `refusing to write ${target}: ${join(h.project, link)} is a link that leads out of the folder it lies in`,
        ) as string,
      });
    }
    expect(await h.snapshot()).toEqual(before);
    expect(await readFile(join(h.outside, 'prewarm-cluster.k8s.yaml'), 'utf8')).toBe('theirs');
    await rm(h.root, { recursive: true });
  });

  it('follows a link out when the invoker asks for it (followLinks)', async () => {
    const h = await hostile();
    await symlink(h.outside, join(h.project, 'dist'));
    await replaceDirectory(join(h.project, 'dist'), writeOne('mine'), { followLinks: true });
    expect(await readFile(join(h.outside, 'prewarm-cluster.k8s.yaml'), 'utf8')).toBe('mine');
    expect((await lstat(join(h.project, 'dist'))).isSymbolicLink()).toBe(true);
    await rm(h.root, { recursive: true });
  });

  it('follows a link into a sibling inside the folder it lies in', async () => {
    const h = await hostile();
    await mkdir(join(h.project, 'build'));
    await symlink('build/out', join(h.project, 'dist'));
    await replaceDirectory(join(h.project, 'dist'), writeOne('mine'));
    expect(await readFile(join(h.project, 'build', 'out', 'prewarm-cluster.k8s.yaml'), 'utf8')).toBe('mine');
    await rm(h.root, { recursive: true });
  });

  it('never writes or deletes through a link inside the output folder', async () => {
    const h = await hostile();
    const out = join(h.project, 'dist');
    await replaceDirectory(out, writeOne('old'));
    await symlink(join(h.root, 'passwd'), join(out, 'prewarm-ns-x.k8s.yaml'));
    await writeFile(join(out, OUTPUT_MARKER), `# marker\nprewarm-cluster.k8s.yaml\nprewarm-ns-x.k8s.yaml\n`);
    await expect(replaceDirectory(out, writeOne('new'))).rejects.toMatchObject({
      exitCode: ExitCode.InvalidInput,
      message: expect.stringContaining('it holds prewarm-ns-x.k8s.yaml') as string,
    });
    await replaceDirectory(
      out,
      async (dir) => {
        await writeOne('new')(dir);
        await writeFile(join(dir, 'prewarm-ns-x.k8s.yaml'), 'ours');
      },
      { force: true },
    );
    expect(await readFile(join(h.root, 'passwd'), 'utf8')).toBe('root:x:0:0\n');
    expect((await lstat(join(out, 'prewarm-ns-x.k8s.yaml'))).isFile()).toBe(true);
    expect(await readFile(join(out, 'prewarm-ns-x.k8s.yaml'), 'utf8')).toBe('ours');
    await rm(h.root, { recursive: true });
  });
});

/** Runs replaceDirectory in a child process whose write never ends; resolves once it is writing. */
function writingChild(target: string): { child: ChildProcess; exit: Promise<number | null>; ready: Promise<void> } {
  const script = `
    const { replaceDirectory } = await import(${JSON.stringify(pathToFileURL(join(process.cwd(), 'src/cli/output.ts')).href)});
    const { writeFile } = await import('node:fs/promises');
    await replaceDirectory(${JSON.stringify(target)}, async (dir) => {
      await writeFile(dir + '/prewarm-cluster.k8s.yaml', 'half');
      process.stdout.write('writing\\n');
      await new Promise(() => setInterval(() => {}, 1000));
    });`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const ready = new Promise<void>((res, rej) => {
    child.stdout?.on('data', (d: Buffer) => (d.toString().includes('writing') ? res() : undefined));
    child.once('exit', () => rej(new Error('child ended before writing')));
  });
  const exit = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  return { child, exit, ready };
}

describe('replaceDirectory on SIGINT and SIGTERM', () => {
  it.each<[NodeJS.Signals, number]>([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ])(
    'on %s removes its temporary folder, keeps the old output and exits %i',
    async (signal, code) => {
      const root = await workdir();
      const out = join(root, 'out');
      await replaceDirectory(out, writeOne('old'));
      const run = writingChild(out);
      await run.ready;
      expect((await readdir(root)).some((n) => n.startsWith('.out.tmp-'))).toBe(true);
      run.child.kill(signal);
      expect(await run.exit).toBe(code);
      expect(await readdir(root)).toEqual(['out']);
      expect(await readFile(join(out, 'prewarm-cluster.k8s.yaml'), 'utf8')).toBe('old');
      await rm(root, { recursive: true });
    },
    60_000,
  );
});

describe('replaceDirectory on a read-only file system', () => {
  it('reports EROFS, not ENOENT, for a new folder below a missing one', async () => {
    const root = await workdir();
    await mkdir(join(root, 'ro'));
    const target = join(root, 'ro', 'nested', 'out');
    const script = `
      const { replaceDirectory } = await import(${JSON.stringify(pathToFileURL(join(process.cwd(), 'src/cli/output.ts')).href)});
      try { await replaceDirectory(${JSON.stringify(target)}, () => {}); } catch (err) { process.stdout.write(err.message); }`;
    // A private mount namespace (as an unprivileged user, with a user namespace) holds a read-only tmpfs that no one else sees.
    const args = ['-rm', 'sh', '-c', 'mount -t tmpfs -o ro tmpfs "$0" && exec "$@"', join(root, 'ro'), process.execPath];
    const r = await execFileP('unshare', [...args, '--import', 'tsx', '--input-type=module', '-e', script]).catch((err: unknown) => {
      throw new Error(`this test needs unshare (util-linux) and user namespaces: ${(err as Error).message}`);
    });
    expect(r.stdout).toBe(`cannot write ${target}: read-only file system (EROFS)`);
    await rm(root, { recursive: true });
  }, 60_000);
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
