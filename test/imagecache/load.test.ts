import { execFileSync } from 'node:child_process';
import { mkdtemp, mkdir, symlink, truncate, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SpecError, type Diagnostic } from '../../src/imagecache/errors.js';
import { loadBundle, readSources } from '../../src/imagecache/load.js';
import { MAX_SPEC_FILE_BYTES } from '../../src/files/read.js';
import { renderLock } from '../../src/imagecache/sizes.js';
import { pullerLanes } from '../../src/synth/lanes.js';

const doc = (name: string) =>
  `apiVersion: kubefledged.io/v1alpha2\nkind: ImageCache\nmetadata: {name: ${name}, namespace: ns}\nspec:\n  cacheSpec:\n  - images: [redis:7]\n`;

/** What a file outside the roots holds: it would be quoted in full by an error if it were ever read. */
const SECRET = 'SECRET-TOKEN-do-not-print';
const OUTSIDE =
  'is a link whose target is outside the spec roots; not read (links are followed only within the files and folders named on the command line)';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A spec root with one valid file, and a folder beside it (outside the root) holding a secret. */
async function layout() {
  const base = await mkdtemp(join(tmpdir(), 'prewarm-load-'));
  const root = join(base, 'specs');
  const outside = join(base, 'outside');
  await mkdir(join(root, 'sub'), { recursive: true });
  await mkdir(outside);
  await writeFile(join(root, 'a.yaml'), doc('a'));
  await writeFile(join(root, 'sub', 'shared.yaml'), doc('shared'));
  await writeFile(join(outside, 'secret.yaml'), `apiVersion: ${SECRET}\n`);
  await writeFile(join(outside, 'valid.yaml'), doc('outside'));
  return { base, root, outside };
}

async function listen(path: string): Promise<void> {
  const server = createServer();
  servers.push(server);
  await new Promise<void>((r) => server.listen(path, r));
}

/**
 * The bound on reads that must never block (a FIFO, a device, a sparse file far over the limit):
 * the test's own timeout, so a read that blocks fails the test rather than an assertion on wall time.
 */
const BOUNDED_MS = 10_000;

/** Reads `paths`; each problem as [file relative to the root, message]. */
async function readAll(root: string, paths: readonly string[]) {
  const diagnostics: Diagnostic[] = [];
  const files = await readSources(paths, diagnostics);
  return {
    files: files.map((f) => relative(root, f.path)),
    texts: files.map((f) => f.text).join('\n'),
    problems: diagnostics.map((d) => [relative(root, d.file), d.message] as const),
  };
}

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

  it('never reads excluded folders, such as the output folder inside a spec folder', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-load-'));
    await mkdir(join(dir, 'dist'));
    await writeFile(join(dir, 'a.yaml'), doc('a'));
    await writeFile(join(dir, 'dist', 'out.k8s.yaml'), 'apiVersion: prewarm.dev/v1\nkind: DaemonSet\n');
    expect((await loadBundle([dir], { exclude: [join(dir, 'dist')] })).imageCaches).toBe(1);
    await expect(loadBundle([dir])).rejects.toThrow('unsupported apiVersion "prewarm.dev/v1"');
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

describe('readSources: links stay inside the spec roots, only regular files are read', () => {
  type Case = [name: string, setup: (l: Awaited<ReturnType<typeof layout>>) => Promise<void>, problems: [string, string | RegExp][]];
  const cases: Case[] = [
    [
      'a link to a file inside the root is read',
      async ({ root }) => symlink(join(root, 'sub', 'shared.yaml'), join(root, 'link.yaml')),
      [],
    ],
    ['a relative link inside the root is read', async ({ root }) => symlink('../a.yaml', join(root, 'sub', 'up.yaml')), []],
    [
      'a link to a file outside the root is refused',
      async ({ root, outside }) => symlink(join(outside, 'secret.yaml'), join(root, 'env.yaml')),
      [['env.yaml', OUTSIDE]],
    ],
    [
      'a relative link out of the root is refused',
      async ({ root }) => symlink('../../outside/valid.yaml', join(root, 'sub', 'out.yaml')),
      [['sub/out.yaml', OUTSIDE]],
    ],
    ['a link to /etc/passwd is refused', async ({ root }) => symlink('/etc/passwd', join(root, 'passwd.yaml')), [['passwd.yaml', OUTSIDE]]],
    [
      'a link to /proc/self/environ is refused',
      async ({ root }) => symlink('/proc/self/environ', join(root, 'env.yaml')),
      [['env.yaml', OUTSIDE]],
    ],
    ['a link to /dev/zero is refused', async ({ root }) => symlink('/dev/zero', join(root, 'zero.yaml')), [['zero.yaml', OUTSIDE]]],
    [
      'a link inside the root that leads on to a file outside is refused',
      async ({ root, outside }) => {
        await symlink(join(outside, 'valid.yaml'), join(root, 'hop1'));
        await symlink(join(root, 'hop1'), join(root, 'hop2.yaml'));
      },
      [['hop2.yaml', OUTSIDE]],
    ],
    [
      'a dangling link inside the root',
      async ({ root }) => symlink(join(root, 'gone.yaml'), join(root, 'dangling.yaml')),
      [['dangling.yaml', 'cannot read: ENOENT (a link whose target does not exist)']],
    ],
    [
      'a dangling link out of the root says only that it leaves the root',
      async ({ root, outside }) => symlink(join(outside, 'gone.yaml'), join(root, 'd.yaml')),
      [['d.yaml', OUTSIDE]],
    ],
    [
      'a loop of links',
      async ({ root }) => {
        await symlink(join(root, 'l2.yaml'), join(root, 'l1.yaml'));
        await symlink(join(root, 'l1.yaml'), join(root, 'l2.yaml'));
      },
      [
        ['l1.yaml', 'cannot read: ELOOP (a loop of links)'],
        ['l2.yaml', 'cannot read: ELOOP (a loop of links)'],
      ],
    ],
    [
      'a link with a YAML name to a folder',
      async ({ root }) => symlink(root, join(root, 'loop.yaml')),
      [['loop.yaml', /^is a link to a folder; links to folders are not followed/]],
    ],
    ['a link to a folder without a YAML name is not walked', async ({ root, outside }) => symlink(outside, join(root, 'vendor')), []],
    [
      'a FIFO',
      ({ root }) => (execFileSync('mkfifo', [join(root, 'pipe.yaml')]), Promise.resolve()),
      [['pipe.yaml', 'is a FIFO (named pipe), not a regular file; only regular files are read']],
    ],
    [
      'a link to a FIFO inside the root',
      async ({ root }) => {
        execFileSync('mkfifo', [join(root, 'sub', 'pipe')]);
        await symlink(join(root, 'sub', 'pipe'), join(root, 'p.yaml'));
      },
      [['p.yaml', 'is a FIFO (named pipe), not a regular file; only regular files are read']],
    ],
    [
      'a socket',
      async ({ root }) => listen(join(root, 'sock.yaml')),
      [['sock.yaml', 'is a socket, not a regular file; only regular files are read']],
    ],
  ];

  it.each(cases)(
    '%s',
    async (_name, setup, problems) => {
      const l = await layout();
      await setup(l);
      const r = await readAll(l.root, [l.root]);
      expect(r.problems).toEqual(
        problems.map(([file, message]) => [file, typeof message === 'string' ? message : expect.stringMatching(message)]),
      );
      expect(r.files).toEqual(expect.arrayContaining(['a.yaml', 'sub/shared.yaml']));
      expect(r.texts.match(/name: (a|shared),/g)?.length).toBe(2);
      expect(r.texts).not.toContain(SECRET);
      expect(r.texts).not.toContain('name: outside');
      for (const [, message] of r.problems) expect(message).not.toContain(l.outside);
    },
    BOUNDED_MS,
  );

  type Named = [name: string, path: (l: Awaited<ReturnType<typeof layout>>) => Promise<string>, problem: string];
  const named: Named[] = [
    [
      '/dev/zero named directly fails at once',
      () => Promise.resolve('/dev/zero'),
      'is a character device, not a regular file; only regular files are read',
    ],
    [
      '/proc/self/environ named directly is not read',
      () => Promise.resolve('/proc/self/environ'),
      'is not a plain file on disk (its content does not match its size, as with /proc and /sys files, or it changed while being read); not read',
    ],
    [
      'a FIFO named directly does not block',
      ({ root }) => {
        execFileSync('mkfifo', [join(root, 'p.yaml')]);
        return Promise.resolve(join(root, 'p.yaml'));
      },
      'is a FIFO (named pipe), not a regular file; only regular files are read',
    ],
    [
      'a link named directly is checked against its own place, not its target',
      async ({ base, outside }) => {
        await symlink(join(outside, 'secret.yaml'), join(base, 'env.yaml'));
        return join(base, 'env.yaml');
      },
      OUTSIDE,
    ],
  ];

  it.each(named)(
    '%s',
    async (_name, path, problem) => {
      const l = await layout();
      const target = await path(l);
      const r = await readAll(l.base, [target]);
      expect(r.files).toEqual([]);
      expect(r.problems.map(([, m]) => m)).toEqual([problem]);
    },
    BOUNDED_MS,
  );

  it('follows links between files that are all named, and links inside a root given through a link', async () => {
    const l = await layout();
    await symlink(join(l.root, 'a.yaml'), join(l.root, 'sub', 'to-a.yaml'));
    await symlink(l.root, join(l.base, 'specs-link'));
    const r = await readAll(l.base, [join(l.base, 'specs-link')]);
    expect(r.problems).toEqual([]);
    // to-a.yaml and a.yaml are one file: read once.
    expect(r.files).toEqual(['specs-link/a.yaml', 'specs-link/sub/shared.yaml']);
    const named = await readAll(l.root, [join(l.root, 'sub', 'to-a.yaml'), join(l.root, 'a.yaml')]);
    expect(named).toMatchObject({ problems: [], files: ['a.yaml'] });
  });
});

describe('readSources: the size limit per file', () => {
  it('states the limit: 4 MiB, well above the 1.5 MiB the apiserver takes per object', () => {
    expect(MAX_SPEC_FILE_BYTES).toBe(4 * 1024 * 1024);
  });

  it.each([
    ['exactly the limit is read', MAX_SPEC_FILE_BYTES, undefined],
    [
      'one byte over is refused',
      MAX_SPEC_FILE_BYTES + 1,
      'is 4.0 MiB (4194305 bytes), over the limit of 4.0 MiB (4194304 bytes) per spec file; not read',
    ],
    [
      '70 MB is refused without reading it',
      70 * 1024 * 1024,
      'is 70.0 MiB (73400320 bytes), over the limit of 4.0 MiB (4194304 bytes) per spec file; not read',
    ],
  ])(
    '%s',
    async (_name, bytes, problem) => {
      const dir = await mkdtemp(join(tmpdir(), 'prewarm-load-size-'));
      const file = join(dir, 'big.yaml');
      if (bytes > MAX_SPEC_FILE_BYTES) {
        // Sparse: the size is real, but nothing needs writing; a bounded reader never notices.
        await writeFile(file, doc('big'));
        await truncate(file, bytes);
      } else {
        const head = doc('big');
        await writeFile(file, head + '#'.repeat(bytes - head.length - 1) + '\n');
      }
      const diagnostics: Diagnostic[] = [];
      const files = await readSources([dir], diagnostics);
      expect(diagnostics.map((d) => [d.file, d.message])).toEqual(problem === undefined ? [] : [[file, problem]]);
      expect(files.map((f) => f.text.length)).toEqual(problem === undefined ? [bytes] : []);
    },
    BOUNDED_MS,
  );
});

describe('loadBundle: Helm charts', () => {
  it('counts the templates of a chart (a folder with Chart.yaml) without reading them; a templates/ folder elsewhere is read', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-load-helm-'));
    await mkdir(join(dir, 'chart', 'templates', 'tests'), { recursive: true });
    await writeFile(join(dir, 'a.yaml'), doc('a'));
    await writeFile(join(dir, 'chart', 'Chart.yaml'), 'apiVersion: v2\nname: c\nversion: 1.0.0\n');
    await writeFile(join(dir, 'chart', 'values.yaml'), 'replicaCount: 1\n');
    const template = '{{- if .Values.x }}\napiVersion: v1\nkind: ServiceAccount\n{{- end }}\n';
    await writeFile(join(dir, 'chart', 'templates', 'sa.yaml'), template);
    await writeFile(join(dir, 'chart', 'templates', 'tests', 't.yaml'), template);
    await writeFile(join(dir, 'chart', 'templates', 'NOTES.txt'), 'not yaml');
    const result = await loadBundle([dir]);
    expect(result.skipped).toEqual({ documents: 2, files: 2, outputDocuments: 0, outputFiles: 0, helmTemplates: 2 });

    await mkdir(join(dir, 'templates'));
    await writeFile(join(dir, 'templates', 'x.yaml'), template);
    const err = await loadBundle([dir]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SpecError);
    expect((err as SpecError).diagnostics.every((d) => d.file === join(dir, 'templates', 'x.yaml'))).toBe(true);
    expect((err as SpecError).skipped).toEqual({ documents: 2, files: 2, outputDocuments: 0, outputFiles: 0, helmTemplates: 2 });
  });
});

describe('loadBundle: encodings and files named twice', () => {
  const text = doc('a').replace('redis:7', 'Redis:7');
  const utf16be = (s: string) => Buffer.from(s, 'utf16le').swap16();
  it.each([
    [
      'UTF-16 LE with a byte order mark',
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]),
      'file is UTF-16; save it as UTF-8',
    ],
    ['UTF-16 BE with a byte order mark', Buffer.concat([Buffer.from([0xfe, 0xff]), utf16be(text)]), 'file is UTF-16; save it as UTF-8'],
    ['UTF-16 LE without one (NULs between the bytes)', Buffer.from(text, 'utf16le'), 'file is UTF-16; save it as UTF-8'],
    ['UTF-16 BE without one', utf16be(text), 'file is UTF-16; save it as UTF-8'],
    [
      'UTF-32 LE',
      Buffer.concat([Buffer.from([0xff, 0xfe, 0, 0]), Buffer.from([...Buffer.from(text)].flatMap((b) => [b, 0, 0, 0]))]),
      'file is UTF-32; save it as UTF-8',
    ],
    [
      'UTF-8 with a byte order mark: read, positions as without it',
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]),
      'f.yaml:6:14: invalid image reference "Redis:7": repository name "Redis" must be lowercase',
    ],
    ['UTF-8 without one', Buffer.from(text), 'f.yaml:6:14: invalid image reference "Redis:7": repository name "Redis" must be lowercase'],
  ])('%s', async (_name, bytes, message) => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-load-enc-'));
    await writeFile(join(dir, 'f.yaml'), bytes);
    const err = await loadBundle([dir]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SpecError);
    expect(
      (err as SpecError).diagnostics.map((d) => (d.line > 0 ? `${relative(dir, d.file)}:${d.line}:${d.column}: ${d.message}` : d.message)),
    ).toEqual([message]);
  });

  it.each([
    ['by a relative and an absolute path', (dir: string) => [relative(process.cwd(), join(dir, 'a.yaml')), join(dir, 'a.yaml')]],
    ['twice', (dir: string) => [join(dir, 'a.yaml'), join(dir, 'a.yaml')]],
    ['through its folder and directly', (dir: string) => [join(dir, 'a.yaml'), dir]],
    ['through a folder spelled two ways', (dir: string) => [dir, `${dir}/./`, relative(process.cwd(), dir)]],
  ])('a file named %s is read once, not reported as a duplicate ImageCache', async (_name, paths) => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-load-twice-'));
    await writeFile(join(dir, 'a.yaml'), doc('a'));
    const result = await loadBundle(paths(dir));
    expect(result.imageCaches).toBe(1);
    expect(result.warnings).toEqual([]);
  });
});

describe('loadBundle and the lock file', () => {
  const D = (c: string) => `sha256:${c.repeat(64)}`;
  const spec = (images: string[]) =>
    `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: ml, namespace: ml}\nspec:\n  lanes: 3\n  cacheSpec:\n  - images: [${images.join(', ')}]\n`;
  const names = ['vllm', 'triton', 'torch', 'tool-a', 'tool-b'];
  const sizes = [192, 128, 32, 8, 8];

  it('reads the sizes of a folder root into the bundle, which splits the pool by bytes; none without a lock', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-lock-'));
    await writeFile(join(dir, 'ml.yaml'), spec(names.map((n, i) => `registry.example/ml/${n}:1@${D(String(i))}`)));
    const bare = await loadBundle([dir]);
    expect(bare.bundle.imageBytes).toBeUndefined();
    expect(bare.lockFiles).toEqual([]);
    await writeFile(
      join(dir, 'prewarm.lock'),
      renderLock(
        'linux/amd64',
        names.map((n, i) => ({ image: `registry.example/ml/${n}:1`, digest: D(String(i)), compressed: (sizes[i] ?? 0) << 20 })),
      ),
    );
    const sized = await loadBundle([dir]);
    expect(sized.lockFiles).toEqual([join(dir, 'prewarm.lock')]);
    expect(sized.unsized).toEqual([]);
    const pool = sized.bundle.pools[0];
    const lanes = pullerLanes(pool?.images ?? [], 3, sized.bundle.imageBytes);
    expect(lanes.map((l) => (l.bytes ?? 0) >> 20).sort((a, b) => a - b)).toEqual([48, 128, 192]);
    // A named file finds the lock beside it too.
    expect((await loadBundle([join(dir, 'ml.yaml')])).lockFiles).toEqual([join(dir, 'prewarm.lock')]);
  });

  it('lists images whose size is missing, and refuses a lock that is a link out of the roots', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-lock-'));
    await writeFile(join(dir, 'ml.yaml'), spec([`registry.example/ml/a:1@${D('1')}`, 'registry.example/ml/b:1']));
    await writeFile(
      join(dir, 'prewarm.lock'),
      renderLock('linux/amd64', [{ image: 'registry.example/ml/a:1', digest: D('1'), compressed: 5 }]),
    );
    const r = await loadBundle([dir]);
    expect(r.unsized.map((u) => `${u.image} ${u.problem} ${u.pools.join(',')}`)).toEqual(['registry.example/ml/b:1 unpinned all-8ad5bcb8']);
    const other = await mkdtemp(join(tmpdir(), 'prewarm-lock-outside-'));
    await writeFile(join(other, 'secret'), SECRET);
    const linked = await mkdtemp(join(tmpdir(), 'prewarm-lock-'));
    await writeFile(join(linked, 'ml.yaml'), spec(['registry.example/ml/a:1']));
    await symlink(join(other, 'secret'), join(linked, 'prewarm.lock'));
    const err = await loadBundle([linked]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SpecError);
    const text = (err as SpecError).diagnostics.map((d) => d.message).join('\n');
    expect(text).toContain('outside the spec roots');
    expect(text).not.toContain(SECRET);
  });
});
