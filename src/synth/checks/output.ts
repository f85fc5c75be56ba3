/**
 * Checks of the rendered objects Kubernetes would make too late or never: shared names, and sizes.
 * A hash collision is refused here rather than made unlikely by longer hashes, which would rename
 * every DaemonSet and node label on upgrade.
 */
import type { Diagnostic, Location } from '../../imagecache/errors.js';
import type { Pool } from '../../imagecache/model.js';
import { duplicates, error, imageLocation, listed, objectLocation, poolLocation, where } from './diagnostics.js';
import { OUTPUT_LIMITS, overLimit, sizesOver, type SizeLimit } from './limits.js';
import type { RequestingContainer } from './memory.js';
import { imageContainerName } from '../naming.js';

/** A rendered object, as far as these checks read it. */
export interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly labels?: Readonly<Record<string, string>> };
  readonly data?: Readonly<Record<string, string>>;
  readonly binaryData?: Readonly<Record<string, string>>;
  readonly spec?: { readonly template?: { readonly spec?: PodSpecNames } };
}

export interface ObjectName {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string | undefined };
  /** The pool whose pull DaemonSet (holder or puller) this is, if any: findings point at its spec entry. */
  readonly pool?: Pool | undefined;
}

/** The parts of a pod spec whose names must be unique within the pod, and their requests. */
export interface PodSpecNames {
  readonly initContainers?: readonly RequestingContainer[];
  readonly containers?: readonly RequestingContainer[];
  readonly volumes?: readonly { readonly name: string }[];
}

/** A pool's DaemonSet: its size and its containers' and volumes' names, pointing at the spec. */
export function checkPoolObject(m: Manifest, pool: Pool): Diagnostic[] {
  const out = checkPodNames(m, pool);
  for (const [limit, bytes] of sizesOver(m)) {
    out.push({
      ...poolLocation(pool),
      severity: OUTPUT_LIMITS[limit].severity,
      message: `DaemonSet ${qualifiedName(m)} ${overLimit(limit, m.metadata.name, bytes, { images: pool.images.length })}`,
    });
  }
  return out;
}

/** Objects no pool made: sizes (once for an object every namespace holds alike) and pod names. */
export function checkSharedObjects(manifests: readonly Manifest[], pools: number): Diagnostic[] {
  const out: Diagnostic[] = [];
  // By kind, name and limit: their namespaces and largest size.
  const shared = new Map<string, { kind: string; name: string; limit: SizeLimit; bytes: number; namespaces: string[] }>();
  for (const m of manifests) {
    out.push(...checkPodNames(m));
    for (const [limit, bytes] of sizesOver(m)) {
      const key = [m.kind, m.metadata.name, limit].join('\u0000');
      const entry = shared.get(key) ?? { kind: m.kind, name: m.metadata.name, limit, bytes, namespaces: [] };
      entry.bytes = Math.max(entry.bytes, bytes);
      if (m.metadata.namespace !== undefined) entry.namespaces.push(m.metadata.namespace);
      shared.set(key, entry);
    }
  }
  for (const { kind, name, limit, bytes, namespaces } of shared.values()) {
    const where = namespaces.length === 0 ? '' : ` in namespace${namespaces.length === 1 ? '' : 's'} ${listed(namespaces)}`;
    out.push({
      ...objectLocation(`${kind} ${name}`),
      severity: OUTPUT_LIMITS[limit].severity,
      message: `${kind} ${name}${where} ${overLimit(limit, name, bytes, { pools })}`,
    });
  }
  return out;
}

/** Objects unique per group, kind and namespace, over the whole output: a duplicate would silently replace its twin on apply. */
export function checkObjectNames(manifests: readonly ObjectName[]): Diagnostic[] {
  const out: Diagnostic[] = [];
  const objects = new Set<string>();
  for (const m of manifests) {
    const group = m.apiVersion.includes('/') ? m.apiVersion.split('/')[0] : '';
    const key = [group, m.kind, m.metadata.namespace ?? '', m.metadata.name].join('\u0000');
    if (objects.has(key))
      out.push(
        error(
          m.pool === undefined ? objectLocation(`${m.kind} ${qualifiedName(m)}`) : poolLocation(m.pool),
          `${m.kind} ${qualifiedName(m)} is emitted twice; the second would replace the first`,
        ),
      );
    objects.add(key);
  }
  return out;
}

/** Containers and volumes unique within a pod: the apiserver refuses a duplicate. */
export function checkPodNames(m: Manifest, pool?: Pool): Diagnostic[] {
  const pod = m.spec?.template?.spec;
  if (pod === undefined) return [];
  const containers = [...(pod.initContainers ?? []), ...(pod.containers ?? [])].map((c) => c.name);
  return [
    ...duplicates(containers).map((name) => duplicateContainer(m, name, pool)),
    ...duplicates((pod.volumes ?? []).map((v) => v.name)).map((name) =>
      error(locate(m, pool), `${m.kind} ${qualifiedName(m)} has two volumes named "${name}"; the apiserver would refuse it`),
    ),
  ];
}

function duplicateContainer(m: Manifest, name: string, pool: Pool | undefined): Diagnostic {
  const images = pool === undefined ? [] : pool.images.filter((ref) => imageContainerName(ref) === name);
  const [a, b] = images;
  if (pool === undefined || a === undefined || b === undefined) {
    return error(locate(m, pool), `${m.kind} ${qualifiedName(m)} has two containers named "${name}"; the apiserver would refuse it`);
  }
  const first = imageLocation(pool, a.canonical);
  return error(
    imageLocation(pool, b.canonical),
    `image "${b.canonical}" gets container name "${name}", as does "${a.canonical}" (${where(first)}), in DaemonSet ${qualifiedName(m)}; ` +
      `the apiserver would refuse the pod. This is a 32-bit hash collision in prewarm's naming: pin one of the images to a digest ` +
      `(prewarm pin), which changes its name, or move it to another pool`,
  );
}

/** Where a finding about `m` points: its pool's first entry, or the object itself. */
function locate(m: Manifest, pool: Pool | undefined): Location {
  return pool === undefined ? objectLocation(`${m.kind} ${qualifiedName(m)}`) : poolLocation(pool);
}

function qualifiedName(m: ObjectName): string {
  return m.metadata.namespace === undefined ? m.metadata.name : `${m.metadata.namespace}/${m.metadata.name}`;
}
