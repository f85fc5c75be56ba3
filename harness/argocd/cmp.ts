/**
 * Argo CD's real argocd-cmp-server running the prewarm plugin, as the repo-server's sidecar runs
 * it, and cmp-client, which asks it the way argocd-repo-server does (both built by build.sh beside
 * this file from Argo CD's Go module). Shared by the gitops tier (correctness) and bench:argocd
 * (how long a render takes).
 *
 * Server and client run as uid 999, like the repo-server and its sidecar, with
 * deploy/argocd/plugin.yaml unchanged as the plugin's configuration file. A server's environment
 * is the sidecar container's own (the PREWARM_PLUGIN_* settings); its log goes to a file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { REPO_DIR } from '../cluster/config.js';
import { run } from '../cluster/sh.js';
import { sleep } from '../time.js';

/** The uid of Argo CD's images (argocd-repo-server and the plugin sidecar). */
export const ARGOCD_UID = 999;
/** spec.source.plugin.name of the prewarm plugin: `<metadata.name>-<spec.version>` of plugin.yaml. */
export const PLUGIN = 'prewarm-v1';
/**
 * Argo CD's repo-server deadline for a manifest generation, 60 s by default
 * (controller/server.repo.server.timeout.seconds); cmp-client puts it on the request's context, so
 * a slower render comes back as an error, as it would in Argo CD.
 */
export const ARGO_TIMEOUT_S = 60;

const AS_ARGOCD = ['setpriv', `--reuid=${ARGOCD_UID}`, `--regid=${ARGOCD_UID}`, '--clear-groups', '--'];

/** Builds argocd-cmp-server and cmp-client unless cached, and returns the folder that holds them. */
export function buildArgocdBin(): string {
  const out = run(['bash', join(REPO_DIR, 'harness/argocd/build.sh')], { timeoutMs: 1_800_000 }).stdout;
  const bin = out.trim().split('\n').pop() ?? '';
  if (bin === '') throw new Error('harness/argocd/build.sh printed no path');
  return bin;
}

/** What the servers and the client of one work folder share. */
export interface CmpRig {
  readonly work: string;
  /** Holds argocd-cmp-server and cmp-client, readable by uid 999. */
  readonly varFiles: string;
  /** The plugin configuration folder: deploy/argocd/plugin.yaml. */
  readonly configDir: string;
  /** PATH of the sidecar image: prewarm-argocd, prewarm, node. */
  readonly pathEnv: string;
  /** The client's TMPDIR and HOME. */
  readonly clientTmp: string;
}

/** One running argocd-cmp-server. */
export interface CmpServer {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly sockDir: string;
  /** The server's stdout and stderr go to this file, not to a pipe (see {@link startCmpServer}). */
  readonly logFile: string;
}

/** spec.source.plugin. */
export interface PluginSource {
  name?: string;
  env?: { name: string; value: string }[];
  parameters?: CmpParam[];
}
/** One plugin parameter as an Application gives it. */
export interface CmpParam {
  name: string;
  string?: string;
  array?: string[];
}

/** One request, as the repo-server would make it for an Application of `appPath`. */
export interface CmpRequest {
  readonly repo: string;
  readonly appPath: string;
  readonly op?: 'match' | 'generate';
  /** spec.source.plugin; null for discovery alone. @default { name: PLUGIN } */
  readonly plugin?: PluginSource | null;
  /** @default '0123456789abcdef0123456789abcdef01234567' */
  readonly revision?: string;
  /** @default 'prewarm' */
  readonly appName?: string;
}

/** cmp-client's answer. */
export interface CmpResponse {
  matched: boolean;
  manifests?: string[];
  /** "apiVersion/kind/namespace/name" of every object Argo CD's kube.SplitYAML parsed. */
  objects?: string[];
  env?: string[];
  /** spec.source.plugin after the repository's .argocd-source*.yaml were merged into it. */
  plugin?: PluginSource;
  error?: string;
  /** Discovery, then GenerateManifest with the repository tarball, as cmp-client timed them. */
  millis: number;
}

/** A folder uid 999 owns (the sidecar's own /tmp, the plugins socket volume). */
export function ownedDir(rig: Pick<CmpRig, 'work'>, name: string): string {
  const d = join(rig.work, name);
  mkdirSync(d, { mode: 0o700 });
  chownSync(d, ARGOCD_UID, ARGOCD_UID);
  return d;
}

/** Makes `path` and everything below it read-only, as a repository checkout is to the plugin. */
export function readOnly(path: string): void {
  for (const e of readdirSync(path, { withFileTypes: true, recursive: true })) {
    // chmod follows a link: the folder it leads to is made read-only as an entry of its own.
    if (e.isSymbolicLink()) continue;
    chmodSync(join(e.parentPath, e.name), e.isDirectory() ? 0o555 : 0o444);
  }
  chmodSync(path, 0o555);
}

/**
 * Lays out in `work` (a folder of 0o755) what the repo-server pod has: the plugin configuration,
 * the sidecar image's PATH with `prewarm` running `cli`, the var-files volume with the binaries of
 * `bin` (uid 999 cannot read root's cache), and the client's own /tmp.
 */
export function cmpRig(work: string, bin: string, cli: string): CmpRig {
  for (const f of ['argocd-cmp-server', 'cmp-client']) {
    if (!existsSync(join(bin, f))) throw new Error(`${join(bin, f)} missing: run harness/argocd/build.sh`);
  }
  if (!existsSync(cli)) throw new Error(`${cli} missing: npm run build`);
  const configDir = join(work, 'config');
  mkdirSync(configDir);
  copyFileSync(join(REPO_DIR, 'deploy/argocd/plugin.yaml'), join(configDir, 'plugin.yaml'));
  readOnly(configDir);

  const shims = join(work, 'bin');
  mkdirSync(shims);
  symlinkSync(join(REPO_DIR, 'deploy/argocd/prewarm-argocd.mjs'), join(shims, 'prewarm-argocd'));
  writeFileSync(join(shims, 'prewarm'), `#!/bin/sh\nexec node ${cli} "$@"\n`, { mode: 0o755 });
  const pathEnv = `${shims}:${dirname(process.execPath)}:/usr/bin:/bin`;

  // The repo-server's copyutil init container copies the cmp-server binary into the shared
  // var-files volume, and the sidecar runs it from there.
  const varFiles = join(work, 'var-files');
  mkdirSync(varFiles);
  for (const f of ['argocd-cmp-server', 'cmp-client']) copyFileSync(join(bin, f), join(varFiles, f));
  readOnly(varFiles);
  chmodSync(join(varFiles, 'argocd-cmp-server'), 0o555);
  chmodSync(join(varFiles, 'cmp-client'), 0o555);

  return { work, varFiles, configDir, pathEnv, clientTmp: ownedDir({ work }, 'client-tmp') };
}

/** Everything `server` has logged so far. */
export function serverLog(server: CmpServer): string {
  return existsSync(server.logFile) ? readFileSync(server.logFile, 'utf8') : '';
}

/** Starts an argocd-cmp-server as uid 999 with `config` as the sidecar's environment, and waits for its socket. */
export async function startCmpServer(rig: CmpRig, name: string, config: Readonly<Record<string, string>>): Promise<CmpServer> {
  const sockDir = ownedDir(rig, `plugins-${name}`);
  const sidecarTmp = ownedDir(rig, `tmp-${name}`);
  // A file, not a pipe: the client is waited for synchronously, so nothing would drain a pipe
  // meanwhile, and a server whose pipe is full blocks on its next log line and never answers.
  const logFile = join(rig.work, `cmp-server-${name}.log`);
  const fd = openSync(logFile, 'a');
  const proc = spawn(
    join(rig.varFiles, 'argocd-cmp-server'),
    ['--config-dir-path', rig.configDir, '--logformat', 'text', '--loglevel', 'info'],
    {
      argv0: 'argocd-cmp-server',
      cwd: sidecarTmp,
      env: { PATH: rig.pathEnv, ARGOCD_PLUGINSOCKFILEPATH: sockDir, TMPDIR: sidecarTmp, HOME: sidecarTmp, ...config },
      stdio: ['ignore', fd, fd],
      uid: ARGOCD_UID,
      gid: ARGOCD_UID,
    },
  );
  closeSync(fd);
  const server: CmpServer = { name, proc, sockDir, logFile };
  const sock = join(sockDir, `${PLUGIN}.sock`);
  const deadline = Date.now() + 30_000;
  while (!existsSync(sock)) {
    if (proc.exitCode !== null) throw new Error(`argocd-cmp-server ${name} exited ${proc.exitCode}:\n${serverLog(server)}`);
    if (Date.now() > deadline) throw new Error(`no ${sock} after 30 s:\n${serverLog(server)}`);
    await sleep(50);
  }
  return server;
}

/** Stops `server` as the kubelet would: SIGTERM, then SIGKILL after a grace period. */
export async function stopCmpServer(server: CmpServer): Promise<void> {
  const { proc } = server;
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  // argocd-cmp-server removes its socket on SIGTERM but keeps serving.
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  const t = setTimeout(() => proc.kill('SIGKILL'), 2_000);
  await exited;
  clearTimeout(t);
}

/** Asks `server` for `req` through cmp-client, under Argo CD's default deadline. */
export function cmpRequest(rig: CmpRig, server: CmpServer, req: CmpRequest): CmpResponse {
  const body = {
    repoPath: req.repo,
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
  const r = run([...AS_ARGOCD, join(rig.varFiles, 'cmp-client')], {
    input: JSON.stringify(body),
    cwd: rig.work,
    env: { PATH: rig.pathEnv, ARGOCD_PLUGINSOCKFILEPATH: server.sockDir, TMPDIR: rig.clientTmp, HOME: rig.clientTmp },
    timeoutMs: (ARGO_TIMEOUT_S + 10) * 1000,
    allowFail: true,
  });
  if (r.code !== 0) throw new Error(`cmp-client exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as CmpResponse;
}

/** Removes a work folder that {@link readOnly} and {@link ownedDir} left hard to remove. */
export function removeWork(work: string): void {
  for (const e of readdirSync(work, { withFileTypes: true, recursive: true })) {
    if (e.isDirectory()) chmodSync(join(e.parentPath, e.name), 0o755);
  }
  chmodSync(work, 0o755);
  rmSync(work, { recursive: true, force: true });
}
