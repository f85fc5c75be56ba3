/**
 * The prewarm test cluster: hub netns (control plane, registries), real nodes (netns + containerd
 * + kubelet + kube-proxy), fake nodes (kwok). Used by the CLI (cli.ts) and by vitest global setup.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiserverUrl, BIN, NET, RUN_DIR, STATE_DIR, SYSTEM_TOOLS, requireBinaries, type BinName } from './config.js';
import {
  clusterControlPlane,
  startApiserver,
  startControllerManager,
  startEtcd,
  startScheduler,
  stopControlPlane,
  waitApiserverReady,
} from './controlplane.js';
import { ensureCniStandInImage, ensureStandardImages } from './images.js';
import { deleteNetns, ensureHub, netnsExists, nodeNet } from './net.js';
import { adminCert, CA_CRT, writeKubeconfig } from './pki.js';
import { registryProfile, setRegistryProfile, startRegistries, stopRegistries } from './registry.js';
import { describeProfile, type RegistryProfile } from './registry-profile.js';
import { run, daemonPid, liveDaemons, missingTools, PID_DIR, startDaemon, stopDaemon, tailLog } from './sh.js';
import { sleep, waitFor } from '../time.js';
import { cniStandInPod, cniStandInSpec, deleteCniStandInArgs, type CniStandInOptions } from './cni-stand-in.js';
import {
  DEFAULT_IMAGE_GC,
  cniConf,
  containerdDaemon,
  destroyNode,
  startContainerd,
  kubeletDaemon,
  kubeletMaySetLabel,
  listNodeSpecs,
  loadSpec,
  nextIndex,
  nodeImages,
  nodePaths,
  startNode,
  stopNode,
  type ImageGcPolicy,
  type NodeSpec,
  type Taint,
} from './node.js';
import { startKwok, stopKwok } from './kwok.js';
import { KRUISE_MANAGER } from './kruise.js';
import { sweep } from './sweep.js';

export const ADMIN_KUBECONFIG = join(STATE_DIR, 'admin.kubeconfig');
/** The cluster's control-plane data (etcd data, kubeconfigs, the audit log). */
export const CP_DIR = join(STATE_DIR, 'control-plane');
const APISERVER_SOCK = join(RUN_DIR, 'apiserver.sock');
/** The apiserver's audit log when the cluster was brought up with `auditLog` (removed by down). */
export const AUDIT_LOG = join(CP_DIR, 'audit.log');

export const ALL_BINARIES: BinName[] = [
  'etcd',
  'kubeApiserver',
  'kubeControllerManager',
  'kubeScheduler',
  'kubeProxy',
  'kubectl',
  'kubelet',
  'crictl',
  'kwok',
  'pause',
];

export function checkPrerequisites(bins: readonly BinName[] = ALL_BINARIES): void {
  if (process.getuid?.() !== 0) throw new Error('the prewarm test cluster needs root (netns, cgroups, mounts)');
  const missing = missingTools(SYSTEM_TOOLS);
  if (missing.length) throw new Error(`missing system tools: ${missing.join(', ')}; run .ci/setup-cluster.sh`);
  requireBinaries(bins);
}

export function kubectl(args: string[], opts: { input?: string; allowFail?: boolean } = {}): string {
  return run([BIN.kubectl, `--kubeconfig=${ADMIN_KUBECONFIG}`, ...args], {
    ...(opts.input !== undefined ? { input: opts.input } : {}),
    allowFail: opts.allowFail ?? false,
    timeoutMs: 300_000,
  }).stdout;
}

export function isUp(): Promise<boolean> {
  if (!daemonPid('cp-apiserver') || !existsSync(ADMIN_KUBECONFIG)) return Promise.resolve(false);
  return Promise.resolve(
    run([BIN.kubectl, `--kubeconfig=${ADMIN_KUBECONFIG}`, 'get', '--raw=/readyz'], { allowFail: true, timeoutMs: 10_000 }).code === 0,
  );
}

export interface UpOptions {
  log?: (msg: string) => void;
  kwok?: boolean;
  /** Start the apiserver with an audit log at AUDIT_LOG (default false; no effect on a running apiserver). */
  auditLog?: boolean;
  /** Extra kube-controller-manager flags (default none; no effect on a running one). */
  controllerManagerArgs?: string[];
  /** How the nodes see the plain registry (registry-profile.ts); applied on a running cluster too. @default loopback */
  registryProfile?: RegistryProfile;
}

/**
 * Which checkout's cluster holds the hub: its netns, addresses and ports are fixed, so one cluster
 * runs per machine. Kept outside RUN_DIR, as two checkouts (or run dirs) would not see each other.
 */
const HUB_OWNER = '/run/prewarm-hub.owner';

interface HubOwner {
  readonly stateDir: string;
  readonly runDir: string;
}

function hubOwner(): HubOwner | undefined {
  return existsSync(HUB_OWNER) ? (JSON.parse(readFileSync(HUB_OWNER, 'utf8')) as HubOwner) : undefined;
}

/**
 * Claims the hub for this checkout, or fails when another checkout's cluster still runs: starting
 * beside it would reuse some of its daemons (pid files) and clash with the rest (its CA, its ports).
 */
function claimHub(): void {
  const me: HubOwner = { stateDir: STATE_DIR, runDir: RUN_DIR };
  const other = hubOwner();
  if (other) {
    const live = other.stateDir === me.stateDir && other.runDir === me.runDir ? [] : liveDaemons(join(other.runDir, 'pids'));
    if (live.length > 0) {
      throw new Error(
        `another harness cluster holds netns ${NET.hubNs}: state ${other.stateDir}, run dir ${other.runDir} (running: ${live.join(', ')}). ` +
          `Stop it from its checkout first: PREWARM_CLUSTER_RUN=${other.runDir} npm run cluster -- down`,
      );
    }
  }
  writeFileSync(HUB_OWNER, JSON.stringify(me) + '\n');
}

/** Brings the control plane and registries up (idempotent: reuses running daemons). */
export async function up(opts: UpOptions = {}): Promise<void> {
  const log = opts.log ?? ((m: string) => console.error(`[cluster] ${m}`));
  const t0 = Date.now();
  checkPrerequisites([
    'etcd',
    'kubeApiserver',
    'kubeControllerManager',
    'kubeScheduler',
    'kubectl',
    'pause',
    ...(opts.kwok !== false ? (['kwok'] as const) : []),
  ]);
  claimHub();
  mkdirSync(CP_DIR, { recursive: true });
  ensureHub();
  await startRegistries(opts.registryProfile);
  log(`registries up, profile ${describeProfile(registryProfile())} (${Date.now() - t0} ms)`);
  ensureStandardImages();
  log(`standard images in registry (${Date.now() - t0} ms)`);
  const cp = {
    ...clusterControlPlane(CP_DIR),
    ...(opts.auditLog ? { auditLogPath: AUDIT_LOG } : {}),
    ...(opts.controllerManagerArgs ? { extraControllerManagerArgs: opts.controllerManagerArgs } : {}),
  };
  await startEtcd(cp);
  await startApiserver(cp);
  // Root netns reaches the apiserver only through 127.0.0.1 -> unix socket -> hub.
  startDaemon({
    name: 'fwd-apiserver-hub',
    argv: ['socat', `UNIX-LISTEN:${APISERVER_SOCK},fork,unlink-early,mode=600`, `TCP:${NET.hubIp}:${NET.apiserverPort}`],
    netns: NET.hubNs,
  });
  startDaemon({
    name: 'fwd-apiserver-root',
    argv: ['socat', `TCP-LISTEN:${NET.apiserverLocalPort},bind=127.0.0.1,fork,reuseaddr`, `UNIX-CONNECT:${APISERVER_SOCK}`],
  });
  writeKubeconfig(ADMIN_KUBECONFIG, apiserverUrl(), adminCert(), 'prewarm-admin');
  await waitApiserverReady(cp, apiserverUrl());
  log(`apiserver ready (${Date.now() - t0} ms)`);
  startControllerManager(cp);
  startScheduler(cp);
  await waitFor(
    'default service account',
    () => kubectl(['-n', 'default', 'get', 'serviceaccount', 'default', '-o', 'name'], { allowFail: true }).includes('default'),
    60_000,
    500,
  ).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}\n${tailLog('cp-controller-manager')}`);
  });
  log(`controller-manager and scheduler up (${Date.now() - t0} ms)`);
  if (opts.kwok !== false) {
    startKwok(ADMIN_KUBECONFIG);
    // kwok exits at once on a bad config ("no stages found"); fail here, not with pods stuck Pending.
    await sleep(2000);
    if (!daemonPid('kwok')) throw new Error(`kwok exited:\n${tailLog('kwok')}`);
    log('kwok up (manages only nodes annotated kwok.x-k8s.io/node=fake)');
  }
  // Nodes that existed before (e.g. after `down --keep`), restart them.
  for (const spec of listNodeSpecs()) {
    if (spec.bare) {
      if (!daemonPid(containerdDaemon(spec.name))) await startContainerd(spec);
    } else if (!daemonPid(kubeletDaemon(spec.name))) await startNode(spec);
  }
  log(`cluster up in ${Date.now() - t0} ms; kubeconfig ${ADMIN_KUBECONFIG}`);
}

export interface AddNodeOptions {
  labels?: Record<string, string>;
  taints?: Taint[];
  imageGc?: Partial<ImageGcPolicy>;
  verbosity?: number;
  /** The kubelet's `serializeImagePulls` (default false: parallel pulls). */
  serializeImagePulls?: boolean;
  kubeletExtra?: Record<string, unknown>;
  /** An image filesystem of its own, of this many MiB (see {@link NodeSpec.imageFsMiB}). */
  imageFsMiB?: number;
  /** Joins without a CNI config; a host-network pod in kube-system writes it (cni-stand-in.ts). */
  cniStandIn?: CniStandInOptions;
  /** Images in the node's containerd before its kubelet starts (see {@link NodeSpec.preloadImages}). */
  preloadImages?: readonly string[];
  /** Wait for Ready (default true). */
  wait?: boolean;
  timeoutMs?: number;
}

export function parseTaint(s: string): Taint {
  const m = /^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/.exec(s);
  if (!m?.[1] || !m[3]) throw new Error(`bad taint ${s}: want key[=value]:Effect`);
  return { key: m[1], ...(m[2] !== undefined ? { value: m[2] } : {}), effect: m[3] as Taint['effect'] };
}
export function parseLabel(s: string): [string, string] {
  const i = s.indexOf('=');
  if (i <= 0) throw new Error(`bad label ${s}: want key=value`);
  return [s.slice(0, i), s.slice(i + 1)];
}

const NODE_NAME = /^[a-z0-9]([-a-z0-9]{0,18}[a-z0-9])?$/;

/** Adds a real node and (by default) waits until it is Ready. Returns the time Ready was seen. */
export async function addNode(name: string, opts: AddNodeOptions = {}): Promise<{ readyAt: number; spec: NodeSpec }> {
  if (!NODE_NAME.test(name)) throw new Error(`node name ${name} must match ${NODE_NAME} (it names a netns)`);
  if (loadSpec(name)) throw new Error(`node ${name} already exists`);
  checkPrerequisites(['kubelet', 'kubeProxy', 'crictl', 'kubectl']);
  const spec: NodeSpec = {
    name,
    index: nextIndex(),
    labels: opts.labels ?? {},
    taints: opts.taints ?? [],
    imageGc: { ...DEFAULT_IMAGE_GC, ...(opts.imageGc ?? {}) },
    verbosity: opts.verbosity ?? 1,
    ...(opts.serializeImagePulls === undefined ? {} : { serializeImagePulls: opts.serializeImagePulls }),
    ...(opts.kubeletExtra ? { kubeletExtra: opts.kubeletExtra } : {}),
    ...(opts.imageFsMiB !== undefined ? { imageFsMiB: opts.imageFsMiB } : {}),
    ...(opts.cniStandIn !== undefined ? { cniStandIn: cniStandInSpec(opts.cniStandIn) } : {}),
    ...(opts.preloadImages?.length ? { preloadImages: opts.preloadImages } : {}),
  };
  if (spec.cniStandIn !== undefined) ensureCniStandInImage();
  await startNode(spec);
  if (spec.cniStandIn !== undefined) {
    const p = nodePaths(name);
    const pod = cniStandInPod(name, p.cniConfDir, cniConf(nodeNet(name, spec.index), p), spec.cniStandIn);
    kubectl(deleteCniStandInArgs(name), { allowFail: true });
    kubectl(['create', '-f', '-'], { input: JSON.stringify(pod) });
  }
  const adminLabels = Object.entries(spec.labels).filter(([k]) => !kubeletMaySetLabel(k));
  if (opts.wait === false && adminLabels.length === 0) return { readyAt: 0, spec };
  await waitFor(
    `node ${name} registered`,
    () => kubectl(['get', 'node', name, '-o', 'name'], { allowFail: true }).trim() !== '',
    opts.timeoutMs ?? 120_000,
    250,
  ).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}\n${tailLog(kubeletDaemon(name), 40)}`);
  });
  if (adminLabels.length) kubectl(['label', 'node', name, '--overwrite', ...adminLabels.map(([k, v]) => `${k}=${v}`)]);
  if (opts.wait === false) return { readyAt: 0, spec };
  const readyAt = await waitNodeReady(name, opts.timeoutMs ?? 120_000);
  return { readyAt, spec };
}

export async function waitNodeReady(name: string, timeoutMs = 120_000): Promise<number> {
  await waitFor(
    `node ${name} Ready`,
    () =>
      kubectl(['get', 'node', name, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'], { allowFail: true }).trim() ===
      'True',
    timeoutMs,
    200,
  ).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}\n${tailLog(kubeletDaemon(name), 40)}`);
  });
  return Date.now();
}

export async function removeNode(name: string): Promise<void> {
  const spec = loadSpec(name);
  if (!spec) throw new Error(`no such real node ${name}`);
  await destroyNode(name);
  if (spec.cniStandIn !== undefined) kubectl(deleteCniStandInArgs(name), { allowFail: true });
  kubectl(['delete', 'node', name, '--ignore-not-found', '--wait=false']);
}

export function images(name: string): string[] {
  return nodeImages(name);
}

export interface DownOptions {
  /** Also delete certificates and registry storage (images are rebuilt on next up). */
  purge?: boolean;
}

export async function down(opts: DownOptions = {}): Promise<void> {
  for (const spec of listNodeSpecs()) await destroyNode(spec.name);
  // Leftover node dirs without a spec (crashed add-node).
  const nodesDir = join(STATE_DIR, 'nodes');
  if (existsSync(nodesDir)) for (const n of readdirSync(nodesDir)) await destroyNode(n);
  await stopKwok();
  await stopControlPlane('cp');
  await stopDaemon('fwd-apiserver-root');
  await stopDaemon('fwd-apiserver-hub');
  await stopRegistries();
  await stopDaemon(KRUISE_MANAGER);
  // Whatever outlived its daemon (a shim, a container, a pod netns mount): not while another
  // checkout's cluster holds the hub, whose processes would match.
  const owner = hubOwner();
  if (owner === undefined || (owner.stateDir === STATE_DIR && owner.runDir === RUN_DIR)) await sweep();
  deleteNetns(NET.hubNs);
  rmSync(CP_DIR, { recursive: true, force: true });
  rmSync(ADMIN_KUBECONFIG, { force: true });
  if (opts.purge) {
    rmSync(STATE_DIR, { recursive: true, force: true });
  }
  rmSync(RUN_DIR, { recursive: true, force: true });
  if (hubOwner()?.stateDir === STATE_DIR) rmSync(HUB_OWNER, { force: true });
}

export interface StatusReport {
  up: boolean;
  /** The registry profile the nodes see (describeProfile). */
  registryProfile: string;
  hub: boolean;
  daemons: Record<string, number | null>;
  nodes: string;
  kubeconfig: string;
}

export async function status(): Promise<StatusReport> {
  const daemons: Record<string, number | null> = {};
  if (existsSync(PID_DIR)) {
    for (const f of readdirSync(PID_DIR).sort()) {
      const name = f.replace(/\.pid$/, '');
      daemons[name] = daemonPid(name) ?? null;
    }
  }
  const upNow = await isUp();
  return {
    up: upNow,
    registryProfile: describeProfile(registryProfile()),
    hub: netnsExists(NET.hubNs),
    daemons,
    nodes: upNow ? kubectl(['get', 'nodes', '-o', 'wide', '--show-labels'], { allowFail: true }) : '',
    kubeconfig: ADMIN_KUBECONFIG,
  };
}

export { CA_CRT, registryProfile, setRegistryProfile, stopNode };
