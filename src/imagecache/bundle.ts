/** ImageCaches → pools: a distinct node selector plus tolerations within a namespace, images de-duplicated. */
import { placementOf, sortTolerations, tolerationKey, withStartupTolerations } from '../contract/placement.js';
import { poolId } from '../contract/identity.js';
import type { Diagnostic, Location } from './errors.js';
import {
  API_VERSIONS,
  type Bundle,
  type CacheEntry,
  type ImageCache,
  type Pool,
  type PoolOrigin,
  type PoolSettings,
  type Toleration,
} from './model.js';
import type { ImageRef } from '../oci/reference.js';
import { compareStrings } from '../contract/order.js';

/** Result of grouping: the bundle, plus conflicts found while merging. */
export interface BundleResult {
  readonly bundle: Bundle;
  readonly diagnostics: readonly Diagnostic[];
}

interface Accumulator {
  readonly namespace: string;
  readonly key: string;
  readonly nodeSelector: Readonly<Record<string, string>>;
  readonly tolerations: readonly Toleration[];
  name?: { value: string; location: Location };
  readonly images: Map<string, ImageRef>;
  readonly secrets: Set<string>;
  readonly sources: Set<string>;
  readonly origins: PoolOrigin[];
  settings: { value: PoolSettings; from: ImageCache };
}

/** Groups validated ImageCaches into pools; the result is sorted and independent of the input order. */
export function buildBundle(caches: readonly ImageCache[]): BundleResult {
  const diagnostics: Diagnostic[] = [];
  const pools = new Map<string, Accumulator>();
  const sorted = [...caches].sort((a, b) => compareStrings(`${a.namespace}/${a.name}`, `${b.namespace}/${b.name}`));
  for (const cache of sorted) {
    for (const entry of cache.entries) {
      const key = poolKey(cache.namespace, entry);
      let pool = pools.get(key);
      if (pool === undefined) {
        pool = {
          namespace: cache.namespace,
          key,
          nodeSelector: entry.nodeSelector,
          tolerations: sortTolerations(entry.tolerations),
          images: new Map(),
          secrets: new Set(),
          sources: new Set(),
          origins: [],
          settings: { value: cache.settings, from: cache },
        };
        pools.set(key, pool);
      } else if (cache.apiVersion === API_VERSIONS.kubeFledged) {
        // kube-fledged's format has no pool-wide settings, so its documents take whatever the
        // prewarm.dev documents of their pool set: a kube-fledged file works unchanged beside them.
      } else if (pool.settings.from.apiVersion === API_VERSIONS.kubeFledged) {
        pool.settings = { value: cache.settings, from: cache };
      } else {
        mergeSettings(pool, cache, diagnostics);
      }
      if (entry.pool !== undefined) mergeName(pool, entry, diagnostics);
      for (const image of entry.images) pool.images.set(image.canonical, image);
      for (const secret of cache.imagePullSecrets) pool.secrets.add(secret);
      pool.sources.add(`${cache.namespace}/${cache.name}`);
      pool.origins.push({
        imageCache: `${cache.namespace}/${cache.name}`,
        location: entry.location,
        images: entry.images.map((i) => i.canonical),
      });
    }
  }
  checkNamesUnique([...pools.values()], diagnostics);

  const out: Pool[] = [...pools.values()]
    .sort((a, b) => compareStrings(a.namespace, b.namespace) || compareStrings(a.key, b.key))
    .map((p) => {
      const placement = placementOf(p.nodeSelector, p.tolerations, p.settings.value.gate?.taintKey);
      const identity = { ...(p.name === undefined ? {} : { name: p.name.value }), key: p.key, nodeSelector: sortRecord(p.nodeSelector) };
      return Object.freeze({
        id: poolId(identity),
        namespace: p.namespace,
        ...identity,
        tolerations: p.tolerations,
        placement,
        pullerPlacement: p.settings.value.earlyPull ? withStartupTolerations(placement) : placement,
        images: [...p.images.keys()].sort(compareStrings).map((k) => p.images.get(k) as ImageRef),
        imagePullSecrets: [...p.secrets].sort(compareStrings),
        settings: p.settings.value,
        settingLocations: p.settings.from.settingLocations,
        sources: [...p.sources].sort(compareStrings),
        origins: p.origins,
      });
    });
  const namespaces = [...new Set(out.map((p) => p.namespace))].sort(compareStrings);
  return { bundle: Object.freeze({ pools: out, namespaces }), diagnostics };
}

/** Canonical pool identity; key order and toleration order never change it. */
export function poolKey(namespace: string, entry: Pick<CacheEntry, 'nodeSelector' | 'tolerations'>): string {
  return JSON.stringify([namespace, Object.entries(sortRecord(entry.nodeSelector)), sortTolerations(entry.tolerations).map(tolerationKey)]);
}

function sortRecord(record: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => compareStrings(a, b)));
}

/** One merge rule per pool-wide setting, over every key, so a setting added without a rule fails to compile. */
export type SettingRules<S> = { readonly [K in keyof S]-?: (value: NonNullable<S[K]>) => string };

const asJson = (value: unknown): string => JSON.stringify(value);

/** How each of {@link PoolSettings} merges: every ImageCache feeding a pool must agree on it. */
export const SETTING_RULES: SettingRules<PoolSettings> = {
  priorityClassName: asJson,
  maxUnavailable: asJson,
  gate: asJson,
  refreshSeconds: asJson,
  lanes: asJson,
  earlyPull: asJson,
};

/** Pool-wide settings must agree between a pool's prewarm.dev ImageCaches; reported where the later one sets it. */
function mergeSettings(pool: Accumulator, cache: ImageCache, diagnostics: Diagnostic[]): void {
  const mine = pool.settings.value;
  const theirs = cache.settings;
  for (const field of Object.keys(SETTING_RULES) as (keyof PoolSettings)[]) {
    const ours = settingKey(field, mine);
    const other = settingKey(field, theirs);
    if (ours === other) continue;
    const from = pool.settings.from;
    const location = cache.settingLocations[field] ?? cache.location;
    const first = from.settingLocations[field] ?? from.location;
    diagnostics.push({
      ...location,
      severity: 'error',
      message:
        `ImageCache ${cache.namespace}/${cache.name} shares a pool with ${from.namespace}/${from.name} ` +
        `(${first.file}:${first.line}:${first.column}) but sets ${field} differently: ` +
        `${other} vs ${ours}; pool-wide settings must agree`,
    });
  }
}

/** One setting's value in the form its rule compares; `unset` when the ImageCache leaves it out. */
function settingKey(field: keyof PoolSettings, settings: PoolSettings): string {
  const value = settings[field];
  // TypeScript does not correlate a rule with its value across a union of keys (TypeScript#30581).
  const rule = SETTING_RULES[field] as (value: NonNullable<PoolSettings[keyof PoolSettings]>) => string;
  return value === undefined ? 'unset' : rule(value);
}

function mergeName(pool: Accumulator, entry: CacheEntry, diagnostics: Diagnostic[]): void {
  const name = entry.pool as string;
  if (pool.name === undefined) {
    pool.name = { value: name, location: entry.location };
  } else if (pool.name.value !== name) {
    const first = pool.name.location;
    diagnostics.push({
      ...entry.location,
      path: `${entry.location.path}.pool`,
      severity: 'error',
      message: `pool is named "${name}" here but "${pool.name.value}" at ${first.file}:${first.line}:${first.column}; one pool has one name`,
    });
  }
}

/** Explicit pool names become node label keys, which are cluster-wide: no two pools may share one. */
function checkNamesUnique(pools: readonly Accumulator[], diagnostics: Diagnostic[]): void {
  const byName = new Map<string, Accumulator>();
  for (const pool of pools) {
    if (pool.name === undefined) continue;
    const first = byName.get(pool.name.value);
    if (first === undefined) {
      byName.set(pool.name.value, pool);
      continue;
    }
    const at = first.name?.location;
    diagnostics.push({
      ...pool.name.location,
      path: `${pool.name.location.path}.pool`,
      severity: 'error',
      message:
        `pool name "${pool.name.value}" is already used by a pool with another namespace, node selector or tolerations` +
        (at === undefined ? '' : ` (${at.file}:${at.line}:${at.column})`),
    });
  }
}
