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
import { SpecError, type Diagnostic, type Location, type Severity } from '../imagecache/errors.js';
import type { Bundle, Pool } from '../imagecache/model.js';
import { gateKeyRefusal } from '../contract/gate-key.js';
import { LABEL_POOL_MEMBER, POOLS_CONFIGMAP } from '../contract/names.js';
import { nodeLabelKey } from '../contract/identity.js';
import { daemonSetName, imageContainerName, pullSecretVolumeName } from './naming.js';

/** A synthesized manifest, as far as these checks read it. */
export interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly labels?: Readonly<Record<string, string>> };
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

const MIB = 1024 * 1024;

/**
 * Every limit synth enforces or warns about, in one table; the README's "Limits" table states the
 * same numbers.
 */
export const LIMITS = {
  /**
   * The apiserver refuses a ConfigMap whose `data` and `binaryData` values total more than 1 MiB
   * (core/v1 validation, MaxSecretSize). Every namespace's `prewarm-pools` lists every pool of
   * the bundle, about 290 to 450 bytes each: a few thousand pools fill it.
   */
  configMapDataBytes: { limit: 1 * MIB, severity: 'error' as Severity },
  /**
   * etcd refuses a write over its default `--max-request-bytes` (1.5 MiB), and the apiserver
   * answers "request is too large". Measured on the object's compact JSON: larger than the
   * protobuf etcd stores, to which server-side apply then adds managedFields. A DaemonSet passes
   * it at about 3,000 images.
   */
  objectBytes: { limit: 1.5 * MIB, severity: 'error' as Severity },
  /**
   * Client-side `kubectl apply` (and Argo CD without `ServerSideApply=true`) copies the whole
   * object into the `last-applied-configuration` annotation, and annotations are limited to
   * 256 KiB in total: such an apply is refused. A DaemonSet passes it at about 490 images.
   */
  clientSideApplyBytes: { limit: 256 * 1024, severity: 'warning' as Severity },
  /**
   * Memory that the pull pods of every pool selecting one node request there together. Each image
   * container requests 4 MiB, so about 245 images of pools that share a node reach it; that
   * memory is reserved on every such node.
   */
  memoryPerNodeBytes: { limit: 1024 * MIB, severity: 'warning' as Severity },
} as const;

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
    const id = pool.id;
    const first = claim(byId, id, pool);
    if (first !== undefined) {
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
      const other = claim(bySecret, volume, secret);
      if (other !== undefined) {
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
 * Gate keys against the trust boundary (src/contract/gate-key.ts): a pool gates only on a key under
 * `prewarm.dev/`, or one that `allowed` (the synth invocation's `--allow-gate-key`) admits, and never
 * on a taint its own tolerations tolerate or one Kubernetes itself lifts. Checked on the model,
 * before any construct renders a key into a sidecar's environment, pools.json or the admission
 * policy.
 */
export function checkGateKeys(bundle: Bundle, allowed: readonly string[]): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const pool of bundle.pools) {
    const key = pool.settings.gate?.taintKey;
    if (key === undefined) continue;
    const why = gateKeyRefusal(key, pool.tolerations, allowed);
    if (why === undefined) continue;
    const at = pool.settingLocations.gateTaintKey ?? pool.settingLocations.gate ?? poolLocation(pool);
    const entry = poolLocation(pool);
    out.push(error(at, `pool ${pool.namespace}/${pool.id} (${where(entry)}): ${why}`));
  }
  return out;
}

/**
 * Node selectors a pool can never be warm under: its own state label (`prewarm.dev/<id>`) is set
 * by its sidecar only on nodes where its pods already run, so a pool selecting on it never gets a
 * pod onto a node that lacks the label, and never turns a node warm.
 */
export function checkPoolSelectors(bundle: Bundle): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const pool of bundle.pools) {
    const own = nodeLabelKey(pool.id);
    if (!(own in pool.nodeSelector)) continue;
    for (const origin of pool.origins) {
      out.push(
        error(
          { ...origin.location, path: `${origin.location.path}.nodeSelector` },
          `the node selector names ${own}, the pool's own state label, which its sidecar sets only on nodes where the pool already runs: ` +
            `the pool would never get a pod onto a node without it, and never turn a node warm; select on a label the node has when it joins`,
        ),
      );
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
  const objects = new Set<string>();
  for (const m of manifests) {
    const pool = poolOf(m, pools);
    const group = m.apiVersion.includes('/') ? m.apiVersion.split('/')[0] : '';
    const key = [group, m.kind, m.metadata.namespace ?? '', m.metadata.name].join('\u0000');
    if (objects.has(key))
      out.push(error(locate(m, pool), `${m.kind} ${qualifiedName(m)} is emitted twice; the second would replace the first`));
    objects.add(key);

    const pod = m.spec?.template?.spec;
    if (pod === undefined) continue;
    const containers = [...(pod.initContainers ?? []), ...(pod.containers ?? [])].map((c) => c.name);
    for (const name of duplicates(containers)) out.push(duplicateContainer(m, name, pool));
    for (const name of duplicates((pod.volumes ?? []).map((v) => v.name))) out.push(duplicateVolume(m, name, pool));
  }
  return out;
}

/**
 * Object sizes and ConfigMap data against {@link LIMITS}, and the memory pull pods request per
 * node. A DaemonSet's findings point at its pool's first entry; an object that every namespace
 * holds alike (the pools ConfigMap) is reported once, naming its namespaces.
 */
export function checkLimits(manifests: readonly Manifest[], bundle: Bundle): Diagnostic[] {
  const out: Diagnostic[] = [];
  const pools = poolsByDaemonSet(bundle);
  // Objects without a pool, by kind, name and limit: their namespaces and largest size.
  const shared = new Map<string, { kind: string; name: string; limit: SizeLimit; bytes: number; namespaces: string[] }>();
  for (const m of manifests) {
    const over: [SizeLimit, number][] = [];
    if (m.kind === 'ConfigMap') {
      const bytes = [...Object.values(m.data ?? {}), ...Object.values(m.binaryData ?? {})].reduce((n, v) => n + Buffer.byteLength(v), 0);
      if (bytes > LIMITS.configMapDataBytes.limit) over.push(['configMapDataBytes', bytes]);
    }
    const bytes = Buffer.byteLength(JSON.stringify(m));
    if (bytes > LIMITS.objectBytes.limit) over.push(['objectBytes', bytes]);
    else if (bytes > LIMITS.clientSideApplyBytes.limit) over.push(['clientSideApplyBytes', bytes]);

    const pool = poolOf(m, pools);
    for (const [limit, bytes] of over) {
      if (pool !== undefined) {
        out.push({
          ...poolLocation(pool),
          severity: LIMITS[limit].severity,
          message: `DaemonSet ${qualifiedName(m)} ${overLimit(limit, m.metadata.name, bytes, bundle, pool)}`,
        });
        continue;
      }
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
      severity: LIMITS[limit].severity,
      message: `${kind} ${name}${where} ${overLimit(limit, name, bytes, bundle)}`,
    });
  }

  const worst = worstNode(manifests, pools);
  if (worst !== undefined && worst.bytes > LIMITS.memoryPerNodeBytes.limit) {
    const labels = Object.entries(worst.node.nodeSelector).map(([k, v]) => `${k}=${v}`);
    out.push({
      ...poolLocation(worst.node),
      severity: LIMITS.memoryPerNodeBytes.severity,
      message:
        `${labels.length === 0 ? 'every node' : `a node labelled ${labels.join(',')}`} runs the pull pods of ${listed(worst.pools.map((p) => `${p.namespace}/${p.id}`))}, ` +
        `which request ${size(worst.bytes, false)} of memory there while it warms (holders and burst pullers), over ${size(LIMITS.memoryPerNodeBytes.limit, false)}: ` +
        `every image reserves 4 MiB on each node its pools select, and 4 MiB more in its puller during the warm-up ` +
        `(fewer images per node, pools with narrower selectors, or fewer lanes reserve less)`,
    });
  }
  return out;
}

/** The limits {@link checkLimits} measures objects against. */
type SizeLimit = 'configMapDataBytes' | 'objectBytes' | 'clientSideApplyBytes';

/** What exceeding `limit` by reaching `bytes` means, and what to do about it. */
function overLimit(limit: SizeLimit, name: string, bytes: number, bundle: Bundle, pool?: Pool): string {
  const split = pool === undefined ? '' : `; split the pool's ${pool.images.length} images across pools (another selector or tolerations)`;
  switch (limit) {
    case 'configMapDataBytes':
      return (
        `would hold ${size(bytes)} of data; the apiserver refuses a ConfigMap over ${size(LIMITS[limit].limit)}` +
        (name === POOLS_CONFIGMAP
          ? `: it lists all ${bundle.pools.length} pools of the bundle, so fewer pools (fewer distinct selectors and tolerations) fit`
          : '')
      );
    case 'objectBytes':
      return `would be ${size(bytes)} as JSON; the apiserver refuses an object over about ${size(LIMITS[limit].limit)}${split}`;
    case 'clientSideApplyBytes':
      return (
        `is ${size(bytes)} as JSON: client-side "kubectl apply" and Argo CD without ServerSideApply=true will fail on it, since they copy it ` +
        `into an annotation limited to ${size(LIMITS[limit].limit)}; apply it server-side${split}`
      );
  }
}

/** At most five items, then how many more. */
function listed(items: readonly string[]): string {
  return items.length <= 5 ? items.join(', ') : `${items.slice(0, 5).join(', ')} and ${items.length - 5} more`;
}

/** An owned namespace that no ImageCache is in is not emitted: likely a typo, or a left-over. */
export function checkOwnedNamespaces(bundle: Bundle, owned: readonly string[]): Diagnostic[] {
  return owned
    .filter((ns) => !bundle.namespaces.includes(ns))
    .map((ns) => ({
      ...objectLocation(`Namespace ${ns}`),
      severity: 'warning',
      message: `namespace "${ns}" is owned, but no ImageCache is in it, so it is not emitted (a prune deletes it if it was emitted before)`,
    }));
}

/**
 * The node whose pull pods request the most memory, among nodes labelled exactly like one pool's
 * selector: such a node runs every pool whose selector is a subset (an upper bound: taints may
 * keep some pools off it). Counted while the node warms, the peak: each pool's holder and all of
 * its burst pullers run there then, so an image a puller pulls is requested twice.
 */
function worstNode(
  manifests: readonly Manifest[],
  pools: ReadonlyMap<string, Pool>,
): { node: Pool; pools: Pool[]; bytes: number } | undefined {
  const byId = new Map([...pools.values()].map((p) => [`${p.namespace}/${p.id}`, p]));
  const requests = new Map<Pool, number>();
  for (const m of manifests) {
    // Holder and pullers alike carry the pool-member label with the pool id.
    const member = m.metadata.labels?.[LABEL_POOL_MEMBER];
    const pool = m.kind === 'DaemonSet' && member !== undefined ? byId.get(`${m.metadata.namespace ?? ''}/${member}`) : undefined;
    const pod = m.spec?.template?.spec;
    if (pool === undefined || pod === undefined) continue;
    // The scheduler's effective request: init containers run one at a time, before the rest.
    const init = Math.max(0, ...(pod.initContainers ?? []).map(memoryRequest));
    const containers = (pod.containers ?? []).reduce((n, c) => n + memoryRequest(c), 0);
    requests.set(pool, (requests.get(pool) ?? 0) + Math.max(init, containers));
  }
  const selectors = [...requests.keys()].map((p) => [p, Object.entries(p.nodeSelector)] as const);
  let worst: { node: Pool; pools: Pool[]; bytes: number } | undefined;
  for (const node of requests.keys()) {
    const on = selectors.filter(([, sel]) => sel.every(([k, v]) => node.nodeSelector[k] === v)).map(([p]) => p);
    const bytes = on.reduce((n, p) => n + (requests.get(p) ?? 0), 0);
    if (worst === undefined || bytes > worst.bytes) worst = { node, pools: on, bytes };
  }
  return worst;
}

const QUANTITY = /^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/;
const UNITS: Readonly<Record<string, number>> = {
  '': 1,
  Ki: 1024,
  Mi: MIB,
  Gi: 1024 * MIB,
  Ti: 1024 * 1024 * MIB,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
};

/** A container's memory request in bytes; prewarm writes only the quantity forms above. */
function memoryRequest(c: NamedContainer): number {
  const q = c.resources?.requests?.['memory'];
  if (q === undefined) return 0;
  const m = QUANTITY.exec(q);
  if (m === null) throw new Error(`unexpected memory quantity "${q}" on container ${c.name}`);
  return Number(m[1]) * (UNITS[m[2] ?? ''] ?? 1);
}

/** DaemonSet `namespace/name` → its pool, named as the constructs name them. */
function poolsByDaemonSet(bundle: Bundle): Map<string, Pool> {
  return new Map(bundle.pools.map((p) => [`${p.namespace}/${daemonSetName(p.id)}`, p]));
}

/** The pool behind a pull DaemonSet; undefined for every other object. */
function poolOf(m: Manifest, pools: ReadonlyMap<string, Pool>): Pool | undefined {
  return m.kind === 'DaemonSet' ? pools.get(`${m.metadata.namespace ?? ''}/${m.metadata.name}`) : undefined;
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

function duplicateVolume(m: Manifest, name: string, pool: Pool | undefined): Diagnostic {
  return error(locate(m, pool), `${m.kind} ${qualifiedName(m)} has two volumes named "${name}"; the apiserver would refuse it`);
}

/** Records `value` under `key` unless a value is there already; returns that earlier value. */
function claim<T>(claims: Map<string, T>, key: string, value: T): T | undefined {
  const earlier = claims.get(key);
  if (earlier === undefined) claims.set(key, value);
  return earlier;
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
function objectLocation(object: string): Location {
  return { file: object, document: 0, line: 0, column: 0, path: '' };
}

/** Where a finding about `m` points: its pool's first entry, or the object itself. */
function locate(m: Manifest, pool: Pool | undefined): Location {
  return pool === undefined ? objectLocation(`${m.kind} ${qualifiedName(m)}`) : poolLocation(pool);
}

function qualifiedName(m: Manifest): string {
  return m.metadata.namespace === undefined ? m.metadata.name : `${m.metadata.namespace}/${m.metadata.name}`;
}

function error(at: Location, message: string): Diagnostic {
  return { ...at, severity: 'error', message };
}

/** A byte count for messages: `1.5 MiB (1,572,864 bytes)`, or without the exact count. */
function size(bytes: number, exact = true): string {
  const [unit, scale] = bytes >= 1024 * MIB ? ['GiB', 1024 * MIB] : bytes >= MIB ? ['MiB', MIB] : ['KiB', 1024];
  const human = `${Number((bytes / scale).toFixed(2))} ${unit}`;
  return exact ? `${human} (${bytes.toLocaleString('en-US')} bytes)` : human;
}
