/**
 * Checks of the synthesized output that Kubernetes would make too late, or never: names that two
 * inputs share, and objects the apiserver refuses for their size or that a user would regret.
 * Every finding points back at the spec (file:line) through the pools' origins, so a refusal says
 * what to change.
 *
 * Derived names keep their 8-hex-digit (32-bit) hashes, and a collision is refused here rather
 * than made unlikely by longer hashes. A pool id is the DaemonSet's name, its immutable selector
 * value and the cluster-wide node label key; lengthening the hash would rename every existing
 * DaemonSet and node label on upgrade: each pull DaemonSet deleted and recreated at once on every
 * node (no rolling update), warm labels reset, gates re-closed. Existing outputs never hold a
 * collision that matters (the apiserver refused duplicate containers, and a DaemonSet replaced by
 * its twin was lost), so refusing keeps every working name as it is. Among names that share their
 * readable part, a pair collides with probability 2^-32 (about 10^-4 for 1,000 such names); the
 * messages say how to step around it.
 */
import { SpecError, type Diagnostic, type Location } from '../imagecache/errors.js';
import type { Bundle, Pool } from '../imagecache/model.js';
import { daemonSetName, imageContainerName, nodeLabelKey, poolId, pullSecretVolumeName } from './naming.js';

/** A synthesized manifest, as far as these checks read it. */
export interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
  readonly data?: Readonly<Record<string, string>>;
  readonly binaryData?: Readonly<Record<string, string>>;
  readonly spec?: { readonly template?: { readonly spec?: PodSpecNames } };
}

/** The parts of a pod spec whose names must be unique within the pod, and their requests. */
interface PodSpecNames {
  readonly initContainers?: readonly NamedContainer[];
  readonly containers?: readonly NamedContainer[];
  readonly volumes?: readonly { readonly name: string }[];
}

interface NamedContainer {
  readonly name: string;
  readonly resources?: { readonly requests?: Readonly<Record<string, string>> };
}

/**
 * Runs every check on the charts' manifests, then throws a {@link SpecError} if any error was
 * found (nothing may be written), or hands each warning to `onWarning`.
 */
export function checkOutput(manifests: readonly Manifest[], bundle: Bundle, onWarning?: (warning: Diagnostic) => void): void {
  settle(checkManifestNames(manifests, bundle), onWarning);
}

/** Throws a {@link SpecError} carrying every diagnostic when one is an error; otherwise reports the warnings. */
export function settle(diagnostics: readonly Diagnostic[], onWarning?: (warning: Diagnostic) => void): void {
  if (diagnostics.some((d) => d.severity === 'error')) throw new SpecError(diagnostics);
  if (onWarning !== undefined) for (const d of diagnostics) onWarning(d);
}

/**
 * Names checked on the model, while colliding inputs are still apart (the charts index DaemonSets
 * by pool id, and cdk8s-plus throws on two volumes of one name):
 * - pool ids, unique across the cluster: each is a node label key (`prewarm.dev/<id>`), a node
 *   annotation key, an entry of every pools file, and, within a namespace, a DaemonSet name;
 * - the volumes of a pool's pull secrets, which the sidecar of a refreshing pool mounts
 *   (`sidecar`: whether pull pods run the sidecar).
 */
export function checkPoolNames(bundle: Bundle, sidecar: boolean): Diagnostic[] {
  const out: Diagnostic[] = [];
  const byId = new Map<string, Pool>();
  for (const pool of bundle.pools) {
    const id = poolId(pool);
    const first = byId.get(id);
    if (first === undefined) byId.set(id, pool);
    else {
      const shared = first.namespace === pool.namespace ? ` and DaemonSet ${pool.namespace}/${daemonSetName(id)}` : '';
      out.push(
        error(
          poolLocation(pool),
          `this pool gets id "${id}", as does the pool of ${describePool(first)}: both would use node label ${nodeLabelKey(id)}${shared}, ` +
            `and one would overwrite the other's state; give one of them its own name with "pool:" (prewarm.dev/v1alpha1)`,
        ),
      );
    }
    if (!sidecar || pool.settings.refreshSeconds === 0) continue;
    const bySecret = new Map<string, string>();
    for (const secret of pool.imagePullSecrets) {
      const volume = pullSecretVolumeName(secret);
      const other = bySecret.get(volume);
      if (other === undefined) bySecret.set(volume, secret);
      else {
        out.push(
          error(
            poolLocation(pool),
            `the pull secrets "${other}" and "${secret}" of this pool (ImageCaches ${pool.sources.join(', ')}) both get volume name "${volume}" ` +
              `in the sidecar; rename one of the Secrets`,
          ),
        );
      }
    }
  }
  return out;
}

/**
 * Names unique where Kubernetes needs them: objects per group, kind and namespace; containers
 * (init containers included) and volumes within a pod. A duplicate object would silently replace
 * its twin on apply; a duplicate container or volume makes the apiserver refuse the DaemonSet.
 */
export function checkManifestNames(manifests: readonly Manifest[], bundle: Bundle): Diagnostic[] {
  const out: Diagnostic[] = [];
  const pools = poolsByDaemonSet(bundle);
  const objects = new Map<string, Manifest>();
  for (const m of manifests) {
    const ns = m.metadata.namespace ?? '';
    const key = [m.apiVersion.includes('/') ? m.apiVersion.split('/')[0] : '', m.kind, ns, m.metadata.name].join('\u0000');
    const first = objects.get(key);
    if (first === undefined) objects.set(key, m);
    else out.push(duplicateObject(m, pools));

    const pod = m.spec?.template?.spec;
    if (pod === undefined) continue;
    const pool = m.kind === 'DaemonSet' ? pools.get(`${ns}/${m.metadata.name}`) : undefined;
    const containers = [...(pod.initContainers ?? []), ...(pod.containers ?? [])].map((c) => c.name);
    for (const name of duplicates(containers)) out.push(duplicateContainer(m, name, pool));
    for (const name of duplicates((pod.volumes ?? []).map((v) => v.name))) out.push(duplicateVolume(m, name, pool));
  }
  return out;
}

/** DaemonSet `namespace/name` → its pool, named as the constructs name them. */
function poolsByDaemonSet(bundle: Bundle): Map<string, Pool> {
  return new Map(bundle.pools.map((p) => [`${p.namespace}/${daemonSetName(poolId(p))}`, p]));
}

function duplicateObject(m: Manifest, pools: ReadonlyMap<string, Pool>): Diagnostic {
  const pool = m.kind === 'DaemonSet' ? pools.get(`${m.metadata.namespace ?? ''}/${m.metadata.name}`) : undefined;
  return error(pool === undefined ? objectLocation(m) : poolLocation(pool), `${m.kind} ${qualifiedName(m)} is emitted twice; the second would replace the first`);
}

function duplicateContainer(m: Manifest, name: string, pool: Pool | undefined): Diagnostic {
  const images = pool === undefined ? [] : pool.images.filter((ref) => imageContainerName(ref) === name);
  const [a, b] = images;
  if (pool === undefined || a === undefined || b === undefined) {
    return error(pool === undefined ? objectLocation(m) : poolLocation(pool), `${m.kind} ${qualifiedName(m)} has two containers named "${name}"; the apiserver would refuse it`);
  }
  const first = imageLocation(pool, a.canonical);
  return error(
    imageLocation(pool, b.canonical),
    `image "${b.canonical}" gets container name "${name}", as does "${a.canonical}" (${where(first)}), in DaemonSet ${qualifiedName(m)}; ` +
      `the apiserver would refuse the pod. This is a 32-bit hash collision in prewarm's naming: pin one of the images to a digest ` +
      `(prewarm pin), which changes its name, or move it to another pool`,
  );
}

function duplicateVolume(m: Manifest, name: string, pool: Pool | undefined): Diagnostic {
  return error(pool === undefined ? objectLocation(m) : poolLocation(pool), `${m.kind} ${qualifiedName(m)} has two volumes named "${name}"; the apiserver would refuse it`);
}

/** Returns every value that occurs more than once, once each, in order of second occurrence. */
function duplicates(values: readonly string[]): string[] {
  const seen = new Set<string>();
  const out = new Set<string>();
  for (const v of values) (seen.has(v) ? out : seen).add(v);
  return [...out];
}

/** Where a pool was first written: its first entry. */
function poolLocation(pool: Pool): Location {
  const origin = pool.origins[0];
  if (origin === undefined) throw new Error(`pool ${pool.namespace}/${pool.key} has no origin`);
  return origin.location;
}

/** Where an image of a pool was first listed: the entry, with the image's index in its path. */
function imageLocation(pool: Pool, canonical: string): Location {
  for (const origin of pool.origins) {
    const i = origin.images.indexOf(canonical);
    if (i >= 0) return { ...origin.location, path: `${origin.location.path}.images[${i}]` };
  }
  return poolLocation(pool);
}

function describePool(pool: Pool): string {
  const origin = pool.origins[0];
  return origin === undefined ? `${pool.namespace}/${pool.key}` : `ImageCache ${origin.imageCache} (${where(origin.location)})`;
}

function where(l: Location): string {
  return `${l.file}:${l.line}:${l.column}${l.path === '' ? '' : ` ${l.path}`}`;
}

/**
 * Findings about an object that no single spec entry made (a ConfigMap listing every pool) name
 * the object where a file would go.
 */
function objectLocation(m: Manifest): Location {
  return { file: `${m.kind} ${qualifiedName(m)}`, document: 0, line: 0, column: 0, path: '' };
}

function qualifiedName(m: Manifest): string {
  return m.metadata.namespace === undefined ? m.metadata.name : `${m.metadata.namespace}/${m.metadata.name}`;
}

function error(at: Location, message: string): Diagnostic {
  return { ...at, severity: 'error', message };
}
