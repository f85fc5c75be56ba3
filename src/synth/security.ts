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
 * once per image per node, so they stay tiny. The CPU limit is not tiny on purpose: the runtime's
 * `runc init` and the exec of busybox run inside the container's cgroup and need about 25-40 ms of
 * CPU to start it. Under a 10m limit (1 ms per 100 ms CFS period) that took 2.5-4 s per container
 * on the harness, one container after another, and was the largest part of a node's warm-up
 * (docs/benchmarks.md, the waterfall); under 250m it takes about 0.1 s. A sleeping process uses
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
 * The sidecar reconciler: one watch and a metrics endpoint (see bench:footprint). Idle almost all
 * the time, so it requests next to nothing; the limit is for its start, which is on the critical
 * path of every join: Node.js, TLS, the first list and the node patch take about 0.2 s of CPU, and
 * under the former 200m limit (20 ms per 100 ms CFS period) the label came 1.9-2.2 s after the last
 * image reached containerd, against 0.8-1.4 s under 1000m (bench:time-to-warm, small5, loopback,
 * 3 nodes each; docs/benchmarks.md). One core still bounds a sidecar gone wrong.
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
