/**
 * The CLI on untrusted spec folders: what it reads, what it refuses, and what it says.
 * Driven through `run`, like a user at a shell or a CI step.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, symlink, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { cli } from '../helpers.js';

const good = `apiVersion: kubefledged.io/v1alpha2
kind: ImageCache
metadata: {name: c, namespace: ns}
spec:
  cacheSpec:
  - images: [redis:7]
`;

/** A spec folder with one valid file, beside a folder that holds a secret. */
async function repo() {
  const base = await mkdtemp(join(tmpdir(), 'prewarm-cli-specs-'));
  const specs = join(base, 'specs');
  await mkdir(specs);
  await mkdir(join(base, 'private'));
  await writeFile(join(specs, 'a.yaml'), good);
  await writeFile(join(base, 'private', 'token.yaml'), 'apiVersion: hunter2-SECRET\nkind: ImageCache\n');
  return { base, specs };
}

describe('validate and synth on hostile spec folders', () => {
  it.each([
    [
      'a link out of the specs',
      async (base: string, specs: string) => symlink(join(base, 'private', 'token.yaml'), join(specs, 'env.yaml')),
      'env.yaml: error: is a link whose target is outside the spec roots',
    ],
    [
      'a link to /proc/self/environ',
      async (_: string, specs: string) => symlink('/proc/self/environ', join(specs, 'env.yaml')),
      'env.yaml: error: is a link whose target is outside the spec roots',
    ],
    [
      'a link to /dev/zero',
      async (_: string, specs: string) => symlink('/dev/zero', join(specs, 'zero.yaml')),
      'zero.yaml: error: is a link whose target is outside the spec roots',
    ],
    [
      'a FIFO',
      (_: string, specs: string) => (execFileSync('mkfifo', [join(specs, 'x.yaml')]), Promise.resolve()),
      'x.yaml: error: is a FIFO (named pipe), not a regular file',
    ],
  ])('%s: exit 1 at once, naming the entry, printing nothing of the target', async (_name, setup, message) => {
    const { base, specs } = await repo();
    await setup(base, specs);
    for (const argv of [
      ['validate', specs],
      ['synth', specs, '--stdout'],
    ]) {
      const r = await cli(...argv);
      expect(r.code).toBe(ExitCode.InvalidInput);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(message);
      expect(r.stderr).not.toMatch(/hunter2|SECRET|private/);
      expect(r.ms).toBeLessThan(5_000);
    }
  });

  it('a FIFO named on the command line does not hang', async () => {
    const { specs } = await repo();
    execFileSync('mkfifo', [join(specs, 'p.yaml')]);
    const r = await cli('validate', join(specs, 'p.yaml'), join(specs, 'a.yaml'));
    expect(r.code).toBe(ExitCode.InvalidInput);
    expect(r.stderr).toContain(`${join(specs, 'p.yaml')}: error: is a FIFO (named pipe), not a regular file; only regular files are read`);
  });
});

describe('the size limit per spec file', () => {
  it('refuses a 70 MB file at once, naming it and the limit', async () => {
    const { specs } = await repo();
    const big = join(specs, 'big.yaml');
    await writeFile(big, good);
    await truncate(big, 70 * 1024 * 1024);
    const r = await cli('validate', specs);
    expect(r.code).toBe(ExitCode.InvalidInput);
    expect(r.stderr).toContain(
      `${big}: error: is 70.0 MiB (73400320 bytes), over the limit of 4.0 MiB (4194304 bytes) per spec file; not read`,
    );
    expect(r.ms).toBeLessThan(2_000);
  });
});

describe('floods of ImageCaches and diagnostics', () => {
  it('90,000 untagged images (under the 100,000-node document limit) in one ImageCache: the normal validation error (exit 1), not a crash, and at most 100 diagnostics printed', async () => {
    const { specs } = await repo();
    const images = Array.from({ length: 90_000 }, (_, i) => `    - i${i}\n`).join('');
    await writeFile(join(specs, 'flood.yaml'), `${good.replace('name: c', 'name: flood')}  - images:\n${images}    - Bad:1\n`);
    const r = await cli('validate', specs);
    expect(r.code).toBe(ExitCode.InvalidInput);
    expect(r.stderr).not.toContain('internal error');
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines.filter((l) => l.includes(': warning: '))).toHaveLength(99);
    expect(lines.filter((l) => l.includes(': error: '))).toEqual([
      expect.stringContaining('images[90000]: invalid image reference "Bad:1"'),
    ]);
    expect(lines.slice(-2)).toEqual([
      '... and 89901 more warnings, not shown (only the first 100 are)',
      'prewarm: 1 error found; nothing was written',
    ]);
  }, 120_000);
});

describe('folders that hold other manifests', () => {
  const deploy = fileURLToPath(new URL('../fixtures/kube-fledged-deploy', import.meta.url));

  it.each([
    ["kube-fledged's sample ImageCache", [join(deploy, 'kubefledged-imagecache.yaml')], undefined],
    [
      "a folder laid out like kube-fledged's deploy/ (CRD, Deployments, RBAC, webhook, operator, Helm chart)",
      [deploy],
      'skipped 21 documents of other kinds in 21 files, 4 Helm chart templates',
    ],
  ])('%s: validate passes with 0 errors and says what it skipped', async (_name, paths, skipped) => {
    const r = await cli('validate', ...paths);
    expect(r.stderr).not.toContain('error');
    expect(r.code).toBe(ExitCode.Success);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toEqual([...(skipped === undefined ? [] : [skipped]), 'ok: 1 ImageCaches, 2 pools, 3 images']);
    const synth = await cli('synth', ...paths, '--stdout');
    expect(synth.code).toBe(ExitCode.Success);
    expect(synth.stdout).toContain('image: us.gcr.io/k8s-artifacts-prod/cassandra:v7');
  });

  it('skips a Deployment, a Kustomization and a KEDA object beside an ImageCache, in one file or many', async () => {
    const { specs } = await repo();
    await writeFile(
      join(specs, 'kustomization.yaml'),
      'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [a.yaml]\n',
    );
    await writeFile(
      join(specs, 'app.yaml'),
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n---\napiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: web}\n',
    );
    const r = await cli('validate', specs);
    expect(r.code).toBe(ExitCode.Success);
    expect(r.stderr).toBe('skipped 3 documents of other kinds in 2 files\nok: 1 ImageCaches, 1 pools, 1 images\n');
  });

  it('keeps typos within kubefledged.io and prewarm.dev as errors, and still says what it skipped', async () => {
    const { specs } = await repo();
    await writeFile(
      join(specs, 'b.yaml'),
      'apiVersion: apps/v1\nkind: Deployment\n---\n' + good.replace('kubefledged.io/v1alpha2', 'kubefledged.io/v1alpha1'),
    );
    const r = await cli('validate', specs);
    expect(r.code).toBe(ExitCode.InvalidInput);
    expect(r.stderr).toBe(
      `${join(specs, 'b.yaml')}:4:13: error: document 2: apiVersion: unsupported apiVersion "kubefledged.io/v1alpha1": expected "kubefledged.io/v1alpha2" or "prewarm.dev/v1alpha1"\n` +
        'skipped 1 document of other kinds in 1 file\n' +
        'prewarm: 1 error found; nothing was written\n',
    );
  });
});

describe("prewarm's own output inside a spec folder", () => {
  it('after synth specs -o specs/out, validate specs passes and counts the output it skipped', async () => {
    const { specs } = await repo();
    const out = join(specs, 'out');
    expect((await cli('synth', specs, '-o', out)).code).toBe(ExitCode.Success);
    const files = await readdir(out);
    // Documents that carry managed-by prewarm; a Namespace prewarm does not own carries no labels
    // at all, and is skipped as another kind.
    let documents = 0;
    let outputFiles = 0;
    for (const f of files) {
      const labelled = parseAllDocuments(await readFile(join(out, f), 'utf8')).filter(
        (d) => d.getIn(['metadata', 'labels', 'app.kubernetes.io/managed-by']) === 'prewarm',
      ).length;
      documents += labelled;
      if (labelled > 0) outputFiles += 1;
    }
    for (const command of ['validate', 'synth']) {
      const r = await cli(command, specs, ...(command === 'synth' ? ['--stdout'] : []));
      expect(r.code).toBe(ExitCode.Success);
      expect(r.stderr).toContain(`${documents} documents of prewarm's own output in ${outputFiles} files\n`);
    }
  });
});

describe('smaller items', () => {
  const merged = `apiVersion: prewarm.dev/v1alpha1
kind: ImageCache
metadata: {name: m, namespace: ns}
spec:
  cacheSpec:
  - &base
    images: [redis:7]
    nodeSelector:
      # tier: backend
  - <<: *base
    images: [nginx:1]
  imagePullSecrets:
  # - name: regcred
`;
  it.each([
    [
      'merge keys and commented-out nodeSelector and imagePullSecrets',
      { 'm.yaml': merged },
      (d: string) => [d],
      0,
      'ok: 1 ImageCaches, 1 pools, 2 images\n',
    ],
    [
      'one file by a relative and an absolute path',
      { 'a.yaml': good },
      (d: string) => [join(d, 'a.yaml'), relative(process.cwd(), join(d, 'a.yaml'))],
      0,
      'ok: 1 ImageCaches, 1 pools, 1 images\n',
    ],
    [
      'one file through its folder and directly',
      { 'a.yaml': good },
      (d: string) => [d, join(d, 'a.yaml')],
      0,
      'ok: 1 ImageCaches, 1 pools, 1 images\n',
    ],
    [
      'a UTF-16 file',
      { 'a.yaml': Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(good, 'utf16le')]) },
      (d: string) => [d],
      1,
      'a.yaml: error: file is UTF-16; save it as UTF-8\nprewarm: 1 error found; nothing was written\n',
    ],
    [
      'a duplicate name',
      { 'a.yaml': good, 'b.yaml': `# copy\n${good}` },
      (d: string) => [d],
      1,
      'b.yaml:4:18: error: document 1: metadata.name: duplicate ImageCache "ns/c": already defined at a.yaml:3:18 (document 1)\n',
    ],
  ])('%s', async (_name, files, paths, code, stderr) => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-cli-small-'));
    for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
    const r = await cli('validate', ...paths(dir));
    expect(r.code).toBe(code);
    expect(r.stderr.replaceAll(`${dir}/`, '')).toContain(stderr);
  });
});
