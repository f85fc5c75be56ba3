/**
 * Security and resource defaults of every container prewarm emits. Pull pods must pass Pod
 * Security "restricted" (https://kubernetes.io/docs/concepts/security/pod-security-standards/)
 * and must never inherit cdk8s-plus's 1000m/512Mi defaults, which multiplied by one container per
 * image would reserve most of a node.
 */
import { Size } from 'cdk8s';
import * as kplus from 'cdk8s-plus-27';

/** Numeric non-root uid: the kubelet refuses `runAsNonRoot` for images whose user is a name. */
export const RUN_AS_USER = 65532;
export const RUN_AS_GROUP = 65532;

/** Container-level settings every container gets; `capabilities.drop: [ALL]` is an escape hatch. */
export const CONTAINER_SECURITY: kplus.ContainerSecurityContextProps = {
  ensureNonRoot: true,
  user: RUN_AS_USER,
  group: RUN_AS_GROUP,
  privileged: false,
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
};

/** CPU limit of the containers that only start and sleep: enough for the runtime to start them quickly. */
const START_CPU_LIMIT_MILLIS = 250;

/** Pod-level settings; `seccompProfile: RuntimeDefault` is an escape hatch. */
export const POD_SECURITY: kplus.PodSecurityContextProps = {
  ensureNonRoot: true,
  user: RUN_AS_USER,
  group: RUN_AS_GROUP,
};

/**
 * A cached image's container only sleeps: it needs almost nothing, and its requests are counted
 * once per image per node, so they stay tiny. The CPU limit is not tiny on purpose: `runc init`
 * and the exec of busybox run inside the container's cgroup, and a tiny limit throttles every
 * start, one container after another, on the critical path of a warm-up. A sleeping process uses
 * none of it.
 */
export const IMAGE_RESOURCES: kplus.ContainerResources = {
  cpu: { request: kplus.Cpu.millis(1), limit: kplus.Cpu.millis(START_CPU_LIMIT_MILLIS) },
  memory: { request: Size.mebibytes(4), limit: Size.mebibytes(16) },
};

/** The init container copies one file; it starts as often as an image container (see above). */
export const HELPER_RESOURCES: kplus.ContainerResources = {
  cpu: { request: kplus.Cpu.millis(5), limit: kplus.Cpu.millis(START_CPU_LIMIT_MILLIS) },
  memory: { request: Size.mebibytes(8), limit: Size.mebibytes(32) },
};

/**
 * The sidecar reconciler: one watch and a metrics endpoint. Idle almost all the time, so it
 * requests next to nothing; the limit is for its start (Node.js, TLS, the first list, the node
 * patch), which is on the critical path of every join and slows under a small limit. One core
 * still bounds a sidecar gone wrong.
 */
export const SIDECAR_RESOURCES: kplus.ContainerResources = {
  cpu: { request: kplus.Cpu.millis(5), limit: kplus.Cpu.millis(1000) },
  memory: { request: Size.mebibytes(48), limit: Size.mebibytes(96) },
};

/** Pod Security labels of every namespace prewarm owns (see SynthOptions.ownedNamespaces). */
export const NAMESPACE_POD_SECURITY: Readonly<Record<string, string>> = {
  'pod-security.kubernetes.io/enforce': 'restricted',
  'pod-security.kubernetes.io/enforce-version': 'latest',
  'pod-security.kubernetes.io/warn': 'restricted',
  'pod-security.kubernetes.io/warn-version': 'latest',
  'pod-security.kubernetes.io/audit': 'restricted',
  'pod-security.kubernetes.io/audit-version': 'latest',
};

/**
 * Pod Security labels of an owned namespace that holds an early-pull pool: early pullers use the
 * host network, which `baseline` and `restricted` forbid, so `enforce` is `privileged` and the
 * namespace's pods are held to restricted (host networking only in the early-puller shape) by the
 * admission policy of src/synth/early-pull.ts instead. `warn` and `audit` stay `restricted`, so
 * every host-network pod is still reported.
 */
export const EARLY_PULL_NAMESPACE_POD_SECURITY: Readonly<Record<string, string>> = {
  ...NAMESPACE_POD_SECURITY,
  'pod-security.kubernetes.io/enforce': 'privileged',
};
