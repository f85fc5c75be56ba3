/**
 * The prewarm config management plugin under Argo CD's real argocd-cmp-server (v3.5.7, built from
 * Argo CD's Go module by argocd-build.sh), driven over its unix socket by cmp-client, which calls
 * Argo CD's own discovery and streaming code the way argocd-repo-server does: plugin environment
 * (ARGOCD_APP_*, KUBE_VERSION, KUBE_API_VERSIONS, ARGOCD_ENV_*, ARGOCD_APP_PARAMETERS), discovery
 * through MatchRepository, then GenerateManifest with the repository tarball and Argo CD's default 60 s deadline.
 * Server and client run as uid 999 with a read-only repository copy, like the repo-server and its
 * sidecar; deploy/argocd/plugin.yaml is used unchanged.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_DIR } from '../../harness/cluster/config.js';
import type { KubeObject } from '../../harness/kube.js';
import { yamlObjects } from '../../harness/manifests.js';
import { scaleImageCache } from '../../harness/specs.js';
import { CLI, distDocs, id, run } from './helpers.js';
import { sleep } from '../../harness/time.js';

const UID = 999;
const AS_ARGOCD = ['setpriv', `--reuid=${UID}`, `--regid=${UID}`, '--clear-groups', '--'];
const PLUGIN = 'prewarm-v1';
// The request deadline: Argo CD's repo-server calls time out after 60 s by default
// (controller/server.repo.server.timeout.seconds); each plugin command also has ARGOCD_EXEC_TIMEOUT, 90 s.
const ARGO_TIMEOUT_S = 60;
const SCALE = 1_000;

interface CmpResponse {
  matched: boolean;
  manifests?: string[];
  objects?: string[];
  env?: string[];
  error?: string;
  millis: number;
}
interface Param {
  name: string;
  string?: string;
  array?: string[];
}
interface Req {
  appPath: string;
  op?: 'match' | 'generate';
  plugin?: { name?: string; env?: { name: string; value: string }[]; parameters?: Param[] } | null;
  revision?: string;
  appName?: string;
}

let work: string;
let repo: string;
let sockDir: string;
let server: ChildProcess;
let serverLog = '';
let clientTmp: string;
let pathEnv: string;
let varFiles: string;
const bin = inject('argocdBin');

/** A dir uid 999 owns (the sidecar's own /tmp, the plugins socket volume). */
function ownedDir(name: string): string {
  const d = join(work, name);
  mkdirSync(d, { mode: 0o700 });
  chownSync(d, UID, UID);
  return d;
}

function readOnly(path: string): void {
  for (const e of readdirSync(path, { withFileTypes: true, recursive: true })) {
    const full = join(e.parentPath, e.name);
    chmodSync(full, e.isDirectory() ? 0o555 : 0o444);
  }
  chmodSync(path, 0o555);
}

function treeHash(path: string): string {
  const h = createHash('sha256');
  for (const e of readdirSync(path, { withFileTypes: true, recursive: true })
    .map((x) => join(x.parentPath, x.name))
    .sort()) {
    const st = statSync(e);
    h.update(`${e}\0${st.mode}\0`);
    if (st.isFile()) h.update(readFileSync(e));
  }
  return h.digest('hex');
}

function cmp(req: Req): CmpResponse {
  const body = {
    repoPath: repo,
    op: req.op ?? 'generate',
    appPath: req.appPath,
    plugin: req.plugin === undefined ? { name: PLUGIN } : req.plugin,
    appName: req.appName ?? 'prewarm',
    namespace: 'argocd',
    project: 'default',
    repoURL: 'https://git.example.invalid/platform.git',
    revision: req.revision ?? '0123456789abcdef0123456789abcdef01234567',
    targetRevision: 'main',
    kubeVersion: '1.36.5',
    apiVersions: ['apps/v1', 'v1', 'rbac.authorization.k8s.io/v1', 'admissionregistration.k8s.io/v1'],
    timeoutSeconds: ARGO_TIMEOUT_S,
  };
  const r = run([...AS_ARGOCD, join(varFiles, 'cmp-client')], {
    input: JSON.stringify(body),
    cwd: work,
    env: { PATH: pathEnv, ARGOCD_PLUGINSOCKFILEPATH: sockDir, TMPDIR: clientTmp, HOME: clientTmp },
    timeoutMs: (ARGO_TIMEOUT_S + 10) * 1000,
  });
  if (r.code !== 0) throw new Error(`cmp-client exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as CmpResponse;
}

function cliStream(args: string[], cwd: string): string {
  const r = run(['node', CLI, ...args], { cwd });
  if (r.code !== 0) throw new Error(`prewarm ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

function manifestsOf(res: CmpResponse): KubeObject[] {
  expect(res.error, serverLog.slice(-4000)).toBeUndefined();
  return (res.manifests ?? []).flatMap((m) => yamlObjects(m));
}

let repoHashBefore: string;

beforeAll(async () => {
  for (const f of ['argocd-cmp-server', 'cmp-client']) {
    if (!existsSync(join(bin, f))) throw new Error(`${join(bin, f)} missing: run test/gitops/argocd-build.sh`);
  }
  if (!existsSync(CLI)) throw new Error(`${CLI} missing: npm run build`);
  work = mkdtempSync(join(tmpdir(), 'prewarm-argocd-'));
  chmodSync(work, 0o755);

  // The repository as the repo-server has it: read-only to the plugin.
  repo = join(work, 'repo');
  mkdirSync(repo);
  cpSync(join(REPO_DIR, 'examples'), join(repo, 'imagecaches'), { recursive: true });
  mkdirSync(join(repo, 'plain'));
  writeFileSync(join(repo, 'plain', 'configmap.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n');
  mkdirSync(join(repo, 'broken'));
  writeFileSync(
    join(repo, 'broken', 'bad.yaml'),
    'apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: bad, namespace: ml}\nspec:\n  cacheSpec:\n    - images:\n        - python:3.12\n        - 3.12\n',
  );
  mkdirSync(join(repo, 'nested', 'team-a'), { recursive: true });
  cpSync(join(REPO_DIR, 'examples', 'platform'), join(repo, 'nested', 'team-a', 'platform'), { recursive: true });
  writeFileSync(join(repo, 'nested', 'README.md'), 'not a spec\n');
  // 1,000 ImageCaches of 20 images over 50 pools (the shape of bench:synth), one file each.
  mkdirSync(join(repo, 'scale'));
  for (let i = 0; i < SCALE; i++) {
    writeFileSync(join(repo, 'scale', `cache-${i}.yaml`), scaleImageCache(i, 'registry.example.invalid'));
  }
  readOnly(repo);
  repoHashBefore = treeHash(repo);

  // The plugin config as the ConfigMap mounts it: deploy/argocd/plugin.yaml, unchanged.
  const cfgDir = join(work, 'config');
  mkdirSync(cfgDir);
  copyFileSync(join(REPO_DIR, 'deploy/argocd/plugin.yaml'), join(cfgDir, 'plugin.yaml'));
  readOnly(cfgDir);

  // What the sidecar image puts on PATH: prewarm-argocd, prewarm, node.
  const shims = join(work, 'bin');
  mkdirSync(shims);
  symlinkSync(join(REPO_DIR, 'deploy/argocd/prewarm-argocd.mjs'), join(shims, 'prewarm-argocd'));
  writeFileSync(join(shims, 'prewarm'), `#!/bin/sh\nexec node ${CLI} "$@"\n`, { mode: 0o755 });
  pathEnv = `${shims}:${dirname(process.execPath)}:/usr/bin:/bin`;

  // The repo-server's copyutil init container copies the cmp-server binary into the shared
  // var-files volume; the sidecar runs it from there (and uid 999 cannot read root's cache).
  varFiles = join(work, 'var-files');
  mkdirSync(varFiles);
  for (const f of ['argocd-cmp-server', 'cmp-client']) copyFileSync(join(bin, f), join(varFiles, f));
  readOnly(varFiles);
  chmodSync(join(varFiles, 'argocd-cmp-server'), 0o555);
  chmodSync(join(varFiles, 'cmp-client'), 0o555);

  sockDir = ownedDir('plugins');
  const sidecarTmp = ownedDir('tmp');
  clientTmp = ownedDir('client-tmp');
  server = spawn(join(varFiles, 'argocd-cmp-server'), ['--config-dir-path', cfgDir, '--logformat', 'text', '--loglevel', 'info'], {
    argv0: 'argocd-cmp-server',
    cwd: sidecarTmp,
    env: { PATH: pathEnv, ARGOCD_PLUGINSOCKFILEPATH: sockDir, TMPDIR: sidecarTmp, HOME: sidecarTmp },
    stdio: ['ignore', 'pipe', 'pipe'],
    uid: UID,
    gid: UID,
  });
  server.stdout?.on('data', (d: Buffer) => (serverLog += d.toString()));
  server.stderr?.on('data', (d: Buffer) => (serverLog += d.toString()));
  const sock = join(sockDir, `${PLUGIN}.sock`);
  const deadline = Date.now() + 30_000;
  while (!existsSync(sock)) {
    if (server.exitCode !== null) throw new Error(`argocd-cmp-server exited ${server.exitCode}:\n${serverLog}`);
    if (Date.now() > deadline) throw new Error(`no ${sock} after 30 s:\n${serverLog}`);
    await sleep(50);
  }
});

afterAll(async () => {
  if (server && server.exitCode === null) {
    // argocd-cmp-server removes its socket on SIGTERM but keeps serving; the kubelet would
    // SIGKILL it after the grace period.
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    const t = setTimeout(() => server.kill('SIGKILL'), 2_000);
    await exited;
    clearTimeout(t);
  }
  if (work) {
    for (const e of readdirSync(work, { withFileTypes: true, recursive: true })) {
      if (e.isDirectory()) chmodSync(join(e.parentPath, e.name), 0o755);
    }
    chmodSync(work, 0o755);
    rmSync(work, { recursive: true, force: true });
  }
});

describe('argocd-cmp-server with deploy/argocd/plugin.yaml', () => {
  it('runs as uid 999 and serves prewarm-v1 on its socket', () => {
    const status = readFileSync(`/proc/${server.pid}/status`, 'utf8');
    expect(status).toMatch(/^Uid:\s+999\s+999\s+999\s+999$/m);
    expect(serverLog).toContain('argocd-cmp-server v3.5.7');
    expect(statSync(join(sockDir, `${PLUGIN}.sock`)).uid).toBe(UID);
  });

  it('discovery matches a folder of ImageCaches, nested ones too, and nothing else', () => {
    expect(cmp({ appPath: 'imagecaches', op: 'match', plugin: null })).toMatchObject({ matched: true });
    expect(cmp({ appPath: 'nested', op: 'match', plugin: null })).toMatchObject({ matched: true });
    const plain = cmp({ appPath: 'plain', op: 'match', plugin: null });
    expect(plain.matched).toBe(false);
    expect(plain.error).toContain('could not find plugin supporting the given repository');
  });

  it('generate prints exactly the `prewarm synth --stdout` stream, the same objects as dist/', () => {
    const res = cmp({ appPath: 'imagecaches' });
    const got = manifestsOf(res);
    const expected = yamlObjects(cliStream(['synth', '.', '--stdout'], join(repo, 'imagecaches')));
    expect(got).toEqual(expected);
    expect(res.objects).toEqual(got.map(id));
    expect([...got.map(id)].sort()).toEqual(distDocs().map(id).sort());
    // Every object kube.SplitYAML accepted: nothing but manifests came through stdout.
    expect(got.every((o) => typeof o['apiVersion'] === 'string' && typeof o['kind'] === 'string')).toBe(true);
    console.log(`[gitops] generate under argocd-cmp-server: ${res.millis} ms for ${got.length} objects (deadline ${ARGO_TIMEOUT_S} s)`);
    expect(res.millis).toBeLessThan((ARGO_TIMEOUT_S * 1000) / 4);
  });

  it('output is a function of the repository alone, not of app name, revision or Kubernetes version', () => {
    const a = cmp({ appPath: 'imagecaches', appName: 'one', revision: 'a'.repeat(40) });
    const b = cmp({ appPath: 'imagecaches', appName: 'two', revision: 'b'.repeat(40) });
    expect(a.manifests).toEqual(b.manifests);
    expect(a.env).toContain(`ARGOCD_APP_REVISION=${'a'.repeat(40)}`);
    expect(a.env).toContain('KUBE_VERSION=1.36.5');
    const text = (a.manifests ?? []).join('\n');
    // Argo CD's own tracking never leaks in; prewarm's only Argo CD key is the constant
    // `argocd.argoproj.io/sync-options` that keeps namespaces it does not own from being pruned.
    const keys = (a.manifests ?? [])
      .flatMap((m) => yamlObjects(m))
      .flatMap((o) => {
        const meta = o['metadata'] as { labels?: Record<string, string>; annotations?: Record<string, string> };
        return [...Object.entries(meta.labels ?? {}), ...Object.entries(meta.annotations ?? {})].map(([k, v]) => `${k}=${v}`);
      });
    expect(
      keys.filter((kv) => kv.startsWith('argocd.argoproj.io/') && kv !== 'argocd.argoproj.io/sync-options=Prune=false,Delete=false'),
    ).toEqual([]);
    expect(text).not.toContain('app.kubernetes.io/instance');
  });

  it('passes parameters (ARGOCD_APP_PARAMETERS): paths, namespace, reconciler', () => {
    const res = cmp({
      appPath: 'nested',
      plugin: {
        name: PLUGIN,
        parameters: [
          { name: 'paths', array: ['team-a/platform'] },
          { name: 'namespace', string: 'warm' },
          { name: 'reconciler', string: 'false' },
        ],
      },
    });
    expect(res.env?.find((e) => e.startsWith('ARGOCD_APP_PARAMETERS='))).toContain('"team-a/platform"');
    const got = manifestsOf(res);
    expect(got).toEqual(
      yamlObjects(cliStream(['synth', 'team-a/platform', '--stdout', '-n', 'warm', '--no-reconciler'], join(repo, 'nested'))),
    );
    expect(JSON.stringify(got)).not.toContain('reconciler:');
  });

  it('passes plugin env (ARGOCD_ENV_PREWARM_*) when no parameter is given', () => {
    const image = 'registry.example.invalid/prewarm/reconciler:9.9.9';
    const res = cmp({
      appPath: 'imagecaches',
      plugin: {
        name: PLUGIN,
        env: [
          { name: 'PREWARM_RECONCILER_IMAGE', value: image },
          { name: 'PREWARM_NAMESPACE', value: 'from-env' },
        ],
      },
    });
    expect(res.env).toContain(`ARGOCD_ENV_PREWARM_RECONCILER_IMAGE=${image}`);
    const got = manifestsOf(res);
    expect(got).toEqual(
      yamlObjects(cliStream(['synth', '.', '--stdout', '-n', 'from-env', '--reconciler-image', image], join(repo, 'imagecaches'))),
    );
    expect(JSON.stringify(got)).toContain(image);
  });

  it("an invalid spec fails the sync with prewarm's located error and yields no manifests", () => {
    const res = cmp({ appPath: 'broken' });
    expect(res.manifests ?? []).toEqual([]);
    expect(res.error).toMatch(/bad\.yaml:\d+:\d+: error: .*images\[1\]: must be a string, got the number 3\.12/);
  });

  it('an app path with no ImageCache fails, it never renders an empty app', () => {
    const res = cmp({ appPath: 'plain' });
    expect(res.manifests ?? []).toEqual([]);
    expect(res.error).toContain(`could not find cmp-server plugin with name "${PLUGIN}" supporting the given repository`);
  });

  it('a bad parameter fails before prewarm runs', () => {
    const unknown = cmp({ appPath: 'imagecaches', plugin: { name: PLUGIN, parameters: [{ name: 'nmespace', string: 'x' }] } });
    expect(unknown.error).toContain('unknown parameter "nmespace"');
    const escape = cmp({ appPath: 'imagecaches', plugin: { name: PLUGIN, parameters: [{ name: 'paths', array: ['../broken'] }] } });
    expect(escape.error).toContain('must be relative and inside the app path');
  });

  it(`renders ${SCALE} ImageCaches well within the deadline`, () => {
    const res = cmp({ appPath: 'scale' });
    const got = manifestsOf(res);
    // One holder per pool (burst pullers, the default lanes, come beside them).
    const holders = got.filter(
      (o) => o['kind'] === 'DaemonSet' && (o['metadata'] as { labels?: Record<string, string> }).labels?.['prewarm.dev/pool'] !== undefined,
    );
    expect(holders).toHaveLength(50);
    console.log(
      `[gitops] generate under argocd-cmp-server: ${res.millis} ms for ${SCALE} ImageCaches, ${got.length} objects (deadline ${ARGO_TIMEOUT_S} s)`,
    );
    expect(res.millis).toBeLessThan((ARGO_TIMEOUT_S * 1000) / 3);
  });

  it('left the repository copy untouched', () => {
    expect(treeHash(repo)).toBe(repoHashBefore);
  });
});

describe('prewarm-argocd outside the cmp-server', () => {
  const script = join(REPO_DIR, 'deploy/argocd/prewarm-argocd.mjs');
  const env = (extra: NodeJS.ProcessEnv) => ({ PATH: process.env['PATH'], PREWARM_BIN: CLI, ...extra });

  it('generate with zero ImageCaches exits 1 and prints nothing on stdout', () => {
    const dir = mkdtempSync(join(tmpdir(), 'prewarm-empty-'));
    try {
      writeFileSync(join(dir, 'notes.yaml'), '# nothing here\n');
      const r = run(['node', script, 'generate'], { cwd: dir, env: env({}) });
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('no ImageCache found');
      const d = run(['node', script, 'discover'], { cwd: dir, env: env({}) });
      expect([d.code, d.stdout]).toEqual([0, '']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rejects a malformed ARGOCD_APP_PARAMETERS and an unknown command with exit 2', () => {
    const r = run(['node', script, 'generate'], { cwd: join(REPO_DIR, 'examples'), env: env({ ARGOCD_APP_PARAMETERS: '{' }) });
    expect([r.code, r.stdout]).toEqual([2, '']);
    expect(r.stderr).toContain('ARGOCD_APP_PARAMETERS is not JSON');
    expect(run(['node', script, 'render'], { env: env({}) }).code).toBe(2);
  });
});
