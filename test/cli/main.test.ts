import { cli } from '../helpers.js';
import { execFile } from 'node:child_process';
import { chmod, lstat, mkdtemp, readdir, readFile, stat, writeFile, mkdir, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { CliError, ExitCode, UsageError } from '../../src/cli/exit-codes.js';
import { reportFailure, withOperands } from '../../src/cli/main.js';
import { OUTPUT_MARKER } from '../../src/cli/output-marker.js';

const exec = promisify(execFile);

async function specDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'prewarm-cli-'));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

/** Every path under `root` with its kind and content, to prove a refused run changed nothing. */
async function tree(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await readdir(root, { withFileTypes: true, recursive: true })) {
    const path = join(e.parentPath, e.name);
    out[path] = e.isSymbolicLink() ? 'link' : e.isDirectory() ? 'dir' : await readFile(path, 'utf8');
  }
  return out;
}

const good = `apiVersion: kubefledged.io/v1alpha2
kind: ImageCache
metadata: {name: c, namespace: ns}
spec:
  cacheSpec:
  - images: [redis:7, busybox]
`;
const bad = good.replace('redis:7', 'Redis:7');
/** Valid and without warnings, so stderr holds only what a test looks for. */
const quiet = good.replace('busybox', 'busybox:1');

describe('prewarm CLI', () => {
  it('--stdout prints one YAML stream of manifests and nothing else; warnings go to stderr', async () => {
    const dir = await specDir({ 'a.yaml': good });
    const r = await cli('synth', dir, '--stdout');
    expect(r.code).toBe(ExitCode.Success);
    const docs = parseAllDocuments(r.stdout);
    expect(docs.every((d) => d.errors.length === 0)).toBe(true);
    const kinds = docs.map((d) => d.get('kind'));
    expect(kinds[0]).toBe('Namespace');
    // The namespace's ConfigMap and the fail-safe's Deployment, then its DaemonSets: the holder and
    // the default lanes' pullers.
    const firstDaemonSet = kinds.indexOf('DaemonSet');
    expect(kinds.slice(firstDaemonSet - 2, firstDaemonSet)).toEqual(['ConfigMap', 'Deployment']);
    expect(kinds.slice(firstDaemonSet).every((k) => k === 'DaemonSet')).toBe(true);
    expect(kinds).toContain('ValidatingAdmissionPolicy');
    expect(r.stdout.split('\n').filter((l) => l === '---')).toHaveLength(kinds.length - 1);
    expect(r.stderr).toContain('warning:');
    expect(r.stdout).not.toContain('warning');
  });

  it('exits 1 on an invalid spec, naming file, line and field, and writes nothing', async () => {
    const dir = await specDir({ 'a.yaml': bad });
    const out = join(dir, 'out');
    const r = await cli('synth', dir, '-o', out);
    expect(r.code).toBe(ExitCode.InvalidInput);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(
      `${join(dir, 'a.yaml')}:6:14: error: document 1: spec.cacheSpec[0].images[0]: invalid image reference "Redis:7"`,
    );
    expect(await readdir(dir)).toEqual(['a.yaml']);
  });

  it('leaves the previous output untouched when a synth fails, and replaces it whole when one succeeds', async () => {
    const dir = await specDir({ 'a.yaml': good });
    const out = join(dir, 'out');
    expect((await cli('synth', dir, '-o', out)).code).toBe(ExitCode.Success);
    expect((await readdir(out)).sort()).toEqual([OUTPUT_MARKER, 'prewarm-cluster.k8s.yaml', 'prewarm-ns-ns.k8s.yaml']);
    const before = await readFile(join(out, 'prewarm-ns-ns.k8s.yaml'), 'utf8');

    await writeFile(join(dir, 'a.yaml'), bad);
    expect((await cli('synth', dir, '-o', out)).code).toBe(ExitCode.InvalidInput);
    expect(await readFile(join(out, 'prewarm-ns-ns.k8s.yaml'), 'utf8')).toBe(before);

    await writeFile(join(dir, 'a.yaml'), good.replace('namespace: ns', 'namespace: other'));
    expect((await cli('synth', dir, '-o', out)).code).toBe(ExitCode.Success);
    expect((await readdir(out)).sort()).toEqual([OUTPUT_MARKER, 'prewarm-cluster.k8s.yaml', 'prewarm-ns-other.k8s.yaml']);
    expect((await readdir(dir)).sort()).toEqual(['a.yaml', 'out']);
  });

  /** A folder `root` holding `specs/a.yaml` (the input) and whatever `setup` adds; returns the target. */
  type Layout = (root: string) => Promise<string>;
  const mkfile = async (path: string, text = 'mine\n') => {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, text);
  };
  it.each<[string, Layout, string[], string]>([
    [
      '-o DIR holding a README (as -o . would)',
      async (r) => (await mkfile(join(r, 'here', 'README.md')), join(r, 'here')),
      [],
      'it holds README.md, which prewarm did not write',
    ],
    [
      '-o deploy holding a kustomization.yaml',
      async (r) => (await mkfile(join(r, 'deploy', 'kustomization.yaml')), join(r, 'deploy')),
      [],
      'it holds kustomization.yaml, which prewarm did not write',
    ],
    [
      'an earlier output with a file added by hand',
      async (r) => (
        await mkfile(join(r, 'out', 'prewarm-cluster.k8s.yaml')),
        await mkfile(join(r, 'out', 'stale.k8s.yaml')),
        join(r, 'out')
      ),
      [],
      'it holds stale.k8s.yaml',
    ],
    [
      'many files, listed in part',
      async (r) => {
        for (const n of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) await mkfile(join(r, 'many', n));
        return join(r, 'many');
      },
      [],
      'it holds a, b, c, d, e and 2 more',
    ],
    ['-o notes.txt, a file', async (r) => (await mkfile(join(r, 'notes.txt')), join(r, 'notes.txt')), [], 'it is a file, not a folder'],
    [
      '-o notes.txt, a file, even with --force',
      async (r) => (await mkfile(join(r, 'notes.txt')), join(r, 'notes.txt')),
      ['--force'],
      'it is a file, not a folder',
    ],
    ['-o specs, the input', (r) => Promise.resolve(join(r, 'specs')), [], 'it is the input'],
    ['-o specs, the input, even with --force', (r) => Promise.resolve(join(r, 'specs')), ['--force'], 'it is the input'],
    [
      '-o a link to the input',
      async (r) => (await symlink(join(r, 'specs'), join(r, 'link')), join(r, 'link')),
      ['--force'],
      'it is the input',
    ],
    ['-o ROOT, which holds the input', (r) => Promise.resolve(r), ['--force'], 'it holds the input'],
  ])('refuses %s with exit 1, naming what is in the way, and changes nothing', async (_name, layout, flags, message) => {
    const root = await specDir({});
    await mkfile(join(root, 'specs', 'a.yaml'), good);
    const target = await layout(root);
    const before = await tree(root);
    const r = await cli('synth', join(root, 'specs'), '-o', target, ...flags);
    expect(r.code, r.stderr).toBe(ExitCode.InvalidInput);
    expect(r.stderr).toContain(`refusing to write ${target}: ${message}`);
    expect(await tree(root)).toEqual(before);
  });

  it('refuses a target that holds an input file, even with --force', async () => {
    const root = await specDir({});
    await mkdir(join(root, 'out'));
    await writeFile(join(root, 'out', 'a.yaml'), good);
    const r = await cli('synth', join(root, 'out', 'a.yaml'), '-o', join(root, 'out'), '--force');
    expect(r.code).toBe(ExitCode.InvalidInput);
    expect(r.stderr).toContain(`it holds the input ${join(root, 'out', 'a.yaml')}`);
    expect(await readdir(join(root, 'out'))).toEqual(['a.yaml']);
  });

  it('--force replaces a folder whatever it holds; an empty folder needs no --force', async () => {
    const root = await specDir({ 'a.yaml': good });
    await mkdir(join(root, 'deploy'));
    await writeFile(join(root, 'deploy', 'kustomization.yaml'), 'resources: []\n');
    await mkdir(join(root, 'empty'));
    expect((await cli('synth', join(root, 'a.yaml'), '-o', join(root, 'empty'))).code).toBe(ExitCode.Success);
    expect((await cli('synth', join(root, 'a.yaml'), '-o', join(root, 'deploy'))).code).toBe(ExitCode.InvalidInput);
    const r = await cli('synth', join(root, 'a.yaml'), '-o', join(root, 'deploy'), '--force');
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    expect((await readdir(join(root, 'deploy'))).sort()).toEqual([OUTPUT_MARKER, 'prewarm-cluster.k8s.yaml', 'prewarm-ns-ns.k8s.yaml']);
  });

  it('the real executable refuses -o . in a folder with a README', async () => {
    const dir = await specDir({ 'README.md': 'mine\n' });
    const specs = await specDir({ 'a.yaml': good });
    const bin = join(process.cwd(), 'src/cli/bin.ts');
    const tsx = pathToFileURL(join(process.cwd(), 'node_modules/tsx/dist/loader.mjs')).href;
    const err = await exec(process.execPath, ['--import', tsx, bin, 'synth', specs, '-o', '.'], { cwd: dir }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 1, stdout: '' });
    expect((err as { stderr: string }).stderr).toContain('refusing to write .: it holds README.md, which prewarm did not write');
    expect(await readdir(dir)).toEqual(['README.md']);
  }, 60_000);

  it('exits 1 when there is no ImageCache at all, rather than printing nothing', async () => {
    const dir = await specDir({ 'empty.yaml': '# nothing here\n' });
    const r = await cli('synth', dir, '--stdout');
    expect(r.code).toBe(ExitCode.InvalidInput);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('no ImageCache found');
  });

  it.each([
    [[], 'name a command'],
    [['synth'], 'Not enough non-option arguments'],
    [['synth', 'x', '--stdout', '-o', 'y'], 'mutually exclusive'],
    [['synth', 'x', '--frobnicate'], 'Unknown argument: frobnicate'],
    [['frobnicate'], 'unknown command "frobnicate"; the commands are synth, validate, migrate, status, pin, doctor, specs, discover'],
    [['doctr', '--help'], 'unknown command "doctr"'],
    [['--help', 'doctr'], 'unknown command "doctr"'],
    [['-h', 'doctr', 'x'], 'unknown command "doctr"'],
    [['doctr', '--version'], 'unknown command "doctr"'],
  ])('exits 2 on usage errors: %j', async (argv, message) => {
    const r = await cli(...argv);
    expect(r.code).toBe(ExitCode.Usage);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(message);
  });

  const label = 'it must be a lowercase RFC 1123 label';
  it.each<[string[], string]>([
    [['synth', 'DIR', '-n', 'Bad NS', '--stdout'], `--namespace "Bad NS" is not a valid namespace: ${label}`],
    [['synth', 'DIR', '-n', 'Bad NS', '--no-reconciler', '--stdout'], `--namespace "Bad NS" is not a valid namespace: ${label}`],
    [['synth', 'DIR', '--namespace', '', '-o', 'OUT'], `--namespace "" is not a valid namespace: ${label}`],
    [
      ['synth', 'DIR', '-n', 'x'.repeat(64), '--stdout'],
      `--namespace "${'x'.repeat(64)}" is not a valid namespace: it must be no more than 63 characters`,
    ],
    [['synth', 'DIR', '-n', 'a', '-n', 'b', '--stdout'], '--namespace is given more than once'],
    [['validate', 'DIR', '-n', 'UPPER'], '--namespace "UPPER" is not a valid namespace'],
    [['status', '-n', 'a_b'], '--namespace "a_b" is not a valid namespace'],
    [
      ['synth', 'DIR', '--reconciler-image', '', '--stdout'],
      '--reconciler-image "" is not a valid image reference: image reference is empty',
    ],
    [
      ['synth', 'DIR', '--reconciler-image', 'ghcr.io/Me/x:1', '--stdout'],
      '--reconciler-image "ghcr.io/Me/x:1" is not a valid image reference: repository name "Me/x" must be lowercase',
    ],
    [
      ['synth', 'DIR', '--reconciler-image', 'r/x:', '--no-reconciler', '--stdout'],
      '--reconciler-image "r/x:" is not a valid image reference: tag is empty',
    ],
    [['synth', 'DIR', '-o', ''], '--output "" is empty: name a path'],
    [['pin', 'DIR', '--plain-http', 'not a host'], '--plain-http "not a host" is not a registry host[:port]'],
    [['pin', 'DIR', '--plain-http', 'ok:5000', '--plain-http', 'x:port'], '--plain-http "x:port" is not a registry host[:port]'],
    [['pin', 'DIR', '--docker-config', ''], '--docker-config "" is empty: name a path'],
    [['synth', ''], 'path "" is empty: name a path'],
    [['synth', 'DIR', '', '--stdout'], 'path "" is empty: name a path'],
    [['validate', ''], 'path "" is empty: name a path'],
    [['specs', ''], 'path "" is empty: name a path'],
    [['migrate', ''], 'path "" is empty: name a path'],
    [['synth', '-'], '"-" (standard input) is not supported: name spec files or folders'],
    [['validate', 'DIR', '-'], '"-" (standard input) is not supported: name spec files or folders'],
  ])('validates option values like spec values: %j exits 2 and writes nothing', async (argv, message) => {
    const dir = await specDir({ 'a.yaml': good });
    const out = join(dir, 'out');
    const r = await cli(...argv.map((a) => (a === 'DIR' ? dir : a === 'OUT' ? out : a)));
    expect(r.code, r.stderr).toBe(ExitCode.Usage);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`prewarm: ${message}`);
    expect(await readdir(dir)).toEqual(['a.yaml']);
  });

  it('takes valid option values', async () => {
    const dir = await specDir({ 'a.yaml': good.replace(', namespace: ns', '') });
    const r = await cli('synth', dir, '-n', 'team-a', '--reconciler-image', 'reg.example:5000/me/reconciler:1', '--stdout');
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    expect(r.stdout).toContain('namespace: team-a');
    expect(r.stdout).toContain('image: reg.example:5000/me/reconciler:1');
  });

  it('validate reports a summary on stderr and exits 0', async () => {
    const dir = await specDir({ 'a.yaml': good });
    const r = await cli('validate', dir);
    expect(r).toMatchObject({ code: ExitCode.Success, stdout: '' });
    expect(r.stderr).toContain('ok: 1 ImageCaches, 1 pools, 2 images');
  });

  it('--no-reconciler omits the sidecar', async () => {
    const dir = await specDir({ 'a.yaml': good });
    const r = await cli('synth', dir, '--stdout', '--no-reconciler');
    expect(r.stdout).not.toContain('prewarm-reconciler');
  });

  it('reads everything after `--` as a path, never as an option', async () => {
    const dir = await specDir({ 'a.yaml': quiet });
    const plain = await cli('synth', dir, '--stdout');
    expect(await cli('synth', '--stdout', '--', dir)).toEqual({ ...plain, ms: expect.any(Number) as number });
    expect((await cli('validate', '--', dir)).code).toBe(ExitCode.Success);
    const smuggled = await cli('synth', dir, '--stdout', '--', '--reconciler-image=evil.example/x:1', '-n', 'kube-system');
    expect(smuggled.code).toBe(ExitCode.InvalidInput);
    expect(smuggled.stdout).toBe('');
    expect(smuggled.stderr).toContain('./--reconciler-image=evil.example/x:1: error: cannot read: ENOENT');
    expect(smuggled.stderr).toContain('./-n: error: cannot read: ENOENT');
    expect(smuggled.stderr).toContain('kube-system: error: cannot read: ENOENT');
    // An option left without its value before `--` does not take the first path.
    const r = await cli('synth', '-o', '--', dir);
    expect([r.code, r.stderr]).toEqual([ExitCode.Usage, expect.stringContaining('--output "" is empty') as string]);
  });

  it.each<[string[], string[]]>([
    [
      ['synth', 'a'],
      ['synth', 'a'],
    ],
    [
      ['synth', '-n', 'x', '--', '-a', 'b'],
      ['synth', './-a', 'b', '-n', 'x'],
    ],
    [['--', 'synth'], ['synth']],
    [
      ['synth', '--', '--', '-'],
      ['synth', './--', './-'],
    ],
  ])('withOperands(%j) is %j', (argv, expected) => {
    expect(withOperands(argv)).toEqual(expected);
  });

  it.each<[string[], string]>([
    [['--help'], 'prewarm synth <paths..>'],
    [['-h'], 'prewarm synth <paths..>'],
    [['synth', '--help'], '--reconciler-image'],
    [['pin', '-h'], '--plain-http'],
  ])('prints help on stdout with exit 0: %j', async (argv, text) => {
    const r = await cli(...argv);
    expect(r.code).toBe(ExitCode.Success);
    expect(r.stdout).toContain(text);
    expect(r.stderr).toBe('');
  });

  it('the real executable sets its exit code and keeps stdout pure', async () => {
    const dir = await specDir({ 'a.yaml': bad });
    const err = await exec(process.execPath, ['--import', 'tsx', 'src/cli/bin.ts', 'synth', dir, '--stdout']).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 1, stdout: '' });
    await mkdir(join(dir, 'ok'));
    await writeFile(join(dir, 'ok', 'a.yaml'), good);
    const ok = await exec(process.execPath, ['--import', 'tsx', 'src/cli/bin.ts', 'synth', join(dir, 'ok'), '--stdout']);
    expect(ok.stdout.startsWith('apiVersion: v1\nkind: Namespace\n')).toBe(true);
  }, 60_000);
});

describe('failure reports', () => {
  const sysError = (code: string, errno: number, syscall: string, path: string) =>
    Object.assign(new Error(`${code}: ..., ${syscall} '${path}'`), { code, errno, syscall, path });
  const bug = new TypeError("Cannot read properties of undefined (reading 'x')");
  it.each<[string, unknown, boolean, ExitCode, string]>([
    ['a usage error', new UsageError('name a command'), false, ExitCode.Usage, 'prewarm: name a command\nrun "prewarm --help" for usage\n'],
    [
      'a CLI error',
      new CliError('1 error found; nothing was written', ExitCode.InvalidInput),
      false,
      ExitCode.InvalidInput,
      'prewarm: 1 error found; nothing was written\n',
    ],
    [
      'EACCES on mkdir',
      sysError('EACCES', -13, 'mkdir', '/srv/out'),
      false,
      ExitCode.Internal,
      'prewarm: cannot write /srv/out: permission denied (EACCES)\n',
    ],
    [
      'EACCES on open',
      sysError('EACCES', -13, 'open', '/srv/a.yaml'),
      false,
      ExitCode.Internal,
      'prewarm: cannot read /srv/a.yaml: permission denied (EACCES)\n',
    ],
    [
      'ENOSPC on write',
      sysError('ENOSPC', -28, 'write', '/srv/out/x'),
      false,
      ExitCode.Internal,
      'prewarm: cannot write /srv/out/x: no space left on device (ENOSPC)\n',
    ],
    [
      'EROFS on rename',
      sysError('EROFS', -30, 'rename', '/ro/out'),
      false,
      ExitCode.Internal,
      'prewarm: cannot write /ro/out: read-only file system (EROFS)\n',
    ],
    [
      'an error code without errno',
      Object.assign(new Error('x'), { code: 'EWHATEVER', syscall: 'open', path: '/x' }),
      false,
      ExitCode.Internal,
      'prewarm: cannot read /x: EWHATEVER\n',
    ],
    [
      'a bug',
      bug,
      false,
      ExitCode.Internal,
      "prewarm: internal error: Cannot read properties of undefined (reading 'x') (a bug; run with PREWARM_DEBUG=1 for the stack trace)\n",
    ],
    [
      'a thrown string',
      'boom',
      false,
      ExitCode.Internal,
      'prewarm: internal error: boom (a bug; run with PREWARM_DEBUG=1 for the stack trace)\n',
    ],
  ])('%s: one line and its exit code', (_name, err, debug, code, line) => {
    let stderr = '';
    expect(reportFailure(err, { stdout: () => undefined, stderr: (t) => (stderr += t) }, debug)).toBe(code);
    expect(stderr).toBe(line);
  });

  it('prints the stack trace of a bug only with the debug switch', () => {
    let stderr = '';
    expect(reportFailure(bug, { stdout: () => undefined, stderr: (t) => (stderr += t) }, true)).toBe(ExitCode.Internal);
    expect(stderr).toContain("prewarm: internal error: TypeError: Cannot read properties of undefined (reading 'x')\n    at ");
  });

  it.each<[string, (root: string) => Promise<string>, string]>([
    ['-o /proc/x', () => Promise.resolve('/proc/x'), 'prewarm: cannot write /proc/x: no such file or directory (ENOENT)\n'],
    ['-o /sys/x', () => Promise.resolve('/sys/x'), 'prewarm: cannot write /sys/x: operation not permitted (EPERM)\n'],
    [
      '-o below a file',
      async (root) => (await writeFile(join(root, 'notes.txt'), 'x'), join(root, 'notes.txt', 'out')),
      'prewarm: cannot write ROOT/notes.txt/out: not a directory (ENOTDIR)\n',
    ],
  ])('%s: one line, exit 70, no stack', async (_name, target, line) => {
    const root = await specDir({ 'a.yaml': quiet });
    const out = await target(root);
    const r = await cli('synth', join(root, 'a.yaml'), '-o', out);
    expect(r.code).toBe(ExitCode.Internal);
    expect(r.stderr).toBe(line.replace('ROOT', root));
  });

  it("EACCES on the output folder's parent: one line, exit 70 (the real executable, as an unprivileged user)", async () => {
    const root = await specDir({ 'a.yaml': quiet });
    await mkdir(join(root, 'locked'));
    await chmod(join(root, 'locked'), 0o555);
    await chmod(root, 0o755);
    await chmod(join(root, 'a.yaml'), 0o644);
    const tsx = pathToFileURL(join(process.cwd(), 'node_modules/tsx/dist/loader.mjs')).href;
    // root ignores permissions: drop to nobody for the run.
    const user = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
    const err = await exec(
      process.execPath,
      ['--import', tsx, join(process.cwd(), 'src/cli/bin.ts'), 'synth', join(root, 'a.yaml'), '-o', join(root, 'locked', 'out')],
      { ...user, env: { ...process.env, HOME: root } },
    ).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: ExitCode.Internal,
      stdout: '',
      stderr: `prewarm: cannot write ${join(root, 'locked', 'out')}: permission denied (EACCES)\n`,
    });
    expect(await readdir(join(root, 'locked'))).toEqual([]);
  }, 60_000);
});

describe('prewarm migrate (files)', () => {
  const fledged = `apiVersion: kubefledged.io/v1alpha2
kind: ImageCache
metadata: {name: c, namespace: ns}
spec:
  cacheSpec:
  - images: [redis:7]
    nodeSelector: {tier: backend}
`;

  it('prints converted specs on stdout and leaves the files alone', async () => {
    const dir = await specDir({ 'a.yaml': fledged });
    const r = await cli('migrate', dir);
    expect(r.code).toBe(ExitCode.Success);
    expect(r.stdout).toContain('apiVersion: prewarm.dev/v1alpha1');
    expect(r.stdout).toContain('tolerations:');
    expect(await readFile(join(dir, 'a.yaml'), 'utf8')).toBe(fledged);
  });

  it('refuses a prewarm spec that names a helper image, saying where the setting went', async () => {
    const dir = await specDir({
      'a.yaml': fledged,
      'b.yaml':
        'apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: b, namespace: ns}\nspec:\n  helperImage: busybox:1\n  cacheSpec:\n  - images: [redis:7]\n',
    });
    const r = await cli('migrate', dir);
    expect(r.code).toBe(ExitCode.InvalidInput);
    expect(r.stderr).toContain(`b.yaml:5:16: error: document 1: spec.helperImage: a spec may not choose the helper image`);
    expect(r.stderr).toContain('(prewarm synth --helper-image, or the Argo CD plugin');
  });

  it('--write rewrites the files, and the result validates', async () => {
    const dir = await specDir({ 'a.yaml': fledged });
    expect((await cli('migrate', dir, '--write')).code).toBe(ExitCode.Success);
    expect(await readFile(join(dir, 'a.yaml'), 'utf8')).toContain('apiVersion: prewarm.dev/v1alpha1');
    expect(await readdir(dir)).toEqual(['a.yaml']);
    expect((await cli('validate', dir)).code).toBe(ExitCode.Success);
  });

  it('--write changes only the bytes that convert: CRLF, BOM, Latin-1 and untouched files kept', async () => {
    const crlf = (...l: string[]) => l.map((x) => `${x}\r\n`).join('');
    const source = Buffer.from(
      `\uFEFF${crlf('# caf\xe9 \xfcber', 'apiVersion: kubefledged.io/v1alpha2', 'kind: ImageCache', 'metadata: {name: c, namespace: ns}   # \xe9', 'spec:', '  cacheSpec:', '  - images: [redis:7]')}`,
      'latin1',
    );
    const expected = Buffer.from(
      `\uFEFF${crlf('# caf\xe9 \xfcber', 'apiVersion: prewarm.dev/v1alpha1', 'kind: ImageCache', 'metadata: {name: c, namespace: ns}   # \xe9', 'spec:', '  cacheSpec:', '  - images: [redis:7]', '    tolerations:', '    - operator: Exists')}`,
      'latin1',
    );
    const untouched =
      'apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: pw, namespace: ns}      # spacing kept\nspec:\n    cacheSpec:\n        - {images: [busybox:1], tolerations: []}\n';
    const dir = await specDir({ 'b.yaml': untouched });
    // Latin-1 bytes and a UTF-8 BOM in one file: it is not UTF-8, so it is kept byte for byte.
    await writeFile(join(dir, 'a.yaml'), Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), source.subarray(1)]));
    const before = await stat(join(dir, 'b.yaml'));
    const r = await cli('migrate', dir, '--write');
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    expect(r.stderr).toBe(
      'converted 1 ImageCaches in place, in 1 file(s)\n' +
        "note: kube-fledged's busybox image (its controller's BUSYBOX_IMAGE) is not part of a spec; prewarm's is set where synth runs, " +
        "with prewarm synth --helper-image (or the Argo CD plugin's PREWARM_PLUGIN_HELPER_IMAGE), never in a spec\n",
    );
    expect((await readFile(join(dir, 'a.yaml'))).equals(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), expected.subarray(1)]))).toBe(true);
    const after = await stat(join(dir, 'b.yaml'));
    expect([after.ino, after.mtimeMs, await readFile(join(dir, 'b.yaml'), 'utf8')]).toEqual([before.ino, before.mtimeMs, untouched]);
    expect((await readdir(dir)).sort()).toEqual(['a.yaml', 'b.yaml']);
  });

  it('--write keeps JSON formatting, file modes and links', async () => {
    const json =
      '{\n  "apiVersion": "kubefledged.io/v1alpha2",\n  "kind": "ImageCache",\n  "metadata": {"name": "j", "namespace": "ns"},\n  "spec": {\n    "cacheSpec": [\n      {"images": ["redis:7"]}\n    ]\n  }\n}\n';
    const dir = await specDir({ 'j.yaml': json, 'target.txt': fledged });
    await chmod(join(dir, 'j.yaml'), 0o600);
    await chmod(join(dir, 'target.txt'), 0o640);
    await symlink('target.txt', join(dir, 'link.yaml'));
    const r = await cli('migrate', dir, '--write');
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    expect(await readFile(join(dir, 'j.yaml'), 'utf8')).toBe(
      json
        .replace('kubefledged.io/v1alpha2', 'prewarm.dev/v1alpha1')
        .replace('{"images": ["redis:7"]}', '{"images": ["redis:7"], "tolerations": [{"operator":"Exists"}]}'),
    );
    expect((await stat(join(dir, 'j.yaml'))).mode & 0o777).toBe(0o600);
    expect((await lstat(join(dir, 'link.yaml'))).isSymbolicLink()).toBe(true);
    expect(await readFile(join(dir, 'target.txt'), 'utf8')).toContain('apiVersion: prewarm.dev/v1alpha1');
    expect((await stat(join(dir, 'target.txt'))).mode & 0o777).toBe(0o640);
  });

  it('--write changes no file when one cannot be written (exit 70, one line)', async () => {
    const dir = await specDir({ 'a.yaml': fledged });
    await mkdir(join(dir, 'z'));
    await writeFile(join(dir, 'z', 'b.yaml'), fledged.replace('name: c', 'name: d'));
    // Immutable: even root cannot create the staged file beside it.
    await exec('chattr', ['+i', join(dir, 'z')]);
    try {
      const r = await cli('migrate', dir, '--write');
      expect(r.code).toBe(ExitCode.Internal);
      expect(r.stderr).toBe(`prewarm: cannot write ${join(dir, 'z', 'b.yaml')}: operation not permitted (EPERM); no file was changed\n`);
    } finally {
      await exec('chattr', ['-i', join(dir, 'z')]);
    }
    expect(await readFile(join(dir, 'a.yaml'), 'utf8')).toBe(fledged);
    expect((await readdir(dir)).sort()).toEqual(['a.yaml', 'z']);
  });

  it('refuses invalid input with exit 1 and converts nothing', async () => {
    const dir = await specDir({ 'a.yaml': fledged.replace('redis:7', 'Redis:7') });
    const r = await cli('migrate', dir, '--write');
    expect(r.code).toBe(ExitCode.InvalidInput);
    expect(r.stderr).toContain('repository name "Redis" must be lowercase');
    expect(await readFile(join(dir, 'a.yaml'), 'utf8')).toContain('kubefledged.io/v1alpha2');
  });

  it('exits 1 when there is nothing to convert, and 2 when told nothing', async () => {
    const dir = await specDir({
      'a.yaml': fledged
        .replace('kubefledged.io/v1alpha2', 'prewarm.dev/v1alpha1')
        .replace('nodeSelector', 'tolerations: []\n    nodeSelector'),
    });
    expect((await cli('migrate', dir)).code).toBe(ExitCode.InvalidInput);
    expect((await cli('migrate')).code).toBe(ExitCode.Usage);
    expect((await cli('migrate', dir, '--from-cluster')).code).toBe(ExitCode.Usage);
  });
});

describe('prewarm pin (no registry needed)', () => {
  it('refuses references it cannot rewrite in place (exit 1), names them, and changes nothing', async () => {
    const text = `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: c, namespace: ns}\nspec:\n  cacheSpec:\n    - images:\n        - >-\n          redis:7\n        - busybox@sha256:${'a'.repeat(64)}\n`;
    const dir = await specDir({ 'a.yaml': text });
    const r = await cli('pin', dir);
    expect(r.code, r.stderr).toBe(ExitCode.InvalidInput);
    expect(r.stderr).toContain(
      `${join(dir, 'a.yaml')}:7:11: error: document 1: spec.cacheSpec[0].images[0]: cannot pin redis:7: it is a block scalar`,
    );
    expect(r.stderr).toContain('1 image reference cannot be pinned in place; nothing was pinned');
    expect(r.stderr).not.toContain('nothing to pin');
    expect(r.stdout).toBe('');
    expect(await readFile(join(dir, 'a.yaml'), 'utf8')).toBe(text);
  });

  it('reports an image given through an alias as one it cannot pin, naming the place, and changes nothing', async () => {
    const text =
      'apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata:\n  name: c\n  namespace: ns\n  annotations: {img: &img redis:7}\nspec:\n  cacheSpec:\n  - images:\n    - *img\n';
    const dir = await specDir({ 'a.yaml': text });
    const r = await cli('pin', dir);
    expect(r.code, r.stderr).toBe(ExitCode.InvalidInput);
    const file = join(dir, 'a.yaml');
    expect(r.stderr).toBe(
      `${file}:10:7: error: document 1: spec.cacheSpec[0].images[0]: cannot pin redis:7: given through an alias at ${file}:10 (*img, whose value is written at line 6, outside the image fields); write the reference in place of the alias\n` +
        'prewarm: 1 image reference cannot be pinned in place; nothing was pinned\n',
    );
    expect(r.stdout).toBe('');
    expect(await readFile(file, 'utf8')).toBe(text);
  });

  it('sees images reached through a merge key as the loader does, and never says "nothing to pin" while a tag is left', async () => {
    const head =
      'apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata:\n  name: c\n  namespace: ns\n  annotations: {img: &img redis:7}\n';
    // Merged in from a mapping written in place: pinned there (here: the registry is asked).
    const inPlace = await specDir({
      'a.yaml': `${head}spec:\n  cacheSpec:\n  - <<: {images: [127.0.0.1:9/team/app:v1]}\n    nodeSelector: {a: b}\n`,
    });
    const asked = await cli('pin', inPlace, '--plain-http', '127.0.0.1:9', '--request-timeout', '2s');
    expect(asked.code, asked.stderr).toBe(ExitCode.Unresolved);
    expect(asked.stderr).toContain('cannot pin 127.0.0.1:9/team/app:v1: ');
    // Merged in with its value written outside the image fields: refused, naming the place.
    const text = `${head}spec:\n  cacheSpec:\n  - <<: {images: [*img]}\n    nodeSelector: {a: b}\n`;
    const dir = await specDir({ 'a.yaml': text });
    const r = await cli('pin', dir);
    expect(r.code, r.stderr).toBe(ExitCode.InvalidInput);
    expect(r.stderr).toContain(`${join(dir, 'a.yaml')}:9:`);
    expect(r.stderr).toContain('cannot pin redis:7: given through an alias');
    expect(r.stderr).not.toContain('nothing to pin');
    expect(await readFile(join(dir, 'a.yaml'), 'utf8')).toBe(text);
  });

  it('prints at most 100 diagnostics, then how many more', async () => {
    const images = Array.from({ length: 150 }, (_, i) => `        - >-\n          redis:${i}\n`).join('');
    const dir = await specDir({
      'a.yaml': `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: c, namespace: ns}\nspec:\n  cacheSpec:\n    - images:\n${images}`,
    });
    const r = await cli('pin', dir);
    expect(r.code, r.stderr).toBe(ExitCode.InvalidInput);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines.filter((l) => l.includes(': error: '))).toHaveLength(100);
    expect(r.stderr).toContain('... and 50 more errors, not shown (only the first 100 are)');
    expect(lines.length).toBeLessThanOrEqual(102);
  });

  it('takes --plain-http before or after the paths, once per registry', async () => {
    const pinned = `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: c, namespace: ns}\nspec:\n  cacheSpec:\n    - images: [busybox@sha256:${'a'.repeat(64)}]\n`;
    const dir = await specDir({ 'a.yaml': pinned });
    for (const argv of [
      // --no-sizes: the image is pinned already, and with sizes pin would ask its registry for them.
      ['pin', '--plain-http', 'r1:5000', '--no-sizes', dir],
      ['pin', '--plain-http', 'r1:5000', '--plain-http', 'r2:5000', dir, '--dry-run', '--no-sizes'],
      ['pin', dir, '--plain-http', 'r1:5000', '--no-sizes'],
    ]) {
      const r = await cli(...argv);
      expect(r.code, `${argv.join(' ')}: ${r.stderr}`).toBe(ExitCode.Success);
      expect(r.stderr).toBe('nothing to pin: every image reference has a digest\n');
    }
  });

  it('refuses invalid specs (exit 1) and paths without an ImageCache before contacting any registry', async () => {
    const invalid = await specDir({ 'a.yaml': bad });
    const r = await cli('pin', invalid);
    expect(r.code).toBe(ExitCode.InvalidInput);
    expect(r.stderr).toContain('error(s) found; nothing was pinned');
    const empty = await specDir({});
    expect((await cli('pin', empty)).stderr).toContain(`no ImageCache found in ${empty}; nothing was pinned`);
  });
});

describe('prewarm synth --own-namespace', () => {
  const ns = (name: string) => good.replace('namespace: ns', `namespace: ${name}`);
  const namespaceLabels = (stdout: string) =>
    Object.fromEntries(
      parseAllDocuments(stdout)
        .map((d) => d.toJS() as { kind: string; metadata: { name: string; labels?: Record<string, string> } })
        .filter((d) => d.kind === 'Namespace')
        .map((d) => [d.metadata.name, d.metadata.labels?.['pod-security.kubernetes.io/enforce'] ?? 'none']),
    );

  it.each([
    { case: 'none', args: [], code: ExitCode.Success, expected: { a: 'none', b: 'none', c: 'none' } },
    {
      case: 'one, after the paths',
      args: ['--own-namespace', 'b'],
      code: ExitCode.Success,
      expected: { a: 'none', b: 'restricted', c: 'none' },
    },
    {
      case: 'repeated, before the paths',
      args: ['--own-namespace', 'a', '--own-namespace', 'c'],
      before: true,
      code: ExitCode.Success,
      expected: { a: 'restricted', b: 'none', c: 'restricted' },
    },
    {
      case: "the cluster's own",
      args: ['--own-namespace', 'kube-system'],
      code: ExitCode.Usage,
      stderr: 'prewarm: --own-namespace: namespace "kube-system" exists in every cluster; prewarm never owns it',
    },
    {
      case: 'an invalid name',
      args: ['--own-namespace', 'Bad NS'],
      code: ExitCode.Usage,
      stderr: 'prewarm: --own-namespace: namespace "Bad NS" is not a valid namespace name',
    },
    { case: 'no value', args: ['--own-namespace'], code: ExitCode.Usage, stderr: 'own-namespace' },
    {
      case: 'one no ImageCache is in: a warning',
      args: ['--own-namespace', 'typo'],
      code: ExitCode.Success,
      stderr: 'Namespace typo: warning: namespace "typo" is owned, but no ImageCache is in it',
      expected: { a: 'none', b: 'none', c: 'none' },
    },
  ])('$case', async ({ args, before, code, stderr, expected }) => {
    const dir = await specDir({ 'a.yaml': ns('a'), 'b.yaml': ns('b'), 'c.yaml': ns('c') });
    const r = await cli('synth', ...(before === true ? [...args, dir] : [dir, ...args]), '--stdout');
    expect(r.code, r.stderr).toBe(code);
    if (stderr !== undefined) expect(r.stderr).toContain(stderr);
    if (expected !== undefined) expect(namespaceLabels(r.stdout)).toEqual(expected);
    else expect(r.stdout).toBe('');
  });
});

describe('prewarm synth --node-arch', () => {
  const commands = (stdout: string) =>
    parseAllDocuments(stdout)
      .map((d) => d.toJS() as { kind: string; spec?: { template: { spec: { containers: { command: string[] }[] } } } })
      .filter((d) => d.kind === 'DaemonSet')
      .flatMap((d) => d.spec?.template.spec.containers.map((c) => c.command[0]) ?? []);

  it.each([
    { case: 'unstated: the helper', args: [], code: ExitCode.Success, expected: '/prewarm/busybox' },
    { case: 'amd64: the sleeper', args: ['--node-arch', 'amd64'], code: ExitCode.Success, expected: '/prewarm/sleep' },
    { case: 'arm64: the sleeper', args: ['--node-arch', 'arm64'], code: ExitCode.Success, expected: '/prewarm/sleep' },
    { case: 'an architecture without a sleeper', args: ['--node-arch', 's390x'], code: ExitCode.Usage, stderr: 'Invalid values' },
    { case: "Go's name only", args: ['--node-arch', 'x86_64'], code: ExitCode.Usage, stderr: 'Choices: "amd64", "arm64"' },
    { case: 'no value', args: ['--node-arch'], code: ExitCode.Usage, stderr: 'node-arch' },
  ])('$case', async ({ args, code, stderr, expected }) => {
    const dir = await specDir({ 'a.yaml': good });
    const r = await cli('synth', dir, ...args, '--stdout');
    expect(r.code, r.stderr).toBe(code);
    if (stderr !== undefined) expect(r.stderr).toContain(stderr);
    if (expected !== undefined) {
      const found = commands(r.stdout);
      expect(found.length).toBeGreaterThan(0);
      for (const c of found) expect(c).toBe(expected);
    } else expect(r.stdout).toBe('');
  });

  it('validate refuses what synth refuses', async () => {
    const dir = await specDir({ 'a.yaml': good });
    expect((await cli('validate', dir, '--node-arch', 'riscv64')).code).toBe(ExitCode.Usage);
    expect((await cli('validate', dir, '--node-arch', 'arm64')).code).toBe(ExitCode.Success);
  });
});

describe('prewarm synth and validate: the bounds the invocation sets', () => {
  const spec = (extra: string) =>
    `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: a}\nspec:\n${extra}  cacheSpec:\n  - images: [redis:7]\n`;

  it.each([
    {
      case: 'an allowed PriorityClass',
      extra: '  priorityClassName: warm\n',
      args: ['--allow-priority-class', 'warm'],
      code: ExitCode.Success,
    },
    {
      case: 'a PriorityClass not allowed',
      extra: '  priorityClassName: warm\n',
      args: [],
      code: ExitCode.InvalidInput,
      stderr: 'is not allowed by this invocation',
    },
    {
      case: 'a system PriorityClass allowed by flag',
      extra: '',
      args: ['--allow-priority-class', 'system-node-critical'],
      code: ExitCode.Usage,
      stderr: '--allow-priority-class "system-node-critical" is a system PriorityClass',
    },
    {
      case: 'a memory bound that is no quantity',
      extra: '',
      args: ['--max-node-memory', 'lots'],
      code: ExitCode.Usage,
      stderr: 'is not a memory quantity',
    },
    {
      case: 'a memory bound under 64 MiB',
      extra: '',
      args: ['--max-node-memory', '1Mi'],
      code: ExitCode.Usage,
      stderr: 'must be between 64 MiB',
    },
    {
      case: 'refresh 1s under the default floor',
      extra: '  refresh: {interval: 1s}\n',
      args: [],
      code: ExitCode.InvalidInput,
      stderr: 'is under 5m',
    },
    {
      case: 'refresh 1s with the floor lowered',
      extra: '  refresh: {interval: 1s}\n',
      args: ['--min-refresh-interval', '1s'],
      code: ExitCode.Success,
    },
    {
      case: 'a floor of 0s',
      extra: '',
      args: ['--min-refresh-interval', '0s'],
      code: ExitCode.Usage,
      stderr: 'must be between 1s and 720h',
    },
  ])('$case', async ({ extra, args, code, stderr }) => {
    const dir = await specDir({ 'a.yaml': spec(extra) });
    for (const command of ['synth', 'validate']) {
      const r = await cli(command, dir, ...args, ...(command === 'synth' ? ['--stdout'] : []));
      expect(r.code, r.stderr).toBe(code);
      if (stderr !== undefined) expect(r.stderr).toContain(stderr);
    }
  });
});

describe('prewarm specs', () => {
  const flow = '{apiVersion: prewarm.dev/v1alpha1, kind: ImageCache, metadata: {name: f}, spec: {cacheSpec: [{images: [redis:7]}]}}\n';
  const merged =
    '<<: {apiVersion: prewarm.dev/v1alpha1, kind: ImageCache}\nmetadata: {name: m}\nspec: {cacheSpec: [{images: [redis:7]}]}\n';
  const nested = 'base: &b\n  apiVersion: prewarm.dev/v1alpha1\n  kind: ImageCache\n';

  it('lists the files synth reads as ImageCaches: flow style and merge keys too, broken ones too, nothing else', async () => {
    const dir = await specDir({
      'block.yaml': good,
      'flow.yaml': flow,
      'merged.yml': merged,
      'broken.yaml': bad,
      'second.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n${good}`,
      'configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n',
      'nested.yaml': nested,
      'notes.txt': good,
      '.hidden.yaml': good,
    });
    const r = await cli('specs', dir);
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    expect(r.stdout.split('\n')).toEqual(
      ['block.yaml', 'broken.yaml', 'flow.yaml', 'merged.yml', 'second.yaml', ''].map((f) => (f === '' ? '' : join(dir, f))),
    );
    // What it lists is what synth reads: synth fails on exactly the broken file.
    expect((await cli('synth', dir, '--stdout')).stderr).toContain(`${join(dir, 'broken.yaml')}:`);
  });

  it('prints each name escaped on one line', async () => {
    const dir = await specDir({ 'a\nb\u001b[2J.yaml': good });
    const r = await cli('specs', '--', dir);
    expect(r.stdout).toBe(`${join(dir, 'a\\nb\\x1b[2J.yaml')}\n`);
  });

  it('exits 1 when nothing holds an ImageCache, or a path cannot be read, still listing what it found', async () => {
    const none = await specDir({ 'configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n' });
    const r = await cli('specs', none);
    expect([r.code, r.stdout]).toEqual([ExitCode.InvalidInput, '']);
    expect(r.stderr).toContain(`prewarm: no ImageCache found in "${none}"`);
    const some = await specDir({ 'a.yaml': good });
    const missing = await cli('specs', some, join(some, 'nope'));
    expect([missing.code, missing.stdout]).toEqual([ExitCode.InvalidInput, `${join(some, 'a.yaml')}\n`]);
    expect(missing.stderr).toContain('nope: error: cannot read: ENOENT');
  });
});
