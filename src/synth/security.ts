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

/** Pod-level settings; `seccompProfile: RuntimeDefault` is an escape hatch. */
export const POD_SECURITY: kplus.PodSecurityContextProps = {
  ensureNonRoot: true,
  user: RUN_AS_USER,
  group: RUN_AS_GROUP,
};

/**
 * A cached image's container only sleeps: it needs almost nothing, and its requests are counted
 * once per image per node, so they stay tiny. The limit leaves headroom for the runtime's own
 * accounting of a static busybox.
 */
export const IMAGE_RESOURCES: kplus.ContainerResources = {
  cpu: { request: kplus.Cpu.millis(1), limit: kplus.Cpu.millis(10) },
  memory: { request: Size.mebibytes(4), limit: Size.mebibytes(16) },
};

/** The init container copies one file. */
export const HELPER_RESOURCES: kplus.ContainerResources = {
  cpu: { request: kplus.Cpu.millis(5), limit: kplus.Cpu.millis(100) },
  memory: { request: Size.mebibytes(8), limit: Size.mebibytes(32) },
};

/** The sidecar reconciler: one watch and a metrics endpoint (see bench:footprint). */
export const SIDECAR_RESOURCES: kplus.ContainerResources = {
  cpu: { request: kplus.Cpu.millis(5), limit: kplus.Cpu.millis(200) },
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
