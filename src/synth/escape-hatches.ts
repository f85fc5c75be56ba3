/** Every JSON patch to cdk8s-plus output, each for a field cdk8s-plus-27 cannot express; delete one when cdk8s-plus grows its field. */
import { ApiObject, JsonPatch } from 'cdk8s';
import { k8s, type DaemonSet } from 'cdk8s-plus-27';
import { SERVICE_ACCOUNT_MOUNT, TOKEN_VOLUME } from '../contract/names.js';
import { renderNodeAffinity, renderTolerations, type NodeSelectorRequirement, type Placement } from '../contract/placement.js';

const POD = '/spec/template/spec';

/** Fields of a pod template that cdk8s-plus-27 cannot set. */
export interface PodTemplatePatches {
  /** cdk8s-plus-27 ORs each `attract` label and drops the effect of a keyless toleration. */
  readonly placement: Placement;
  /** ANDed into the placement's one node selector term (a burst puller's `NotIn [warm, partial]`). */
  readonly nodeRequirements?: readonly NodeSelectorRequirement[];
  /** Every pull secret; cdk8s-plus takes only one (`dockerRegistryAuth`). */
  readonly imagePullSecrets: readonly string[];
  readonly priorityClassName?: string;
  /** DaemonSet RollingUpdate maxUnavailable; cdk8s-plus-27 has no update strategy. */
  readonly maxUnavailable: number | string;
  /** The init container made a native sidecar, and the only container that gets an API token. */
  readonly sidecar?: string;
  /** cdk8s-plus-27 refuses any probe on an init container. Only with {@link sidecar}. */
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

/** Applies `ops` after the object re-serialised through the 1.27 types, which drop newer fields. */
function patchAfterSerialisation(obj: ApiObject, ...ops: JsonPatch[]): void {
  const serialise = obj.toJson.bind(obj);
  obj.toJson = (): unknown => JsonPatch.apply(serialise(), ...ops);
}

/** JSON pointer to a container found by name, so a patch never depends on where another put it. */
function containerPath(workload: DaemonSet, list: 'initContainers' | 'containers', name: string): string {
  const index = (list === 'containers' ? workload.containers : workload.initContainers).findIndex((c) => c.name === name);
  if (index < 0) throw new Error(`the pod template has no ${list === 'containers' ? 'container' : 'init container'} named "${name}"`);
  return `${POD}/${list}/${index}`;
}

/**
 * Patches a cdk8s-plus DaemonSet once all its containers are added: {@link PodTemplatePatches},
 * Pod Security restricted fields, no service links, no construct-path label, a projected token in
 * the sidecar alone, and `FallbackToLogsOnError` on the sidecar.
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
    // Appends: the pod already has volumes and the sidecar a mount.
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
