/** The discover plan, pure and sorted: which images each pool should hold for the workloads that fit all its nodes. */
import { compareStrings } from '../contract/order.js';
import { workloadFitsPool, type PoolFit } from '../contract/placement.js';
import type { Location } from '../imagecache/errors.js';
import type { Bundle, Pool } from '../imagecache/model.js';
import type { OtherKinds, Workload } from './manifests.js';

/** Namespaces whose workloads are the cluster's own: skipped unless asked for. */
export const SYSTEM_NAMESPACES: readonly string[] = ['kube-system'];

/** Options of {@link planDiscover}, each bringing back something skipped by default. */
export interface PlanOptions {
  /** Add the images of DaemonSets. @default false */
  readonly daemonSets?: boolean;
  /** Add the images of workloads in kube-system and in prewarm's own namespaces. @default false */
  readonly systemNamespaces?: boolean;
  /** List images a pool already holds. @default false */
  readonly held?: boolean;
  /** Add the images of workloads that fit part of a pool to it. @default false */
  readonly partial?: boolean;
  /** Propose removing images of the specs that no workload uses. @default false */
  readonly prune?: boolean;
}

/** One image of a spec, as written in a `cacheSpec` entry. */
export interface SpecImage {
  readonly canonical: string;
  readonly text: string;
  readonly location: Location;
  /** Marked by a person to stay whatever the workloads (see docs/discover.md). */
  readonly keep: boolean;
}

/** An image with the workloads that need it. */
export interface NeededImage {
  readonly canonical: string;
  /** As the first workload (by id) writes it: what goes into the spec. */
  readonly text: string;
  readonly workloads: readonly string[];
}

/** What changes in one pool. */
export interface PoolPlan {
  /** The pool's name, or its id when the spec named none. */
  readonly pool: string;
  readonly namespace: string;
  /** The entry that gets new images: the first entry feeding the pool in the first file, by path. */
  readonly target: Location;
  readonly add: readonly NeededImage[];
  /** Images the pool holds that workloads need: listed only with {@link PlanOptions.held}. */
  readonly held: readonly NeededImage[];
  /** Images no workload that can run on the pool uses: with {@link PlanOptions.prune}. */
  readonly remove: readonly SpecImage[];
  /** Images no workload uses that a person marked to keep: with {@link PlanOptions.prune}. */
  readonly kept: readonly SpecImage[];
}

/** A workload and a pool it fits only part of, or fits none of. */
export interface Misfit {
  readonly workload: string;
  readonly pool: string;
  readonly reason: string;
}

/** A workload left out, and why (with the flag that brings it back). */
export interface SkippedWorkload {
  readonly workload: string;
  readonly reason: string;
}

/** The whole plan. */
export interface Plan {
  readonly pools: readonly PoolPlan[];
  /** Workloads that run on some nodes of a pool but not all: added only with `--partial`. */
  readonly partial: readonly Misfit[];
  /** Workloads no pool fits, with each pool's reason. */
  readonly uncovered: readonly { readonly workload: string; readonly reasons: readonly Misfit[] }[];
  readonly skipped: readonly SkippedWorkload[];
  /** Documents that hold no pod template, by kind. */
  readonly others: OtherKinds;
  /** Whether `--write` would change a spec file. */
  readonly changes: boolean;
}

/** The name a plan shows for a pool. */
export function poolName(pool: Pool): string {
  return pool.name ?? pool.id;
}

/** Why a workload is left out, or undefined when it is read. */
function skipReason(w: Workload, own: ReadonlySet<string>, options: PlanOptions): string | undefined {
  if (w.kind === 'DaemonSet' && options.daemonSets !== true)
    return 'a DaemonSet: its pods pull their images on a joining node anyway (--include-daemonsets)';
  if (options.systemNamespaces !== true) {
    if (SYSTEM_NAMESPACES.includes(w.namespace)) return `in ${w.namespace} (--include-system-namespaces)`;
    if (own.has(w.namespace)) return `in ${w.namespace}, a namespace prewarm owns (--include-system-namespaces)`;
  }
  if (w.images.length === 0) return 'names no image';
  return undefined;
}

/** The plan for `workloads` against `bundle`'s pools; `specImages` (by pool id) are for pruning. */
export function planDiscover(
  bundle: Bundle,
  workloads: readonly Workload[],
  others: OtherKinds,
  specImages: ReadonlyMap<string, readonly SpecImage[]>,
  options: PlanOptions = {},
): Plan {
  const own = new Set(bundle.namespaces);
  const sorted = [...workloads].sort((a, b) => compareStrings(a.id, b.id));
  const fits = new Map<string, PoolFit[]>(sorted.map((w) => [w.id, bundle.pools.map((p) => fitOf(p, w))]));
  const skipped: SkippedWorkload[] = [];
  const partial: Misfit[] = [];
  const uncovered: { workload: string; reasons: Misfit[] }[] = [];
  const needed = bundle.pools.map(() => new Map<string, { text: string; workloads: string[] }>());
  const used = bundle.pools.map(() => new Set<string>());
  for (const w of sorted) {
    const verdicts = fits.get(w.id) as PoolFit[];
    // Whatever is skipped still counts as a use: prune never removes an image a workload runs.
    verdicts.forEach((f, i) => {
      if (f.fit !== 'none') for (const image of w.images) used[i]?.add(image.canonical);
    });
    const skip = skipReason(w, own, options);
    if (skip !== undefined) {
      skipped.push({ workload: w.id, reason: skip });
      continue;
    }
    verdicts.forEach((f, i) => {
      const pool = bundle.pools[i] as Pool;
      if (f.fit === 'partial') partial.push({ workload: w.id, pool: poolName(pool), reason: f.reason });
      if (f.fit === 'fits' || (f.fit === 'partial' && options.partial === true)) {
        for (const image of w.images) {
          const entry = needed[i]?.get(image.canonical);
          if (entry === undefined) needed[i]?.set(image.canonical, { text: image.text, workloads: [w.id] });
          else entry.workloads.push(w.id);
        }
      }
    });
    if (!verdicts.some((f) => f.fit !== 'none')) {
      uncovered.push({
        workload: w.id,
        reasons: verdicts.map((f, i) => ({
          workload: w.id,
          pool: poolName(bundle.pools[i] as Pool),
          reason: f.fit === 'none' ? f.reason : '',
        })),
      });
    }
  }
  const pools = bundle.pools.map((pool, i) =>
    poolPlan(pool, needed[i] ?? new Map(), used[i] ?? new Set(), specImages.get(pool.id) ?? [], options),
  );
  const changes = pools.some((p) => p.add.length > 0 || p.remove.length > 0);
  return { pools, partial, uncovered, skipped, others, changes };
}

function fitOf(pool: Pool, w: Workload): PoolFit {
  return workloadFitsPool(
    { nodeSelector: pool.nodeSelector, tolerations: pool.tolerations, gateTaintKey: pool.settings.gate?.taintKey },
    w.placement,
  );
}

function poolPlan(
  pool: Pool,
  needed: ReadonlyMap<string, { text: string; workloads: string[] }>,
  used: ReadonlySet<string>,
  specImages: readonly SpecImage[],
  options: PlanOptions,
): PoolPlan {
  const holds = new Set(pool.images.map((r) => r.canonical));
  const list = [...needed.entries()]
    .sort(([a], [b]) => compareStrings(a, b))
    .map(([canonical, n]) => ({ canonical, text: n.text, workloads: n.workloads }));
  const stale = options.prune === true ? specImages.filter((s) => !used.has(s.canonical)) : [];
  const target = [...pool.origins].sort(
    (a, b) =>
      compareStrings(a.location.file, b.location.file) || a.location.document - b.location.document || a.location.line - b.location.line,
  )[0]?.location as Location;
  return {
    pool: poolName(pool),
    namespace: pool.namespace,
    target,
    add: list.filter((n) => !holds.has(n.canonical)),
    held: options.held === true ? list.filter((n) => holds.has(n.canonical)) : [],
    remove: stale.filter((s) => !s.keep),
    kept: stale.filter((s) => s.keep),
  };
}
