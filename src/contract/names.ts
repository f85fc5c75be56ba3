/** Every name one side of the synth↔sidecar contract writes and the other reads; the sidecar never re-derives one. */

/** The API group of our own ImageCache and the prefix of every key we own. */
export const GROUP = 'prewarm.dev';

/** `app.kubernetes.io/managed-by` value on every object we emit. */
export const MANAGED_BY = 'prewarm';

/** Kubernetes' recommended labels. */
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const LABEL_NAME = 'app.kubernetes.io/name';
export const LABEL_COMPONENT = 'app.kubernetes.io/component';
export const LABEL_PART_OF = 'app.kubernetes.io/part-of';
/** Set by the apiserver on every Namespace to its name. */
export const LABEL_NAMESPACE_NAME = 'kubernetes.io/metadata.name';

/** Selector label of a pool's holder pods; its value is the pool id. Immutable once applied. */
export const LABEL_POOL = `${GROUP}/pool`;

/** Selector label of a burst puller's pods, `<pool id>-<lane>`; never beside {@link LABEL_POOL}. */
export const LABEL_PULLER = `${GROUP}/puller`;

/** On every pod of a pool, valued the pool id: what the sidecar watches. No DaemonSet selects on it. */
export const LABEL_POOL_MEMBER = `${GROUP}/pool-member`;

/** Prefix of the per-pool node label `prewarm.dev/<pool-id>=<state>`. */
export const NODE_LABEL_PREFIX = `${GROUP}/`;

/** Values of the per-pool node label. */
export const NodeState = {
  /** Every image of the pool is present on the node. */
  Warm: 'warm',
  /** The pool's deadline passed with some images missing; the gate was opened anyway. */
  Partial: 'partial',
} as const;
export type NodeState = (typeof NodeState)[keyof typeof NodeState];

/** Prefix of the per-pool node annotation `status.prewarm.dev/<pool-id>` (bounded JSON details). */
export const NODE_ANNOTATION_PREFIX = `status.${GROUP}/`;

/** Default key of the gating taint that holds workloads off a node until its pools are warm. */
export const DEFAULT_GATE_TAINT_KEY = `${GROUP}/warming`;

/** Name of the per-namespace ConfigMap listing every pool, mounted into each sidecar. */
export const POOLS_CONFIGMAP = 'prewarm-pools';
/** File name of the pool list inside {@link POOLS_CONFIGMAP}. */
export const POOLS_FILE = 'pools.json';
/** Where the sidecar finds {@link POOLS_FILE}. */
export const POOLS_MOUNT_PATH = '/etc/prewarm';

/** Name of the sidecar container inside every pull pod. */
export const SIDECAR_CONTAINER = 'prewarm-reconciler';

/** An early puller's container that pulls the sidecar's image. */
export const SIDECAR_IMAGE_CONTAINER = 'prewarm-sidecar-image';

/** Init container that copies the static helper binary (pull pods without the sleeper). */
export const HELPER_CONTAINER = 'prewarm-helper';
/** The volume holding the sleep binary: the sleeper's ConfigMap, or the emptyDir the helper fills. */
export const HELPER_VOLUME = 'prewarm-bin';
/** The architectures (`kubernetes.io/arch` values) the sleeper (src/synth/sleeper.ts) is built for. */
export const SLEEPER_ARCHITECTURES = ['amd64', 'arm64'] as const;
export type SleeperArch = (typeof SLEEPER_ARCHITECTURES)[number];
/** Whether `arch` (a `kubernetes.io/arch` value) has a sleeper. */
export function isSleeperArch(arch: string): arch is SleeperArch {
  return (SLEEPER_ARCHITECTURES as readonly string[]).includes(arch);
}

/** Environment variables the synthesized pull pod sets on the sidecar. */
export const ENV = {
  /** Downward API `spec.nodeName`. */
  nodeName: 'PREWARM_NODE_NAME',
  /** Downward API `metadata.name`. */
  podName: 'PREWARM_POD_NAME',
  /** Downward API `metadata.namespace`. */
  podNamespace: 'PREWARM_POD_NAMESPACE',
  /** The pool id (also the value of {@link LABEL_POOL}). */
  pool: 'PREWARM_POOL',
  /** Full key of the per-pool node label, e.g. `prewarm.dev/gpu-a1b2c3`. */
  nodeLabelKey: 'PREWARM_NODE_LABEL_KEY',
  /** Full key of the per-pool node annotation. */
  nodeAnnotationKey: 'PREWARM_NODE_ANNOTATION_KEY',
  /** Key of the gating taint to lift; empty disables gating for this pool. */
  gateTaintKey: 'PREWARM_GATE_TAINT_KEY',
  /** Seconds after the node turned Ready before the pool fails open. */
  deadlineSeconds: 'PREWARM_DEADLINE_SECONDS',
  /** Seconds between registry digest checks of moved tags; 0 disables refresh. */
  refreshSeconds: 'PREWARM_REFRESH_SECONDS',
  /** Port of the Prometheus {@link METRICS_PATH} endpoint; 0 disables it. */
  metricsPort: 'PREWARM_METRICS_PORT',
  /** Downward API `status.podIP`: `/metrics` binds there only, or to loopback when unset. */
  podIP: 'PREWARM_POD_IP',
} as const;

/** The sidecar's pull secrets, `<path>/<secret>/.dockerconfigjson`: mounted, as it has no RBAC on Secrets. */
export const PULL_SECRETS_MOUNT_PATH = '/etc/prewarm-pull-secrets';

/** Where client libraries look for the service-account token, CA and namespace. */
export const SERVICE_ACCOUNT_MOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';
/** The projected token volume, mounted into the sidecar only: image containers get no credentials. */
export const TOKEN_VOLUME = 'prewarm-token';

/** The only namespace the sidecar may create its node Events in (where the kubelet posts them too). */
export const EVENTS_NAMESPACE = 'default';

/** Where the sidecar serves Prometheus metrics, and where the PodMonitor scrapes them. */
export const METRICS_PATH = '/metrics';

/** The sidecar's startup probe, on the metrics port: 200 once the holder's image containers may start. */
export const STARTUP_PATH = '/startupz';

/** Lanes per pool (`spec.lanes`); the cap bounds the pod slots and IPs a warming node spends. */
export const LANES = { default: 4, min: 1, max: 16 } as const;

/** Defaults shared by the spec model and the sidecar. */
export const DEFAULTS = {
  deadlineSeconds: 600,
  refreshSeconds: 0,
  metricsPort: 9464,
} as const;

/** Seconds. The sidecar refuses to start outside them and so would never lift the gate: the spec rejects the same values up front. */
export const LIMITS = {
  deadlineSeconds: { min: 1, max: 86_400 },
  /** 0 disables refresh; every node checks on its own timer, so synth also sets a floor (bounds.ts). */
  refreshSeconds: { min: 0, max: 30 * 86_400 },
} as const;
