/**
 * Every name prewarm emits is made here, from the spec's identity (namespace, selector,
 * tolerations, image reference) and never from construct paths, so renaming or reordering specs
 * never renames an object, and a DaemonSet's immutable selector never changes under it.
 */
import { createHash } from 'node:crypto';
import type { Pool } from '../imagecache/model.js';
import type { ImageRef } from '../imagecache/reference.js';
import { GROUP, NODE_ANNOTATION_PREFIX, NODE_LABEL_PREFIX } from '../contract/names.js';

/** Longest object name that is also a valid DNS label. */
const DNS_LABEL_MAX = 63;
/** Pool ids sit inside `prewarm-<id>` (DaemonSet) and `prewarm.dev/<id>` (label key name part). */
const POOL_ID_MAX = 40;
/**
 * 32 bits. Kept, not lengthened: pool ids are DaemonSet names, immutable selector values and node
 * label keys, so a longer hash would rename all of them on upgrade. Collisions are refused after
 * naming instead (checks.ts, which states the odds).
 */
const HASH_LENGTH = 8;

/** Prefix of every namespaced object we name. */
export const NAME_PREFIX = 'prewarm';

/** Short, stable hex digest of `input`. */
export function shortHash(input: string, length = HASH_LENGTH): string {
  return createHash('sha256').update(input).digest('hex').slice(0, length);
}

/** Lowercases and replaces every run of characters outside `[a-z0-9]` with one dash. */
export function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

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

/**
 * The pool id: the explicit pool name, or a slug of the selector values plus a hash of the pool's
 * full identity (namespace, selector, tolerations), e.g. `gpu-a100-3f2a1c9e`. The bundle calls it
 * once per pool and keeps the result as `Pool.id`; everything else reads that.
 */
export function poolId(pool: Pick<Pool, 'name' | 'key' | 'nodeSelector'>): string {
  if (pool.name !== undefined) return pool.name;
  const values = Object.values(pool.nodeSelector).join('-');
  const head = slug(values === '' ? 'all' : values)
    .slice(0, POOL_ID_MAX - HASH_LENGTH - 1)
    .replace(/-+$/, '');
  return `${head === '' ? 'pool' : head}-${shortHash(pool.key)}`;
}

/** Name of a pool's pull DaemonSet. */
export function daemonSetName(id: string): string {
  return dnsLabel(`${NAME_PREFIX}-${id}`);
}

/** Name of a pool's burst puller DaemonSet for lane `lane` (src/synth/lanes.ts PullerLane.key). */
export function pullerDaemonSetName(id: string, lane: string): string {
  return dnsLabel(`${NAME_PREFIX}-${id}-puller-${lane}`);
}

/** Node label key carrying a pool's state on each node: `prewarm.dev/<id>`. */
export function nodeLabelKey(id: string): string {
  return `${NODE_LABEL_PREFIX}${id}`;
}

/** Node annotation key carrying a pool's bounded status details: `status.prewarm.dev/<id>`. */
export function nodeAnnotationKey(id: string): string {
  return `${NODE_ANNOTATION_PREFIX}${id}`;
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

/** Init container that copies the static helper binary. */
export const HELPER_CONTAINER = 'prewarm-helper';
/** The emptyDir holding the helper binary. */
export const HELPER_VOLUME = 'prewarm-bin';
/** The volume projecting the pools ConfigMap into the sidecar. */
export const POOLS_VOLUME = 'prewarm-pools';
/** Name of the sidecar's metrics port, which the PodMonitor scrapes by name. */
export const METRICS_PORT_NAME = 'metrics';
/** The PodMonitor of a namespace's sidecars (`synth --pod-monitor`). */
export const POD_MONITOR = `${NAME_PREFIX}-reconciler`;
/** ServiceAccount of the pull pods (and so of the sidecar). */
export const SERVICE_ACCOUNT = `${NAME_PREFIX}-reconciler`;
/** Cluster-scoped RBAC and admission objects. */
export const CLUSTER_ROLE = `${GROUP}:reconciler`;

/** cdk8s chart id (and so output file name) of a namespace's objects. */
export function namespaceChartId(namespace: string): string {
  return `${NAME_PREFIX}-ns-${namespace}`;
}
/** cdk8s chart id of the cluster-scoped objects, kept in a chart without a namespace. */
export const CLUSTER_CHART_ID = `${NAME_PREFIX}-cluster`;
