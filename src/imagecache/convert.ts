/** Read fields → model: an entry's images, selector and tolerations, the tolerations checked by the apiserver's own rules. */
import { TOLERATE_ALL } from '../contract/placement.js';
import { API_VERSIONS, type ApiVersion, type CacheEntry, type Toleration } from './model.js';
import type { DocContext } from './read.js';
import { type Path, type Read } from './read.js';
import type { RawEntry, RawToleration } from './shapes.js';

/** A read `cacheSpec` entry as the model holds it; kube-fledged entries tolerate every taint, as its Jobs do. */
export function toEntry(ctx: DocContext, apiVersion: ApiVersion, entry: Read<RawEntry>, path: Path): CacheEntry {
  const v = entry.value;
  const tolerations =
    apiVersion === API_VERSIONS.kubeFledged
      ? // kube-fledged's Jobs tolerate every taint; keep placing images the same way.
        TOLERATE_ALL
      : (v.tolerations ?? []).map((t, i) => toToleration(ctx, t, [...path, 'tolerations', i]));
  return Object.freeze({
    images: v.images ?? [],
    nodeSelector: v.nodeSelector ?? {},
    tolerations,
    ...(v.pool === undefined ? {} : { pool: v.pool }),
    location: ctx.locate(entry.node, path),
  });
}

/** Applies the apiserver's own toleration rules (core/v1 validation). */
export function toToleration(ctx: DocContext, t: Read<RawToleration>, path: Path): Toleration {
  const { key, value, effect, tolerationSeconds } = t.value;
  const operator: Toleration['operator'] = t.value.operator === 'Exists' ? 'Exists' : 'Equal';
  if (operator === 'Exists' && value !== undefined && value !== '') {
    ctx.error(t.fieldNodes.value, [...path, 'value'], 'must be empty when operator is "Exists"');
  }
  if ((key === undefined || key === '') && operator !== 'Exists') {
    ctx.error(t.node, [...path, 'operator'], 'must be "Exists" when key is empty');
  }
  if (tolerationSeconds !== undefined && effect !== 'NoExecute') {
    ctx.error(t.fieldNodes.tolerationSeconds, [...path, 'tolerationSeconds'], 'is only allowed with effect "NoExecute"');
  }
  return {
    ...(key === undefined || key === '' ? {} : { key }),
    operator,
    ...(value === undefined || value === '' ? {} : { value }),
    ...(effect === undefined || effect === '' ? {} : { effect: effect as NonNullable<Toleration['effect']> }),
    ...(tolerationSeconds === undefined ? {} : { tolerationSeconds }),
  };
}
