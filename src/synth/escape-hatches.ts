/**
 * Every JSON patch prewarm applies to cdk8s-plus output lives here, each for a field that
 * cdk8s-plus-27 cannot express, and each covered by a test in test/synth/escape-hatches.test.ts.
 * When cdk8s-plus grows the field, the patch should be deleted in favour of the L2 API.
 */
import { ApiObject, JsonPatch } from 'cdk8s';
import { k8s, type DaemonSet } from 'cdk8s-plus-27';
import { SERVICE_ACCOUNT_MOUNT, TOKEN_VOLUME } from '../contract/names.js';
import { renderNodeAffinity, renderTolerations, type NodeSelectorRequirement, type Placement } from '../contract/placement.js';

const POD = '/spec/template/spec';

/** Fields of a pod template that cdk8s-plus-27 cannot set. */
export interface PodTemplatePatches {
  /**
   * Where the pods run. cdk8s-plus-27's scheduling API loses both halves of it: `attract` puts
   * each label into a node selector term of its own (terms are ORed, a nodeSelector's labels are
   * ANDed), and `NodeTaintQuery.any()` drops the effect of a toleration without a key.
   */
  readonly placement: Placement;
  /**
   * Requirements ANDed into the placement's one node selector term (a burst puller's
   * `NotIn [warm, partial]` on its pool's node label).
   */
  readonly nodeRequirements?: readonly NodeSelectorRequirement[];
  /** Every pull secret; cdk8s-plus takes only one (`dockerRegistryAuth`). */
  readonly imagePullSecrets: readonly string[];
  /** PriorityClass of the pods, when set. */
  readonly priorityClassName?: string;
  /** DaemonSet RollingUpdate maxUnavailable; cdk8s-plus-27 has no update strategy. */
  readonly maxUnavailable: number | string;
  /**
   * Name of the sidecar, when there is one: an init container made a native sidecar
   * (`restartPolicy: Always`; cdk8s-plus-27 has no such field), and the only container that gets
   * an API token.
   */
  readonly sidecar?: string;
  /**
   * The sidecar's startup probe: cdk8s-plus-27 refuses any probe on an init container, a native
   * sidecar's included. Only with {@link sidecar}.
   */
  readonly sidecarStartupProbe?: HttpProbe;
}

/** An HTTP probe as the pod spec holds it, with the port by name. */
export interface HttpProbe {
  readonly httpGet: { readonly path: string; readonly port: string };
  readonly periodSeconds: number;
  readonly timeoutSeconds: number;
  readonly failureThreshold: number;
}

/** Lifetime the kubelet requests for the sidecar's token; it refreshes it at 80 %. */
const TOKEN_EXPIRATION_SECONDS = 3607;

/**
 * Applies `ops` to the object's JSON after the L1 object re-serialised it. The L1 KubeDaemonSet
 * passes its patched JSON through the Kubernetes 1.27 types of cdk8s-plus-27, which drop fields
 * newer than 1.27 (a container's `restartPolicy`, 1.28) from ordinary patches; these land last.
 */
function patchAfterSerialisation(obj: ApiObject, ...ops: JsonPatch[]): void {
  const serialise = obj.toJson.bind(obj);
  obj.toJson = (): unknown => JsonPatch.apply(serialise(), ...ops);
}

/**
 * JSON pointer to one container of the pod template, found by name in the containers the workload
 * has now, which cdk8s-plus renders in that order: a patch names its container, and never depends
 * on where another construct put it.
 */
function containerPath(workload: DaemonSet, list: 'initContainers' | 'containers', name: string): string {
  const index = (list === 'containers' ? workload.containers : workload.initContainers).findIndex((c) => c.name === name);
  if (index < 0) throw new Error(`the pod template has no ${list === 'containers' ? 'container' : 'init container'} named "${name}"`);
  return `${POD}/${list}/${index}`;
}

/**
 * Applies the patches to the ApiObject behind a cdk8s-plus DaemonSet, once all its containers are
 * added:
 * - the placement, exactly: one required node selector term with every selector label, and the
 *   tolerations verbatim (see src/contract/placement.ts);
 * - `seccompProfile: RuntimeDefault` and `capabilities.drop: [ALL]`, required by Pod Security
 *   restricted; cdk8s-plus-27 has neither a seccomp field nor the `ALL` capability;
 * - the full `imagePullSecrets` list;
 * - `priorityClassName`;
 * - `enableServiceLinks: false`, since a node-wide pod needs no Service environment variables and
 *   thousands of Services would bloat every container's environment;
 * - the RollingUpdate strategy with `maxUnavailable`;
 * - removal of the `cdk8s.io/metadata.addr` pod label, which cdk8s-plus derives from the construct
 *   path: names must come from the spec's identity, never from where a construct sits;
 * - a projected service-account token mounted into the sidecar alone, the same volume the kubelet
 *   would automount into every container: the cached images' containers get no credentials;
 * - `restartPolicy: Always` on the sidecar's init container, which makes it a native sidecar
 *   (Kubernetes 1.29 and later): started before the next init container, kept running beside the
 *   containers, stopped after them;
 * - `terminationMessagePolicy: FallbackToLogsOnError` on the sidecar, so a sidecar that refuses its
 *   configuration shows its one-line reason as the container's termination message (`kubectl
 *   describe pod`), not only in `kubectl logs` (cdk8s-plus-27 has no such field);
 * - the sidecar's startup probe, which holds back the containers after it until it succeeds.
 */
export function patchPullDaemonSet(workload: DaemonSet, patches: PodTemplatePatches): void {
  const obj = ApiObject.of(workload);
  const affinity = renderNodeAffinity(patches.placement, patches.nodeRequirements);
  if (affinity !== undefined) obj.addJsonPatch(JsonPatch.add(`${POD}/affinity`, { nodeAffinity: affinity }));
  const tolerations = renderTolerations(patches.placement);
  if (tolerations.length > 0) obj.addJsonPatch(JsonPatch.add(`${POD}/tolerations`, tolerations));
  obj.addJsonPatch(JsonPatch.add(`${POD}/securityContext/seccompProfile`, { type: 'RuntimeDefault' }));
  const dropAll = { drop: ['ALL'] };
  for (const { name } of workload.initContainers) {
    obj.addJsonPatch(JsonPatch.add(`${containerPath(workload, 'initContainers', name)}/securityContext/capabilities`, dropAll));
  }
  for (const { name } of workload.containers) {
    obj.addJsonPatch(JsonPatch.add(`${containerPath(workload, 'containers', name)}/securityContext/capabilities`, dropAll));
  }
  if (patches.imagePullSecrets.length > 0) {
    obj.addJsonPatch(
      JsonPatch.add(
        `${POD}/imagePullSecrets`,
        patches.imagePullSecrets.map((name) => ({ name })),
      ),
    );
  }
  if (patches.priorityClassName !== undefined) {
    obj.addJsonPatch(JsonPatch.add(`${POD}/priorityClassName`, patches.priorityClassName));
  }
  obj.addJsonPatch(JsonPatch.add(`${POD}/enableServiceLinks`, false));
  obj.addJsonPatch(JsonPatch.remove('/spec/template/metadata/labels/cdk8s.io~1metadata.addr'));
  if (patches.sidecar !== undefined) {
    const sidecar = containerPath(workload, 'initContainers', patches.sidecar);
    // Appends: the pod already has volumes (the helper emptyDir) and the sidecar already has a
    // mount (the pools file).
    // After serialisation too: the L1 types read a probe's port as `{ value }` and drop a plain one.
    patchAfterSerialisation(
      obj,
      JsonPatch.add(`${sidecar}/restartPolicy`, 'Always'),
      ...(patches.sidecarStartupProbe === undefined ? [] : [JsonPatch.add(`${sidecar}/startupProbe`, patches.sidecarStartupProbe)]),
    );
    obj.addJsonPatch(
      JsonPatch.add(`${sidecar}/terminationMessagePolicy`, 'FallbackToLogsOnError'),
      JsonPatch.add(`${POD}/volumes/-`, {
        name: TOKEN_VOLUME,
        projected: {
          defaultMode: 0o444,
          sources: [
            { serviceAccountToken: { path: 'token', expirationSeconds: TOKEN_EXPIRATION_SECONDS } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            { downwardApi: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
          ],
        },
      }),
      JsonPatch.add(`${sidecar}/volumeMounts/-`, {
        name: TOKEN_VOLUME,
        mountPath: SERVICE_ACCOUNT_MOUNT,
        readOnly: true,
      }),
    );
  }
  // The L1 KubeDaemonSet re-serialises its props after patches run, and reads IntOrString as
  // `{ value }`: a plain number or string here would be dropped silently.
  const maxUnavailable =
    typeof patches.maxUnavailable === 'number'
      ? k8s.IntOrString.fromNumber(patches.maxUnavailable)
      : k8s.IntOrString.fromString(patches.maxUnavailable);
  obj.addJsonPatch(JsonPatch.add('/spec/updateStrategy', { type: 'RollingUpdate', rollingUpdate: { maxUnavailable } }));
}
