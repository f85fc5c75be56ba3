/**
 * The names of the synth↔sidecar contract: every label, annotation, taint, environment variable,
 * mount path and namespace that one side writes and the other reads is named here, and only here,
 * so the two can never disagree. The rest of the contract sits beside it in src/contract/:
 * identity, roles, placement, pools.json, the node annotation's codec, Events and pod status.
 *
 * Anything derived from a spec's identity is computed at synth time (the pool id and the per-pool
 * node keys by `identity.ts`, object names by `synth/naming.ts`) and handed to the sidecar through
 * the environment variables below; the sidecar never re-derives a name.
 */

/** The API group of our own ImageCache and the prefix of every key we own. */
export const GROUP = 'prewarm.dev';

/** `app.kubernetes.io/managed-by` value on every object we emit. */
export const MANAGED_BY = 'prewarm';

/** Standard recommended labels (https://kubernetes.io/docs/concepts/overview/working-with-objects/common-labels/). */
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const LABEL_NAME = 'app.kubernetes.io/name';
export const LABEL_COMPONENT = 'app.kubernetes.io/component';
export const LABEL_PART_OF = 'app.kubernetes.io/part-of';
/** The label the apiserver sets on every Namespace to its name (what a binding selects namespaces by). */
export const LABEL_NAMESPACE_NAME = 'kubernetes.io/metadata.name';

/** Selector label of a pool's holder pods; its value is the pool id. Immutable once applied. */
export const LABEL_POOL = `${GROUP}/pool`;

/**
 * Selector label of a burst puller's pods: `<pool id>-<lane>`. Pullers never carry
 * {@link LABEL_POOL}, so no DaemonSet's selector matches another's pods.
 */
export const LABEL_PULLER = `${GROUP}/puller`;

/**
 * Carried by every pod of a pool, holder and pullers alike, with the pool id as value: what the
 * sidecar watches (with `spec.nodeName`) to see every image a pod of its pool has started on its
 * node. No DaemonSet selects on it.
 */
export const LABEL_POOL_MEMBER = `${GROUP}/pool-member`;

/**
 * Prefix of the per-pool node label `prewarm.dev/<pool-id>=<state>`. The full key is computed by
 * `identity.ts` and given to the sidecar in {@link ENV.nodeLabelKey}.
 */
export const NODE_LABEL_PREFIX = `${GROUP}/`;

/** Values of the per-pool node label. */
export const NodeState = {
  /** Every image of the pool is present on the node. */
  Warm: 'warm',
  /** The pool's deadline passed with some images missing; the gate was opened anyway. */
  Partial: 'partial',
} as const;
/** A value of the per-pool node label. */
export type NodeState = (typeof NodeState)[keyof typeof NodeState];

/**
 * Prefix of the per-pool node annotation holding bounded JSON details (digests, time-to-warm,
 * failing images). The full key is `status.prewarm.dev/<pool-id>`, computed by `identity.ts`.
 */
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

/** The container of an early puller that pulls the sidecar's image, so the holder finds it present. */
export const SIDECAR_IMAGE_CONTAINER = 'prewarm-sidecar-image';

/** Init container that copies the static helper binary (pull pods without the sleeper). */
export const HELPER_CONTAINER = 'prewarm-helper';
/**
 * The volume holding the sleep binary: the sleeper's ConfigMap, whose one item's key is the
 * architecture (src/synth/sleeper.ts), or the emptyDir the helper fills.
 */
export const HELPER_VOLUME = 'prewarm-bin';
/** The architectures (`kubernetes.io/arch` values) the sleeper (src/synth/sleeper.ts) is built for. */
export const SLEEPER_ARCHITECTURES = ['amd64', 'arm64'] as const;
/** One of {@link SLEEPER_ARCHITECTURES}. */
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
  /**
   * Downward API `status.podIP`: the only address `/metrics` binds to (never all interfaces);
   * unset means loopback only.
   */
  podIP: 'PREWARM_POD_IP',
} as const;

/**
 * Where the pod's imagePullSecrets are mounted into the sidecar, one directory per Secret
 * (`<path>/<secret-name>/.dockerconfigjson`). The sidecar has no RBAC on Secrets; the kubelet
 * mounts them. Only read by the optional tag refresh.
 */
export const PULL_SECRETS_MOUNT_PATH = '/etc/prewarm-pull-secrets';

/**
 * Where the sidecar's service-account token, CA and namespace are mounted: the path client
 * libraries look in, so synthesis mounts the projected token volume ({@link TOKEN_VOLUME}) there
 * and the sidecar's in-cluster endpoint reads it from there.
 */
export const SERVICE_ACCOUNT_MOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';
/** The projected token volume, mounted into the sidecar only: image containers get no credentials. */
export const TOKEN_VOLUME = 'prewarm-token';

/**
 * The namespace of the Events the sidecar posts about its Node, and so the only namespace where
 * synthesis grants it `create events`. The apiserver rejects (422) a core/v1 Event whose
 * involvedObject has no namespace unless the Event itself is in "default" (or none), which is
 * where the kubelet posts node events too.
 */
export const EVENTS_NAMESPACE = 'default';

/** Where the sidecar serves Prometheus metrics, and where the PodMonitor scrapes them. */
export const METRICS_PATH = '/metrics';

/**
 * Where the sidecar answers its startup probe, on the metrics port: 200 once the holder's image
 * containers may start (src/reconciler/pool.ts `releasesImages`), 503 before. The kubelet starts
 * the containers after a native sidecar only once its startup probe has succeeded.
 */
export const STARTUP_PATH = '/startupz';

/**
 * Lanes per pool (`spec.lanes`): the default, and the range a spec may set. The default is chosen
 * in docs/benchmarks.md (Lanes); the cap bounds a joining node's pod slots and IPs, one per burst
 * puller while it warms.
 */
export const LANES = { default: 4, min: 1, max: 16 } as const;

/** Defaults shared by the spec model and the sidecar. */
export const DEFAULTS = {
  deadlineSeconds: 600,
  refreshSeconds: 0,
  metricsPort: 9464,
} as const;

/**
 * Ranges of the durations synthesis hands the sidecar, in seconds. The sidecar refuses to start
 * outside them (src/contract/sidecar-env.ts), and a sidecar that never starts never lifts the gate,
 * so the spec rejects the same values up front (`durationIn` in src/imagecache/fields.ts).
 */
export const LIMITS = {
  /** The gate deadline: at least a second (0 would have no meaning but "never gate"), at most a day. */
  deadlineSeconds: { min: 1, max: 86_400 },
  /**
   * The moved-tag refresh interval; 0 disables it. Every node of a pool checks every tag on its
   * own timer, so a short interval multiplies registry requests by the node count: synth holds
   * specs to a floor the invocation sets (src/synth/bounds.ts).
   */
  refreshSeconds: { min: 0, max: 30 * 86_400 },
} as const;
