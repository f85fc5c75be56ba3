import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { run } from '../../src/cli/main.js';

const exec = promisify(execFile);

async function cli(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

async function specDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'prewarm-cli-'));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

const good = `apiVersion: kubefledged.io/v1alpha2
kind: ImageCache
metadata: {name: c, namespace: ns}
spec:
  cacheSpec:
  - images: [redis:7, busybox]
`;
const bad = good.replace('redis:7', 'Redis:7');

describe('prewarm CLI', () => {
  it('--stdout prints one YAML stream of manifests and nothing else; warnings go to stderr', async () => {
    const dir = await specDir({ 'a.yaml': good });
    const r = await cli('synth', dir, '--stdout');
    expect(r.code).toBe(ExitCode.Success);
    const docs = parseAllDocuments(r.stdout);
    expect(docs.every((d) => d.errors.length === 0)).toBe(true);
    const kinds = docs.map((d) => d.get('kind'));
    expect(kinds[0]).toBe('Namespace');
    expect(kinds.slice(-2)).toEqual(['ConfigMap', 'DaemonSet']);
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
    expect(r.stderr).toContain(`${join(dir, 'a.yaml')}:6:14: error: document 1: spec.cacheSpec[0].images[0]: invalid image reference "Redis:7"`);
    expect(await readdir(dir)).toEqual(['a.yaml']);
  });

  it('leaves the previous output untouched when a synth fails, and replaces it whole when one succeeds', async () => {
    const dir = await specDir({ 'a.yaml': good });
    const out = join(dir, 'out');
    expect((await cli('synth', dir, '-o', out)).code).toBe(ExitCode.Success);
    await writeFile(join(out, 'stale.k8s.yaml'), 'kind: Stale\n');
    const before = await readFile(join(out, 'prewarm-ns-ns.k8s.yaml'), 'utf8');

    await writeFile(join(dir, 'a.yaml'), bad);
    expect((await cli('synth', dir, '-o', out)).code).toBe(ExitCode.InvalidInput);
    expect(await readFile(join(out, 'prewarm-ns-ns.k8s.yaml'), 'utf8')).toBe(before);
    expect((await readdir(out)).sort()).toEqual(['prewarm-cluster.k8s.yaml', 'prewarm-ns-ns.k8s.yaml', 'stale.k8s.yaml']);

    await writeFile(join(dir, 'a.yaml'), good);
    expect((await cli('synth', dir, '-o', out)).code).toBe(ExitCode.Success);
    expect((await readdir(out)).sort()).toEqual(['prewarm-cluster.k8s.yaml', 'prewarm-ns-ns.k8s.yaml']);
    expect((await readdir(dir)).sort()).toEqual(['a.yaml', 'out']);
  });

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
    [['frobnicate'], 'Unknown argument: frobnicate'],
  ])('exits 2 on usage errors: %j', async (argv, message) => {
    const r = await cli(...argv);
    expect(r.code).toBe(ExitCode.Usage);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(message);
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

  it('prints help on stdout with exit 0', async () => {
    const r = await cli('--help');
    expect(r.code).toBe(ExitCode.Success);
    expect(r.stdout).toContain('prewarm synth <paths..>');
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

  it('--write rewrites the files, and the result validates', async () => {
    const dir = await specDir({ 'a.yaml': fledged });
    expect((await cli('migrate', dir, '--write')).code).toBe(ExitCode.Success);
    expect(await readFile(join(dir, 'a.yaml'), 'utf8')).toContain('apiVersion: prewarm.dev/v1alpha1');
    expect(await readdir(dir)).toEqual(['a.yaml']);
    expect((await cli('validate', dir)).code).toBe(ExitCode.Success);
  });

  it('refuses invalid input with exit 1 and converts nothing', async () => {
    const dir = await specDir({ 'a.yaml': fledged.replace('redis:7', 'Redis:7') });
    const r = await cli('migrate', dir, '--write');
    expect(r.code).toBe(ExitCode.InvalidInput);
    expect(r.stderr).toContain('repository name "Redis" must be lowercase');
    expect(await readFile(join(dir, 'a.yaml'), 'utf8')).toContain('kubefledged.io/v1alpha2');
  });

  it('exits 1 when there is nothing to convert, and 2 when told nothing', async () => {
    const dir = await specDir({ 'a.yaml': fledged.replace('kubefledged.io/v1alpha2', 'prewarm.dev/v1alpha1').replace('nodeSelector', 'tolerations: []\n    nodeSelector') });
    expect((await cli('migrate', dir)).code).toBe(ExitCode.InvalidInput);
    expect((await cli('migrate')).code).toBe(ExitCode.Usage);
    expect((await cli('migrate', dir, '--from-cluster')).code).toBe(ExitCode.Usage);
  });
});

describe('prewarm pin (no registry needed)', () => {
  it('warns about references it cannot rewrite in place, names them, and changes nothing', async () => {
    const text = `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: c, namespace: ns}\nspec:\n  cacheSpec:\n    - images:\n        - >-\n          redis:7\n        - busybox@sha256:${'a'.repeat(64)}\n`;
    const dir = await specDir({ 'a.yaml': text });
    const r = await cli('pin', dir);
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    expect(r.stderr).toContain(`${join(dir, 'a.yaml')}:7:11: warning: document 1: spec.cacheSpec[0].images[0]: redis:7 is not pinned: it is a block scalar`);
    expect(r.stderr).toContain('nothing to pin in place; see the warnings above');
    expect(r.stdout).toBe('');
    expect(await readFile(join(dir, 'a.yaml'), 'utf8')).toBe(text);
  });

  it('takes --plain-http before or after the paths, once per registry', async () => {
    const pinned = `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: c, namespace: ns}\nspec:\n  cacheSpec:\n    - images: [busybox@sha256:${'a'.repeat(64)}]\n`;
    const dir = await specDir({ 'a.yaml': pinned });
    for (const argv of [['pin', '--plain-http', 'r1:5000', dir], ['pin', '--plain-http', 'r1:5000', '--plain-http', 'r2:5000', dir, '--dry-run'], ['pin', dir, '--plain-http', 'r1:5000']]) {
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
    { case: 'one, after the paths', args: ['--own-namespace', 'b'], code: ExitCode.Success, expected: { a: 'none', b: 'restricted', c: 'none' } },
    { case: 'repeated, before the paths', args: ['--own-namespace', 'a', '--own-namespace', 'c'], before: true, code: ExitCode.Success, expected: { a: 'restricted', b: 'none', c: 'restricted' } },
    { case: "the cluster's own", args: ['--own-namespace', 'kube-system'], code: ExitCode.Usage, stderr: 'error: --own-namespace: namespace "kube-system" exists in every cluster; prewarm never owns it' },
    { case: 'an invalid name', args: ['--own-namespace', 'Bad NS'], code: ExitCode.Usage, stderr: 'error: --own-namespace: namespace "Bad NS" is not a valid namespace name' },
    { case: 'no value', args: ['--own-namespace'], code: ExitCode.Usage, stderr: 'own-namespace' },
    { case: 'one no ImageCache is in: a warning', args: ['--own-namespace', 'typo'], code: ExitCode.Success, stderr: 'Namespace typo: warning: namespace "typo" is owned, but no ImageCache is in it', expected: { a: 'none', b: 'none', c: 'none' } },
  ])('$case', async ({ args, before, code, stderr, expected }) => {
    const dir = await specDir({ 'a.yaml': ns('a'), 'b.yaml': ns('b'), 'c.yaml': ns('c') });
    const r = await cli('synth', ...(before === true ? [...args, dir] : [dir, ...args]), '--stdout');
    expect(r.code, r.stderr).toBe(code);
    if (stderr !== undefined) expect(r.stderr).toContain(stderr);
    if (expected !== undefined) expect(namespaceLabels(r.stdout)).toEqual(expected);
    else expect(r.stdout).toBe('');
  });
});
