/**
 * Real test nodes: each in its own netns with its own containerd (own root, state, socket, CNI
 * config and pod subnet, hence its own image store), kubelet and kube-proxy (iptables).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, CNI_BIN_DIR, IMAGES, NET, RUN_DIR, STATE_DIR } from './config.js';
import { deleteNetns, ensureNodeNet, deleteNodeNet, nodeNet, type NodeNet } from './net.js';
import { CA_CRT, ensureCert, writeKubeconfig } from './pki.js';
import { CNI_CONF_FILE, type CniStandInSpec } from './cni-stand-in.js';
import { CERTS_D } from './registry.js';
import { daemonPid, killPid, run, runAsync, startDaemon, stopDaemon, tailLog } from './sh.js';
import { waitFor } from '../time.js';

export interface Taint {
  key: string;
  value?: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
}
export interface ImageGcPolicy {
  highThresholdPercent: number;
  lowThresholdPercent: number;
  /** Go duration, e.g. "2m", "0s". */
  minimumGcAge: string;
  /** Go duration; "0s" disables max-age GC. */
  maximumGcAge: string;
}
export interface NodeSpec {
  name: string;
  index: number;
  labels: Record<string, string>;
  taints: Taint[];
  imageGc: ImageGcPolicy;
  /** kubelet --v level */
  verbosity: number;
  /**
   * `serializeImagePulls` of the kubelet: true pulls one image at a time (the upstream default);
   * false (the harness default) pulls up to {@link PARALLEL_IMAGE_PULLS} at once.
   */
  serializeImagePulls?: boolean;
  /** Extra KubeletConfiguration fields (YAML-compatible JSON). */
  kubeletExtra?: Record<string, unknown>;
  /** A bare runtime: netns + containerd only, no kubelet (raw-pull baselines). */
  bare?: boolean;
  /**
   * A CNI stand-in writes the node's CNI config (cni-stand-in.ts); until then the node is
   * NotReady, as a cloud node is until its CNI runs. @default the config is there from the start
   */
  cniStandIn?: CniStandInSpec;
  /**
   * An image filesystem of its own of this many MiB: a sparse ext4 file, loop-mounted on
   * containerd's root, so the kubelet's imageFs (and image GC) sees a small disk. Needs root and
   * a free loop device. @default the host's file system
   */
  imageFsMiB?: number;
  /**
   * Images put in the node's containerd before its kubelet starts, beside pause: a node image
   * that carries them (the bench's `-baked` configurations carry the reconciler's). @default none
   */
  preloadImages?: readonly string[];
}

export const DEFAULT_IMAGE_GC: ImageGcPolicy = {
  highThresholdPercent: 85,
  lowThresholdPercent: 80,
  minimumGcAge: '2m',
  maximumGcAge: '0s',
};

/** `maxParallelImagePulls` of a kubelet that pulls in parallel. */
export const PARALLEL_IMAGE_PULLS = 5;

export const NODES_DIR = join(STATE_DIR, 'nodes');

export interface NodePaths {
  dir: string;
  containerdRoot: string;
  containerdState: string;
  containerdSock: string;
  containerdConfig: string;
  cniConfDir: string;
  ipamDir: string;
  kubeletRoot: string;
  kubeletConfig: string;
  kubeconfig: string;
  podLogs: string;
  proxyConfig: string;
  proxyKubeconfig: string;
  resolvConf: string;
  specFile: string;
  runcRoot: string;
  cgroupRoot: string;
}

export function nodePaths(name: string): NodePaths {
  const dir = join(NODES_DIR, name);
  const run = join(RUN_DIR, 'n', name);
  return {
    dir,
    containerdRoot: join(dir, 'containerd'),
    containerdState: join(run, 'containerd'),
    containerdSock: join(run, 'containerd.sock'),
    containerdConfig: join(dir, 'containerd.toml'),
    cniConfDir: join(dir, 'cni', 'net.d'),
    ipamDir: join(dir, 'cni', 'ipam'),
    kubeletRoot: join(dir, 'kubelet'),
    kubeletConfig: join(dir, 'kubelet-config.yaml'),
    kubeconfig: join(dir, 'kubelet.kubeconfig'),
    podLogs: join(dir, 'pod-logs'),
    proxyConfig: join(dir, 'kube-proxy.yaml'),
    proxyKubeconfig: join(dir, 'kube-proxy.kubeconfig'),
    resolvConf: join(dir, 'resolv.conf'),
    specFile: join(dir, 'node.json'),
    runcRoot: join(run, 'runc'),
    cgroupRoot: `/prewarm/${name}`,
  };
}

export function saveSpec(spec: NodeSpec): void {
  const p = nodePaths(spec.name);
  mkdirSync(p.dir, { recursive: true });
  writeFileSync(p.specFile, JSON.stringify(spec, null, 2) + '\n');
}
export function loadSpec(name: string): NodeSpec | undefined {
  const f = nodePaths(name).specFile;
  return existsSync(f) ? (JSON.parse(readFileSync(f, 'utf8')) as NodeSpec) : undefined;
}
export function listNodeSpecs(): NodeSpec[] {
  if (!existsSync(NODES_DIR)) return [];
  return readdirSync(NODES_DIR)
    .map((n) => loadSpec(n))
    .filter((s): s is NodeSpec => s !== undefined)
    .sort((a, b) => a.index - b.index);
}
export function nextIndex(): number {
  const used = new Set(listNodeSpecs().map((s) => s.index));
  for (let i = 1; i < 200; i++) if (!used.has(i)) return i;
  throw new Error('no free node index');
}

function containerdToml(p: NodePaths): string {
  return `version = 2
root = "${p.containerdRoot}"
state = "${p.containerdState}"
oom_score = 0

[grpc]
  address = "${p.containerdSock}"

[ttrpc]
  address = ""

[debug]
  level = "info"

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "${join(p.containerdRoot, 'opt')}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${IMAGES.pause}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  enable_selinux = false
  # This machine withholds CAP_SYS_RESOURCE: negative oom_score_adj (pause gets -998) fails in
  # runc init ("can't get final child's PID from pipe"). Clamp to containerd's own score.
  restrict_oom_score_adj = true
  max_concurrent_downloads = 3
  # Pod network namespaces under the node's state folder, not /var/run/netns: they go with the node.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${p.runcRoot}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN_DIR}"
    conf_dir = "${p.cniConfDir}"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "${CERTS_D}"
`;
}

/** The node's CNI config: a bridge on its own pod subnet. */
export function cniConf(n: NodeNet, p: NodePaths): string {
  return JSON.stringify(
    {
      cniVersion: '0.4.0',
      name: 'prewarm',
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            dataDir: p.ipamDir,
            ranges: [[{ subnet: n.podCidr, gateway: n.podGateway }]],
            routes: [{ dst: '0.0.0.0/0' }],
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  );
}

const CGROUP_CONTROLLERS = ['cpu', 'cpuacct', 'cpuset', 'memory', 'devices', 'freezer', 'blkio', 'pids', 'systemd'];

function ensureCgroupRoot(root: string): void {
  for (const c of CGROUP_CONTROLLERS) {
    const base = `/sys/fs/cgroup/${c}`;
    if (!existsSync(base)) continue;
    let cur = base;
    for (const part of root.split('/').filter(Boolean)) {
      const parent = cur;
      cur = join(cur, part);
      if (!existsSync(cur)) mkdirSync(cur);
      if (c === 'cpuset') {
        for (const f of ['cpuset.cpus', 'cpuset.mems']) {
          if (readFileSync(join(cur, f), 'utf8').trim() === '') {
            writeFileSync(join(cur, f), readFileSync(join(parent, f), 'utf8').trim());
          }
        }
      }
    }
  }
}

function removeCgroupTree(root: string): void {
  for (const c of CGROUP_CONTROLLERS) {
    const dir = `/sys/fs/cgroup/${c}${root}`;
    if (existsSync(dir)) run(['find', dir, '-depth', '-type', 'd', '-exec', 'rmdir', '{}', ';'], { allowFail: true });
  }
}

function yamlish(obj: unknown): string {
  // JSON is valid YAML; the kubelet and kube-proxy accept it.
  return JSON.stringify(obj, null, 2) + '\n';
}

function kubeletConfig(spec: NodeSpec, n: NodeNet, p: NodePaths): Record<string, unknown> {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: CA_CRT },
    },
    authorization: { mode: 'Webhook' },
    address: n.ip,
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    cgroupDriver: 'cgroupfs',
    cgroupRoot: p.cgroupRoot,
    cgroupsPerQOS: true,
    failCgroupV1: false,
    failSwapOn: false,
    containerRuntimeEndpoint: `unix://${p.containerdSock}`,
    imageServiceEndpoint: `unix://${p.containerdSock}`,
    podLogsDir: p.podLogs,
    resolvConf: p.resolvConf,
    clusterDomain: 'cluster.local',
    imageGCHighThresholdPercent: spec.imageGc.highThresholdPercent,
    imageGCLowThresholdPercent: spec.imageGc.lowThresholdPercent,
    imageMinimumGCAge: spec.imageGc.minimumGcAge,
    imageMaximumGCAge: spec.imageGc.maximumGcAge,
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%', 'nodefs.inodesFree': '1%' },
    evictionPressureTransitionPeriod: '10s',
    registerNode: true,
    registerWithTaints: spec.taints.map((t) => ({ key: t.key, ...(t.value !== undefined ? { value: t.value } : {}), effect: t.effect })),
    maxPods: 110,
    nodeStatusUpdateFrequency: '5s',
    nodeStatusReportFrequency: '1m',
    syncFrequency: '10s',
    fileCheckFrequency: '20s',
    // The kubelet refuses maxParallelImagePulls > 1 with serial pulls, so it is left unset there.
    serializeImagePulls: spec.serializeImagePulls ?? false,
    ...(spec.serializeImagePulls === true ? {} : { maxParallelImagePulls: PARALLEL_IMAGE_PULLS }),
    rotateCertificates: false,
    serverTLSBootstrap: false,
    protectKernelDefaults: false,
    enableControllerAttachDetach: true,
    localStorageCapacityIsolation: true,
    containerLogMaxSize: '5Mi',
    containerLogMaxFiles: 2,
    shutdownGracePeriod: '0s',
    ...(spec.kubeletExtra ?? {}),
  };
}

/** Label prefixes a kubelet may set on itself (NodeRestriction); other k8s.io labels go via admin. */
export function kubeletMaySetLabel(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return true;
  const prefix = key.slice(0, slash);
  const isK8s = (d: string): boolean => prefix === d || prefix.endsWith(`.${d}`);
  if (!isK8s('kubernetes.io') && !isK8s('k8s.io')) return true;
  if (isK8s('kubelet.kubernetes.io') || isK8s('node.kubernetes.io')) return true;
  return [
    'kubernetes.io/hostname',
    'kubernetes.io/arch',
    'kubernetes.io/os',
    'beta.kubernetes.io/arch',
    'beta.kubernetes.io/os',
    'beta.kubernetes.io/instance-type',
    'failure-domain.beta.kubernetes.io/region',
    'failure-domain.beta.kubernetes.io/zone',
    'topology.kubernetes.io/region',
    'topology.kubernetes.io/zone',
  ].includes(key);
}

export function containerdDaemon(name: string): string {
  return `node-${name}-containerd`;
}
export function kubeletDaemon(name: string): string {
  return `node-${name}-kubelet`;
}
export function proxyDaemon(name: string): string {
  return `node-${name}-kube-proxy`;
}
/** A node's kruise-daemon, where a peer benchmark runs OpenKruise (kruise.ts). */
export function kruiseDaemonName(name: string): string {
  return `node-${name}-kruise-daemon`;
}

/** Whether something is mounted on `dir` (an absolute path). */
function isMountPoint(dir: string): boolean {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .some((l) => l.split(' ')[4] === dir);
}

/**
 * Mounts the node's own image filesystem on containerd's root: made once (sparse, ext4 without
 * reserved blocks, so capacity is what the test asked for), mounted again after a stop
 * ({@link stopNode} unmounts everything under the node's folder).
 */
function mountImageFs(p: NodePaths, mib: number): void {
  if (isMountPoint(p.containerdRoot)) return;
  const image = join(p.dir, 'imagefs.ext4');
  if (!existsSync(image)) {
    run(['truncate', '-s', `${mib}M`, image]);
    run(['mkfs.ext4', '-F', '-q', '-m', '0', image]);
  }
  run(['mount', '-o', 'loop', image, p.containerdRoot]);
}

export async function startContainerd(spec: NodeSpec): Promise<void> {
  const n = nodeNet(spec.name, spec.index);
  const p = nodePaths(spec.name);
  ensureNodeNet(n);
  for (const d of [p.containerdRoot, p.containerdState, p.cniConfDir, p.ipamDir, p.runcRoot]) mkdirSync(d, { recursive: true });
  if (spec.imageFsMiB !== undefined) mountImageFs(p, spec.imageFsMiB);
  writeFileSync(p.containerdConfig, containerdToml(p));
  // With a CNI stand-in, its pod writes the config (cni-stand-in.ts), as a CNI's does.
  if (spec.cniStandIn === undefined) writeFileSync(join(p.cniConfDir, CNI_CONF_FILE), cniConf(n, p));
  startDaemon({ name: containerdDaemon(spec.name), argv: ['containerd', '--config', p.containerdConfig], netns: n.ns });
  await waitFor(
    `containerd of ${spec.name}`,
    () => run(['ctr', '-a', p.containerdSock, 'version'], { allowFail: true, timeoutMs: 5_000 }).code === 0,
    30_000,
  ).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}\n${tailLog(containerdDaemon(spec.name))}`);
  });
  if (!spec.bare) preloadImages(p, n.ns, [IMAGES.pause, ...(spec.preloadImages ?? [])]);
}

/**
 * Puts images in the node's containerd before its kubelet starts, as a node image carries them:
 * the sandbox (pause) image on every node (EKS, GKE and AKS images and kind's carry it, and
 * kubeadm pulls it in preflight; without it, the first pod on a harness node also waited for that
 * pull, which no cloud node does), and those of {@link NodeSpec.preloadImages}. Those already
 * there (a restarted node) are left as they are.
 */
function preloadImages(p: NodePaths, netns: string, refs: readonly string[]): void {
  const listed = new Set(
    run(['ctr', '-a', p.containerdSock, '-n', 'k8s.io', 'images', 'ls', '-q'], { timeoutMs: 30_000 }).stdout.split('\n'),
  );
  // ctr pull asks the registry even for an image it has; a restarted node must not need the registry.
  for (const ref of refs.filter((r) => !listed.has(r)))
    // From the node's network namespace, where the registries are reachable, as containerd's own pulls are.
    run(['ctr', '-a', p.containerdSock, '-n', 'k8s.io', 'images', 'pull', '--plain-http', '--hosts-dir', CERTS_D, ref], {
      timeoutMs: 60_000,
      netns,
    });
}

/**
 * The device plugin manager's socket: fixed by the kubelet whatever `--root-dir` says, so every
 * kubelet of the harness shares it. Each one removes it and listens again at start; two starting at
 * once can both remove it, and the second listen then fails and the kubelet exits.
 */
const DEVICE_PLUGIN_SOCKET = '/var/lib/kubelet/device-plugins/kubelet.sock';

/** Kubelet starts, one after another (see {@link DEVICE_PLUGIN_SOCKET}). */
let kubeletStarts: Promise<void> = Promise.resolve();

/** Resolves once the kubelet started at `since` has its device plugin socket, or after 20 s. */
async function deviceSocketBound(since: number): Promise<void> {
  const bound = (): boolean => {
    try {
      return statSync(DEVICE_PLUGIN_SOCKET).ctimeMs >= since;
    } catch {
      return false;
    }
  };
  await waitFor('the kubelet device plugin socket', bound, 20_000, 100).catch(() => undefined);
}

export function startKubelet(spec: NodeSpec): Promise<void> {
  const started = kubeletStarts.then(() => startKubeletNow(spec));
  kubeletStarts = started.catch(() => undefined);
  return started;
}

async function startKubeletNow(spec: NodeSpec): Promise<void> {
  const n = nodeNet(spec.name, spec.index);
  const p = nodePaths(spec.name);
  const server = `https://${NET.hubIp}:${NET.apiserverPort}`;
  const cert = ensureCert({ name: `node-${spec.name}`, cn: `system:node:${spec.name}`, orgs: ['system:nodes'], usage: 'client' });
  writeKubeconfig(p.kubeconfig, server, cert, `system:node:${spec.name}`);
  mkdirSync(p.kubeletRoot, { recursive: true });
  mkdirSync(p.podLogs, { recursive: true });
  writeFileSync(p.resolvConf, 'nameserver 127.0.0.1\noptions ndots:1\n');
  writeFileSync(p.kubeletConfig, yamlish(kubeletConfig(spec, n, p)));
  ensureCgroupRoot(p.cgroupRoot);
  const selfLabels = Object.entries(spec.labels).filter(([k]) => kubeletMaySetLabel(k));
  const argv = [
    BIN.kubelet,
    `--config=${p.kubeletConfig}`,
    `--kubeconfig=${p.kubeconfig}`,
    `--root-dir=${p.kubeletRoot}`,
    `--hostname-override=${spec.name}`,
    `--node-ip=${n.ip}`,
    `--v=${spec.verbosity}`,
  ];
  if (selfLabels.length) argv.push(`--node-labels=${selfLabels.map(([k, v]) => `${k}=${v}`).join(',')}`);
  const since = Date.now() - 1;
  startDaemon({ name: kubeletDaemon(spec.name), argv, netns: n.ns });
  await deviceSocketBound(since);
}

export function startKubeProxy(spec: NodeSpec): void {
  const n = nodeNet(spec.name, spec.index);
  const p = nodePaths(spec.name);
  const cert = ensureCert({ name: 'kube-proxy', cn: 'system:kube-proxy', usage: 'client' });
  writeKubeconfig(p.proxyKubeconfig, `https://${NET.hubIp}:${NET.apiserverPort}`, cert, 'system:kube-proxy');
  writeFileSync(
    p.proxyConfig,
    yamlish({
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      clientConnection: { kubeconfig: p.proxyKubeconfig },
      mode: 'iptables',
      clusterCIDR: NET.clusterCidr,
      hostnameOverride: spec.name,
      bindAddress: n.ip,
      healthzBindAddress: '127.0.0.1:10256',
      metricsBindAddress: '127.0.0.1:10249',
      // sysctls that are global (or read-only) outside the init netns: leave them alone.
      conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
      iptables: { syncPeriod: '10s', minSyncPeriod: '1s' },
      detectLocalMode: 'ClusterCIDR',
    }),
  );
  startDaemon({ name: proxyDaemon(spec.name), argv: [BIN.kubeProxy, `--config=${p.proxyConfig}`, '--v=1'], netns: n.ns });
}

export async function startNode(spec: NodeSpec): Promise<void> {
  saveSpec(spec);
  await startContainerd(spec);
  await startKubelet(spec);
  startKubeProxy(spec);
}

/** Restarts only the kubelet (e.g. to trigger an image-GC pass at start-up). */
export async function restartKubelet(spec: NodeSpec): Promise<void> {
  await stopDaemon(kubeletDaemon(spec.name), 15_000);
  await startKubelet(spec);
}

/** Shim pids of a node's containerd (they outlive containerd itself). */
function shimPids(p: NodePaths): number[] {
  const base = join(p.containerdState, 'io.containerd.runtime.v2.task');
  const pids: number[] = [];
  if (!existsSync(base)) return pids;
  for (const ns of readdirSync(base)) {
    for (const id of readdirSync(join(base, ns))) {
      const f = join(base, ns, id, 'shim.pid');
      if (existsSync(f)) {
        const pid = Number(readFileSync(f, 'utf8').trim());
        if (pid > 0) pids.push(pid);
      }
    }
  }
  return [...new Set(pids)];
}

function unmountUnder(prefix: string): void {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => m.startsWith(prefix + '/'))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts) run(['umount', '-l', m], { allowFail: true });
}

/** Stops kubelet, kube-proxy, all containers and containerd of a node; keeps its data. */
export async function stopNode(name: string): Promise<void> {
  const p = nodePaths(name);
  await stopDaemon(kubeletDaemon(name), 15_000);
  await stopDaemon(proxyDaemon(name), 5_000);
  await stopDaemon(kruiseDaemonName(name), 5_000);
  if (daemonPid(containerdDaemon(name)) && existsSync(BIN.crictl)) {
    const endpoint = `unix://${p.containerdSock}`;
    run([BIN.crictl, '--runtime-endpoint', endpoint, '--timeout', '20s', 'rmp', '-af'], { allowFail: true, timeoutMs: 60_000 });
  }
  const shims = shimPids(p);
  await stopDaemon(containerdDaemon(name), 10_000);
  for (const pid of shims) await killPid(pid, 3_000);
  unmountUnder(p.dir);
  unmountUnder(p.containerdState);
}

/** Stops a node and deletes its data, netns and cgroups. */
export async function destroyNode(name: string): Promise<void> {
  const spec = loadSpec(name);
  await stopNode(name);
  const p = nodePaths(name);
  removeCgroupTree(p.cgroupRoot);
  if (spec) deleteNodeNet(nodeNet(name, spec.index));
  else deleteNetns(`pw-${name}`);
  rmSync(p.dir, { recursive: true, force: true });
  rmSync(join(RUN_DIR, 'n', name), { recursive: true, force: true });
}

/** crictl against a node's containerd. */
export function crictl(name: string, args: string[], allowFail = false): string {
  const p = nodePaths(name);
  return run(
    [
      BIN.crictl,
      '--runtime-endpoint',
      `unix://${p.containerdSock}`,
      '--image-endpoint',
      `unix://${p.containerdSock}`,
      '--timeout',
      '60s',
      ...args,
    ],
    {
      allowFail,
      timeoutMs: 300_000,
    },
  ).stdout;
}

function imageRefsArgv(name: string): string[] {
  return ['ctr', '-a', nodePaths(name).containerdSock, '-n', 'k8s.io', 'images', 'ls', '-q'];
}

/** The references (repo:tag) in `ctr images ls -q` output; digest-only entries dropped. */
function imageRefs(out: string): string[] {
  return out
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('sha256:'));
}

/** Image references (repo:tag) present in a node's containerd (k8s.io namespace). */
export function nodeImages(name: string): string[] {
  return imageRefs(run(imageRefsArgv(name)).stdout);
}

/** {@link nodeImages} without blocking the event loop (several nodes polled at once); empty when ctr fails. */
export async function nodeImagesAsync(name: string): Promise<string[]> {
  return imageRefs((await runAsync(imageRefsArgv(name), { allowFail: true, timeoutMs: 30_000 })).stdout);
}

/** Manifest digest of each image reference (repo:tag) in a node's containerd (k8s.io namespace). */
export function nodeImageDigests(name: string): Map<string, string> {
  const p = nodePaths(name);
  const out = run(['ctr', '-a', p.containerdSock, '-n', 'k8s.io', 'images', 'ls']).stdout;
  const m = new Map<string, string>();
  // Columns: REF TYPE DIGEST SIZE PLATFORMS LABELS (whitespace-separated; REF has no spaces).
  for (const line of out.split('\n').slice(1)) {
    const [ref, , digest] = line.trim().split(/\s+/);
    if (ref && digest?.startsWith('sha256:') && !ref.startsWith('sha256:')) m.set(ref, digest);
  }
  return m;
}
