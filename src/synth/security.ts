/** Security and resource defaults of every container: Pod Security "restricted", never cdk8s-plus's defaults. */
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

/** Tiny requests, counted per image per node; a CPU limit large enough not to throttle `runc init`. */
export const IMAGE_RESOURCES: kplus.ContainerResources = {
  cpu: { request: kplus.Cpu.millis(1), limit: kplus.Cpu.millis(START_CPU_LIMIT_MILLIS) },
  memory: { request: Size.mebibytes(4), limit: Size.mebibytes(16) },
};

/** Copies one file, and starts as often as an image container. */
export const HELPER_RESOURCES: kplus.ContainerResources = {
  cpu: { request: kplus.Cpu.millis(5), limit: kplus.Cpu.millis(START_CPU_LIMIT_MILLIS) },
  memory: { request: Size.mebibytes(8), limit: Size.mebibytes(32) },
};

/** Idle almost always; the limit serves its start, on every join's critical path. */
export const SIDECAR_RESOURCES: kplus.ContainerResources = {
  cpu: { request: kplus.Cpu.millis(5), limit: kplus.Cpu.millis(START_CPU_LIMIT_MILLIS) },
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

/** An owned early-pull namespace enforces `privileged`; the early-pull admission policy holds pods to restricted. */
export const EARLY_PULL_NAMESPACE_POD_SECURITY: Readonly<Record<string, string>> = {
  ...NAMESPACE_POD_SECURITY,
  'pod-security.kubernetes.io/enforce': 'privileged',
};
