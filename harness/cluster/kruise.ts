/**
 * OpenKruise, a peer, installed in the harness cluster from its Go module the way its chart installs
 * it, for the tiers and benchmarks that compare prewarm with it:
 * - its CRDs, RBAC and webhook configurations are read from the module source that
 *   `harness/cluster/build.sh kruise` built from (GOMODCACHE), with the chart's names (`kruise-`
 *   prefix, namespace kruise-system); nothing of it is copied into this repository;
 * - kruise-manager runs in the hub netns with the `ImagePullJobGate` feature gate on. It makes its own
 *   webhook certificates, as the chart's default does; with WEBHOOK_HOST set (kruise's mode for a
 *   manager outside the cluster) it keeps them on disk and points the webhook configurations at
 *   https://<hub>:<port> with its CA, instead of at a Service;
 * - kruise-daemon runs once per real node as a process, not a DaemonSet pod: each harness node has
 *   its own containerd socket, and the daemon finds its CRI socket only under the fixed path
 *   /hostvarrun (the chart's hostPath mount of /var/run). So it runs in the node's netns, in a mount
 *   namespace of its own where the node's run folder is bound on /hostvarrun, as the harness runs
 *   kubelets. It talks to the apiserver as the chart's kruise-daemon ServiceAccount (a client
 *   certificate with that identity), since the kubelet's node identity is not granted NodeImages.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { BIN, CACHE_DIR, NET, RUN_DIR, STATE_DIR, VERSIONS } from './config.js';
import { nodeNet, type NodeNet } from './net.js';
import { kruiseDaemonName, nodePaths } from './node.js';
import { ensureCert, writeKubeconfig } from './pki.js';
import { daemonPid, run, startDaemon, stopDaemon, tailLog } from './sh.js';
import { waitFor } from '../time.js';

export const KRUISE_NS = 'kruise-system';
/** The namespace kruise-manager copies pull secrets into for kruise-daemon (chart: kruise-daemon-config). */
export const KRUISE_DAEMON_CONFIG_NS = 'kruise-daemon-config';
/** The chart's feature gates are all at their defaults; ImagePullJob needs this one on. */
export const KRUISE_FEATURE_GATES = 'ImagePullJobGate=true';
/** The name of the harness daemon of kruise-manager. */
export const KRUISE_MANAGER = 'kruise-manager';
const WEBHOOK_PORT = 9876;
/** Where kruise-daemon looks for the CRI socket: a constant of its code, the chart's hostPath mount. */
const HOSTVARRUN = '/hostvarrun';
const KRUISE_DIR = join(STATE_DIR, 'kruise');
/** Present while /hostvarrun is a folder the harness made (and may remove). */
const HOSTVARRUN_MADE = join(RUN_DIR, 'hostvarrun.made');
/** The module source the binaries were built from. */
export const KRUISE_MODULE_DIR = join(CACHE_DIR, 'go', 'mod', 'github.com', 'openkruise', `kruise@${VERSIONS.kruise}`);

/** Throws, naming the command that builds them, unless the binaries and the module source exist. */
export function requireKruise(): void {
  const missing = [BIN.kruiseManager, BIN.kruiseDaemon, join(KRUISE_MODULE_DIR, 'config', 'crd', 'bases')].filter((f) => !existsSync(f));
  if (missing.length)
    throw new Error(`OpenKruise ${VERSIONS.kruise} is not built (${missing.join(', ')}): run harness/cluster/build.sh kruise`);
}

/** An object of the module's config/ folder. */
export type Obj = Record<string, unknown> & { kind: string; metadata: { name: string; namespace?: string } };
const CLUSTER_SCOPED = new Set([
  'ClusterRole',
  'ClusterRoleBinding',
  'Namespace',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
]);

function moduleDocs(rel: string): Obj[] {
  const text = readFileSync(join(KRUISE_MODULE_DIR, rel), 'utf8');
  return parseAllDocuments(text)
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null && typeof o === 'object' && typeof o.kind === 'string');
}

/** What the module's kustomization does to config/: the `kruise-` name prefix and namespace kruise-system. */
export function kustomize(o: Obj): Obj {
  const ns = (n: unknown): string => (n === 'system' ? KRUISE_NS : String(n));
  const out: Obj = { ...o, metadata: { ...o.metadata, name: `kruise-${o.metadata.name}` } };
  if (CLUSTER_SCOPED.has(o.kind)) delete out.metadata.namespace;
  else out.metadata.namespace = KRUISE_NS;
  const roleRef = o['roleRef'] as { name: string } | undefined;
  if (roleRef) out['roleRef'] = { ...roleRef, name: `kruise-${roleRef.name}` };
  const subjects = o['subjects'] as { name: string; namespace?: string }[] | undefined;
  if (subjects) out['subjects'] = subjects.map((s) => ({ ...s, name: `kruise-${s.name}`, namespace: ns(s.namespace) }));
  const hooks = o['webhooks'] as { clientConfig: { service?: { name: string; namespace: string } } }[] | undefined;
  if (hooks)
    out['webhooks'] = hooks.map((h) => {
      const svc = h.clientConfig.service;
      return svc
        ? { ...h, clientConfig: { ...h.clientConfig, service: { ...svc, name: `kruise-${svc.name}`, namespace: ns(svc.namespace) } } }
        : h;
    });
  return out;
}

/** The chart's objects besides the workloads: namespaces, RBAC and the webhook configurations. */
export function kruiseObjects(): Obj[] {
  const namespaces: Obj[] = [KRUISE_NS, KRUISE_DAEMON_CONFIG_NS].map((name) => ({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name },
  }));
  const rbac = ['role', 'role_binding', 'leader_election_role', 'leader_election_role_binding', 'daemon_role', 'daemon_role_binding'];
  return [
    ...namespaces,
    ...rbac.flatMap((f) => moduleDocs(`config/rbac/${f}.yaml`)).map(kustomize),
    ...moduleDocs('config/webhook/manifests.yaml').map(kustomize),
  ];
}

function kubectlAs(kubeconfig: string, args: string[], input?: string): string {
  return run([BIN.kubectl, `--kubeconfig=${kubeconfig}`, ...args], { timeoutMs: 120_000, ...(input !== undefined ? { input } : {}) })
    .stdout;
}

/** A kubeconfig for the chart's ServiceAccount `name` of kruise-system, by client certificate. */
function serviceAccountKubeconfig(name: string, file: string): string {
  const user = `system:serviceaccount:${KRUISE_NS}:${name}`;
  const cert = ensureCert({ name, cn: user, orgs: ['system:serviceaccounts', `system:serviceaccounts:${KRUISE_NS}`], usage: 'client' });
  writeKubeconfig(file, `https://${NET.hubIp}:${NET.apiserverPort}`, cert, user);
  return file;
}

/**
 * Installs OpenKruise (CRDs, RBAC, webhook configurations) and starts kruise-manager; resolves once
 * its webhooks admit an ImageListPullJob. Idempotent. `adminKubeconfig` is the harness's.
 */
export async function installKruise(adminKubeconfig: string): Promise<void> {
  requireKruise();
  mkdirSync(join(KRUISE_DIR, 'certs'), { recursive: true });
  kubectlAs(adminKubeconfig, [
    'apply',
    '--server-side',
    '--force-conflicts',
    '--field-manager=prewarm-harness',
    '-f',
    join(KRUISE_MODULE_DIR, 'config', 'crd', 'bases'),
  ]);
  kubectlAs(adminKubeconfig, [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/imagelistpulljobs.apps.kruise.io',
    'crd/nodeimages.apps.kruise.io',
  ]);
  const objects = kruiseObjects();
  kubectlAs(
    adminKubeconfig,
    ['apply', '--server-side', '--force-conflicts', '--field-manager=prewarm-harness', '-f', '-'],
    objects.map((o) => JSON.stringify(o)).join('\n'),
  );
  const kubeconfig = serviceAccountKubeconfig('kruise-manager', join(KRUISE_DIR, 'manager.kubeconfig'));
  startDaemon({
    name: KRUISE_MANAGER,
    netns: NET.hubNs,
    env: {
      ...process.env,
      KUBECONFIG: kubeconfig,
      POD_NAMESPACE: KRUISE_NS,
      WEBHOOK_HOST: NET.hubIp,
      WEBHOOK_PORT: String(WEBHOOK_PORT),
      WEBHOOK_CERT_DIR: join(KRUISE_DIR, 'certs'),
    },
    argv: [
      BIN.kruiseManager,
      // The chart's arguments, on the hub's loopback where they name a listening address.
      '--enable-leader-election',
      `--leader-election-namespace=${KRUISE_NS}`,
      '--logtostderr=true',
      '--v=4',
      '--metrics-addr=127.0.0.1:8080',
      '--health-probe-addr=127.0.0.1:8000',
      '--enable-pprof=false',
      `--feature-gates=${KRUISE_FEATURE_GATES}`,
      '--sync-period=0',
    ],
  });
  await waitFor('kruise-manager webhooks admitting an ImageListPullJob', () => admitsProbe(adminKubeconfig), 180_000, 1_000).catch(
    (e: unknown) => {
      throw new Error(`${(e as Error).message}\n${tailLog(KRUISE_MANAGER, 40)}`);
    },
  );
}

/** A server-side dry run through kruise's admission webhooks (they must answer, with its CA). */
function admitsProbe(kubeconfig: string): boolean {
  if (!daemonPid(KRUISE_MANAGER)) throw new Error('kruise-manager exited');
  const probe = {
    apiVersion: 'apps.kruise.io/v1alpha1',
    kind: 'ImageListPullJob',
    metadata: { name: 'prewarm-harness-probe', namespace: 'default' },
    spec: { images: ['probe.invalid/probe:v1'], completionPolicy: { type: 'Never' } },
  };
  return (
    run([BIN.kubectl, `--kubeconfig=${kubeconfig}`, 'create', '--dry-run=server', '-f', '-'], {
      input: JSON.stringify(probe),
      allowFail: true,
      timeoutMs: 30_000,
    }).code === 0
  );
}

/** Stops kruise-manager and removes its webhook configurations (its CRDs and objects stay). */
export async function uninstallKruise(adminKubeconfig: string): Promise<void> {
  await stopDaemon(KRUISE_MANAGER, 10_000);
  const hooks = kruiseObjects().filter((o) => o.kind.endsWith('WebhookConfiguration'));
  for (const h of hooks)
    run([BIN.kubectl, `--kubeconfig=${adminKubeconfig}`, 'delete', h.kind, h.metadata.name, '--ignore-not-found'], {
      allowFail: true,
      timeoutMs: 60_000,
    });
}

/**
 * Starts kruise-daemon for a real node: in its netns, pulling through its containerd socket (bound
 * on /hostvarrun in a mount namespace of its own), with the chart's arguments.
 */
export function startKruiseDaemon(node: string, index: number): void {
  requireKruise();
  const n: NodeNet = nodeNet(node, index);
  const p = nodePaths(node);
  if (!existsSync(HOSTVARRUN)) {
    mkdirSync(HOSTVARRUN);
    mkdirSync(RUN_DIR, { recursive: true });
    writeFileSync(HOSTVARRUN_MADE, '');
  }
  const kubeconfig = serviceAccountKubeconfig('kruise-daemon', join(p.dir, 'kruise-daemon.kubeconfig'));
  const socketDir = join(p.containerdSock, '..');
  const socketFile = p.containerdSock.slice(socketDir.length + 1);
  startDaemon({
    name: kruiseDaemonName(node),
    netns: n.ns,
    env: { ...process.env, KUBECONFIG: kubeconfig, NODE_NAME: node },
    execs: BIN.kruiseDaemon,
    argv: [
      'unshare',
      '--mount',
      '--propagation',
      'private',
      '--',
      'sh',
      '-c',
      `mount --bind "$0" ${HOSTVARRUN} && exec "$@"`,
      socketDir,
      BIN.kruiseDaemon,
      '--logtostderr=true',
      '-v=4',
      `--feature-gates=${KRUISE_FEATURE_GATES}`,
      `--socket-file=${socketFile}`,
      '--addr=127.0.0.1:10221',
      '--enable-pprof=false',
    ],
  });
}

/** Stops a node's kruise-daemon (a no-op where none runs). */
export async function stopKruiseDaemon(node: string): Promise<void> {
  await stopDaemon(kruiseDaemonName(node), 5_000);
}

/** Removes the /hostvarrun mount point, if the harness made it and it is empty (no daemon uses it). */
export function removeHostVarRun(): void {
  if (!existsSync(HOSTVARRUN_MADE)) return;
  if (existsSync(HOSTVARRUN) && readdirSync(HOSTVARRUN).length === 0) rmdirSync(HOSTVARRUN);
  rmSync(HOSTVARRUN_MADE, { force: true });
}

/** What a user who wants a pool's nodes, new ones included, kept warm writes for OpenKruise. */
export interface KruiseJobOptions {
  name: string;
  namespace: string;
  images: readonly string[];
  /** The pool's node selector (matchLabels). */
  nodeLabels: Readonly<Record<string, string>>;
  /** Nodes pulled at once. @default unset: OpenKruise's default, 1 */
  parallelism?: number;
  /** Names of pull secrets in `namespace`. @default none */
  pullSecrets?: readonly string[];
}

/**
 * An ImageListPullJob that keeps pulling onto every matching node, new ones included: only
 * `completionPolicy: Never` does (a job of the default policy, Always, ends once the nodes of
 * the moment have pulled).
 */
export function imageListPullJob(o: KruiseJobOptions): Record<string, unknown> {
  return {
    apiVersion: 'apps.kruise.io/v1alpha1',
    kind: 'ImageListPullJob',
    metadata: { name: o.name, namespace: o.namespace },
    spec: {
      images: [...o.images],
      selector: { matchLabels: { ...o.nodeLabels } },
      completionPolicy: { type: 'Never' },
      ...(o.parallelism !== undefined ? { parallelism: o.parallelism } : {}),
      ...(o.pullSecrets?.length ? { pullSecrets: [...o.pullSecrets] } : {}),
    },
  };
}
