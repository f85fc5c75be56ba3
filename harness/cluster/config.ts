/**
 * Static layout of the prewarm test cluster: versions, directories, addresses and binaries.
 *
 * Network rule of this harness: every server listens on loopback or on an address inside a
 * network namespace the harness creates. The control plane and registries live in the "hub"
 * netns (bridge 10.250.0.1/24); each real node has its own netns on that bridge. Pod and service
 * CIDRs exist only inside those namespaces. The root netns reaches the apiserver through a
 * unix-socket forward on 127.0.0.1.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const HARNESS_DIR = dirname(fileURLToPath(import.meta.url));
export const REPO_DIR = resolve(HARNESS_DIR, '..', '..');

function readVersions(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(join(HARNESS_DIR, 'versions.sh'), 'utf8').split('\n')) {
    const m = /^([A-Z0-9_]+)=(\S+)/.exec(line.trim());
    if (m?.[1] && m[2]) out[m[1]] = m[2];
  }
  return out;
}
const V = readVersions();
function version(key: string): string {
  const v = V[key];
  if (!v) throw new Error(`harness/cluster/versions.sh lacks ${key}`);
  return v;
}
export const VERSIONS = {
  kubernetes: version('K8S_VERSION'),
  etcd: version('ETCD_VERSION'),
  kwok: version('KWOK_VERSION'),
  crictl: version('CRICTL_VERSION'),
  pause: version('PAUSE_VERSION'),
  /** OpenKruise, a peer: built only by the tiers and benchmarks that run it (`build.sh kruise`). */
  kruise: version('KRUISE_VERSION'),
};

/**
 * `kubernetes.io/arch` of every harness node: the GOARCH its kubelet was built for, which is this
 * machine's (the harness builds Kubernetes from source here).
 */
export const NODE_ARCH: string = ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[process.arch] ?? process.arch;

export const CACHE_DIR = process.env['PREWARM_CACHE_DIR'] ?? join(homedir(), '.cache', 'prewarm');
/** Data of the running cluster (containerd roots, kubelet dirs, registry storage, certs, logs). */
export const STATE_DIR = process.env['PREWARM_CLUSTER_STATE'] ?? join(HARNESS_DIR, '.state');
/** Short paths for unix sockets (108-byte limit) and runc state. */
export const RUN_DIR = process.env['PREWARM_CLUSTER_RUN'] ?? '/run/prewarm-cluster';

export const NET = {
  hubNs: 'pw-hub',
  bridge: 'pwbr0',
  hubIp: '10.250.0.1',
  nodePrefix: '10.250.0.',
  nodeMask: 24,
  /** Node n gets 10.250.0.(10+n) and pod CIDR 10.244.n.0/24. */
  firstNodeHost: 10,
  clusterCidr: '10.244.0.0/16',
  serviceCidr: '10.96.0.0/16',
  kubernetesServiceIp: '10.96.0.1',
  apiserverPort: 6443,
  /** Root-netns loopback port forwarded to the apiserver inside the hub. */
  apiserverLocalPort: Number(process.env['PREWARM_APISERVER_PORT'] ?? 16443),
  registryPort: 5000,
  tlsRegistryPort: 5443,
  /** The remote registry profile's throttling proxy in front of the plain registry (registry-profile.ts). */
  registryProxyPort: 5001,
} as const;

/** The netns cluster's apiserver as the root netns reaches it (the loopback forward). */
export function apiserverUrl(): string {
  return `https://127.0.0.1:${NET.apiserverLocalPort}`;
}

export const REGISTRY = {
  plain: `${NET.hubIp}:${NET.registryPort}`,
  tls: `${NET.hubIp}:${NET.tlsRegistryPort}`,
  /** Where nodes reach the plain registry under the remote profile (the images keep REGISTRY.plain names). */
  proxy: `${NET.hubIp}:${NET.registryProxyPort}`,
  user: 'prewarm',
  password: 'prewarm-secret',
} as const;

/** Image references of the harness's own images. */
export const IMAGES = {
  pause: `${REGISTRY.plain}/prewarm/pause:${VERSIONS.pause}`,
  busybox: 'docker.io/library/busybox:1.36.1',
} as const;

/**
 * Registry hosts redirected to the local registry. For each, a hosts.toml makes `server` the local
 * registry (path-prefixed by the host name), so a pull never leaves the hub netns. More hosts can
 * be added at run time (hosts.toml is read per pull).
 */
export const MIRRORED_HOSTS = [
  'docker.io',
  'ghcr.io',
  'quay.io',
  'nvcr.io',
  'registry.k8s.io',
  'gcr.io',
  'public.ecr.aws',
  'mcr.microsoft.com',
  'registry.gitlab.com',
  'us-docker.pkg.dev',
  'europe-docker.pkg.dev',
];

function bin(component: string, ver: string, name: string): string {
  return join(CACHE_DIR, `${component}-${ver}`, 'bin', name);
}
export const BIN = {
  etcd: bin('etcd', VERSIONS.etcd, 'etcd'),
  etcdctl: bin('etcd', VERSIONS.etcd, 'etcdctl'),
  kubeApiserver: bin('kubernetes', VERSIONS.kubernetes, 'kube-apiserver'),
  kubeControllerManager: bin('kubernetes', VERSIONS.kubernetes, 'kube-controller-manager'),
  kubeScheduler: bin('kubernetes', VERSIONS.kubernetes, 'kube-scheduler'),
  kubeProxy: bin('kubernetes', VERSIONS.kubernetes, 'kube-proxy'),
  kubectl: bin('kubernetes', VERSIONS.kubernetes, 'kubectl'),
  kubelet: bin('kubernetes', VERSIONS.kubernetes, 'kubelet'),
  crictl: bin('crictl', VERSIONS.crictl, 'crictl'),
  kwok: bin('kwok', VERSIONS.kwok, 'kwok'),
  pause: bin('pause', VERSIONS.pause, 'pause'),
  kruiseManager: bin('kruise', VERSIONS.kruise, 'kruise-manager'),
  kruiseDaemon: bin('kruise', VERSIONS.kruise, 'kruise-daemon'),
} as const;
export type BinName = keyof typeof BIN;

/** System tools installed by .ci/setup-cluster.sh (Debian packages). */
export const SYSTEM_TOOLS = [
  'containerd',
  'runc',
  'ip',
  'nsenter',
  'socat',
  'skopeo',
  'umoci',
  'docker-registry',
  'openssl',
  'htpasswd',
  'iptables',
  'ctr',
];
export const CNI_BIN_DIR = '/usr/lib/cni';
export const BUSYBOX_STATIC = '/bin/busybox';

/** Throws with a clear message when a prerequisite is missing (tests must fail, never skip). */
export function requireBinaries(names: readonly BinName[]): void {
  const missing = names.filter((n) => !existsSync(BIN[n])).map((n) => BIN[n]);
  if (missing.length > 0) {
    throw new Error(
      `prewarm test cluster: missing binaries ${missing.join(', ')}. Run .ci/setup-cluster.sh ` + `(or harness/cluster/build.sh) first.`,
    );
  }
}
