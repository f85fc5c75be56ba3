/**
 * Every object name prewarm emits is made here, from the spec's identity (the pool id of
 * src/contract/identity.ts, the image reference) and never from construct paths, so renaming or reordering specs
 * never renames an object, and a DaemonSet's immutable selector never changes under it.
 */
import type { ImageRef } from '../oci/reference.js';
import { HASH_LENGTH, shortHash, slug } from '../contract/identity.js';

/** Longest object name that is also a valid DNS label. */
const DNS_LABEL_MAX = 63;
/** Prefix of every namespaced object we name. */
export const NAME_PREFIX = 'prewarm';

/**
 * A valid DNS label of at most `max` characters. When `text` does not fit, it is cut and a hash of
 * the whole of it is appended, so two long names that share a prefix stay distinct.
 */
export function dnsLabel(text: string, max = DNS_LABEL_MAX): string {
  const clean = slug(text);
  if (clean === text && clean !== '' && clean.length <= max) return clean;
  const hash = shortHash(text);
  const head = clean.slice(0, Math.max(0, max - HASH_LENGTH - 1)).replace(/-+$/, '');
  return head === '' ? hash : `${head}-${hash}`;
}

/** Name of a pool's pull DaemonSet. */
export function daemonSetName(id: string): string {
  return dnsLabel(`${NAME_PREFIX}-${id}`);
}

/** Name of a pool's burst puller DaemonSet for lane `lane` (src/synth/lanes.ts PullerLane.key). */
export function pullerDaemonSetName(id: string, lane: string): string {
  return dnsLabel(`${NAME_PREFIX}-${id}-puller-${lane}`);
}

/**
 * Container name of one cached image: a readable slug of its last path component and tag plus a
 * hash of the canonical reference, so names are unique within a pod and stable when images are
 * added or removed around them.
 */
export function imageContainerName(ref: ImageRef): string {
  const last = ref.path.split('/').pop() ?? ref.path;
  const readable = slug(`${last}-${ref.tag ?? 'digest'}`)
    .slice(0, DNS_LABEL_MAX - HASH_LENGTH - 1)
    .replace(/-+$/, '');
  return `${readable === '' ? 'image' : readable}-${shortHash(ref.canonical)}`;
}

/** Volume of one pull secret mounted into the sidecar, which reads registry credentials from it. */
export function pullSecretVolumeName(secret: string): string {
  return dnsLabel(`pull-secret-${secret}`);
}

/** The helper init container and the volume of the sleep binary: named where doctor reads them too. */
export { HELPER_CONTAINER, HELPER_VOLUME } from '../contract/names.js';
/** What every sleeper ConfigMap's name starts with (the early pullers' admission policy admits these). */
export const SLEEPER_CONFIGMAP_PREFIX = `${NAME_PREFIX}-sleeper-`;
/**
 * Name of a namespace's sleeper ConfigMap (src/synth/sleeper.ts), from a hash of its `content`: it
 * is immutable, so a changed sleeper is a new ConfigMap.
 */
export function sleeperConfigMapName(content: string): string {
  return `${SLEEPER_CONFIGMAP_PREFIX}${shortHash(content)}`;
}

/** The volume projecting the pools ConfigMap into the sidecar. */
export const POOLS_VOLUME = 'prewarm-pools';
/** Name of the sidecar's metrics port, which the PodMonitor scrapes by name. */
export const METRICS_PORT_NAME = 'metrics';
/** The PodMonitor of a namespace's sidecars (`synth --pod-monitor`). */
export const POD_MONITOR = `${NAME_PREFIX}-reconciler`;
/** The NetworkPolicy of a namespace's sidecars (`synth --network-policy`). */
export const NETWORK_POLICY = `${NAME_PREFIX}-reconciler`;

/** cdk8s chart id (and so output file name) of a namespace's objects. */
export function namespaceChartId(namespace: string): string {
  return `${NAME_PREFIX}-ns-${namespace}`;
}
/** cdk8s chart id of the cluster-scoped objects, kept in a chart without a namespace. */
export const CLUSTER_CHART_ID = `${NAME_PREFIX}-cluster`;
