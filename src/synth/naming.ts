/**
 * Every object name, from the spec's identity and never from construct paths, so reordering specs
 * never renames an object or changes a DaemonSet's immutable selector.
 */
import type { ImageRef } from '../oci/reference.js';
import { HASH_LENGTH, shortHash, slug } from '../contract/identity.js';

/** Longest object name that is also a valid DNS label. */
const DNS_LABEL_MAX = 63;
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

export function daemonSetName(id: string): string {
  return dnsLabel(`${NAME_PREFIX}-${id}`);
}

export function pullerDaemonSetName(id: string, lane: string): string {
  return dnsLabel(`${NAME_PREFIX}-${id}-puller-${lane}`);
}

/** A readable slug plus a hash of the reference: unique in a pod, stable as images come and go. */
export function imageContainerName(ref: ImageRef): string {
  const last = ref.path.split('/').pop() ?? ref.path;
  const readable = slug(`${last}-${ref.tag ?? 'digest'}`)
    .slice(0, DNS_LABEL_MAX - HASH_LENGTH - 1)
    .replace(/-+$/, '');
  return `${readable === '' ? 'image' : readable}-${shortHash(ref.canonical)}`;
}

export function pullSecretVolumeName(secret: string): string {
  return dnsLabel(`pull-secret-${secret}`);
}

/** The helper init container and the volume of the sleep binary: named where doctor reads them too. */
export { HELPER_CONTAINER, HELPER_VOLUME } from '../contract/names.js';
/** What every sleeper ConfigMap's name starts with (the early pullers' admission policy admits these). */
export const SLEEPER_CONFIGMAP_PREFIX = `${NAME_PREFIX}-sleeper-`;
/** From a hash of `content`: the ConfigMap is immutable, so a changed sleeper is a new one. */
export function sleeperConfigMapName(content: string): string {
  return `${SLEEPER_CONFIGMAP_PREFIX}${shortHash(content)}`;
}

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
export const CLUSTER_CHART_ID = `${NAME_PREFIX}-cluster`;
