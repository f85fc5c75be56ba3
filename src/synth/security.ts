/**
 * Security and resource defaults of every container: Pod Security "restricted", and never
 * cdk8s-plus's defaults, which one container per image would multiply into most of a node.
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

/**
 * Enough for the runtime to start a sleeping container within one CFS period: `runc init` and the
 * exec run in the container's cgroup, so a start needs a few tens of milliseconds of CPU at once,
 * and the last start of every lane is on the warm-up's critical path. The sleeper then uses none.
 */
const START_CPU_LIMIT_MILLIS = 1000;

/** Pod-level settings; `seccompProfile: RuntimeDefault` is an escape hatch. */
export const POD_SECURITY: kplus.PodSecurityContextProps = {
  ensureNonRoot: true,
  user: RUN_AS_USER,
  group: RUN_AS_GROUP,
};

/**
 * Tiny requests, counted once per image per node; a CPU limit that is not tiny, since `runc init`
 * runs in the container's cgroup and a tiny one throttles every start of a warm-up.
 */
export const IMAGE_RESOURCES: kplus.ContainerResources = {
  cpu: { request: kplus.Cpu.millis(1), limit: kplus.Cpu.millis(START_CPU_LIMIT_MILLIS) },
  memory: { request: Size.mebibytes(4), limit: Size.mebibytes(16) },
};

/** Copies one file, and starts as often as an image container. */
export const HELPER_RESOURCES: kplus.ContainerResources = {
  cpu: { request: kplus.Cpu.millis(5), limit: kplus.Cpu.millis(START_CPU_LIMIT_MILLIS) },
  memory: { request: Size.mebibytes(8), limit: Size.mebibytes(32) },
};

/**
 * Idle almost always, so it requests next to nothing; the limit serves its start, on the critical
 * path of every join, and still bounds a sidecar gone wrong.
 */
export const SIDECAR_RESOURCES: kplus.ContainerResources = {
  cpu: { request: kplus.Cpu.millis(5), limit: kplus.Cpu.millis(1000) },
  memory: { request: Size.mebibytes(48), limit: Size.mebibytes(96) },
};

/** Pod Security labels of every namespace prewarm owns. */
export const NAMESPACE_POD_SECURITY: Readonly<Record<string, string>> = {
  'pod-security.kubernetes.io/enforce': 'restricted',
  'pod-security.kubernetes.io/enforce-version': 'latest',
  'pod-security.kubernetes.io/warn': 'restricted',
  'pod-security.kubernetes.io/warn-version': 'latest',
  'pod-security.kubernetes.io/audit': 'restricted',
  'pod-security.kubernetes.io/audit-version': 'latest',
};

/**
 * Of an owned namespace with early pullers: their host network needs `enforce: privileged`, so the
 * admission policy (early-pull.ts) holds pods to restricted instead; `warn` and `audit` still report.
 */
export const EARLY_PULL_NAMESPACE_POD_SECURITY: Readonly<Record<string, string>> = {
  ...NAMESPACE_POD_SECURITY,
  'pod-security.kubernetes.io/enforce': 'privileged',
};
