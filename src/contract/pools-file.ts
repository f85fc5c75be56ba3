/** pools.json: every pool of a bundle, as synth writes it into `prewarm-pools` and each sidecar reads it. */
import { isKubernetesNodeTaint, isQualifiedKey } from './gate-key.js';
import { DEFAULTS } from './names.js';
import {
  placementSelectsHealthyNode,
  withGateToleration,
  type Placement,
  type PlacementNode,
  type TaintEffect,
  type Toleration,
} from './placement.js';
import { compareStrings } from './order.js';

/** One pool as the sidecar sees it. */
export interface PoolEntry {
  /** Pool id, unique cluster-wide. */
  readonly id: string;
  /** Namespace of the pool's DaemonSet. */
  readonly namespace: string;
  /** Full key of the per-pool node label. */
  readonly nodeLabelKey: string;
  /** The pool's placement exactly as its DaemonSet renders it (gate toleration included). */
  readonly placement: Placement;
  /** Gating taint key lifted by this pool, or empty when the pool does not gate. */
  readonly gateTaintKey: string;
  /** The pool's fail-open deadline; every sidecar on a node computes the absolute bound from it. */
  readonly deadlineSeconds?: number;
}

/** Contents of pools.json: every pool of the bundle, sorted by id. */
export interface PoolsFile {
  readonly pools: readonly PoolEntry[];
}

/** The pools that gate `node` with taint `key`, on the node as it is once its conditions are healthy. */
export function poolsGating(pools: PoolsFile, key: string, node: PlacementNode): PoolEntry[] {
  return pools.pools.filter((p) => p.gateTaintKey === key && placementSelectsHealthyNode(p.placement, node));
}

/** A pool's deadline as pools.json gives it, or the default a file of an earlier release left implicit. */
export function deadlineOf(p: PoolEntry): number {
  return p.deadlineSeconds ?? DEFAULTS.deadlineSeconds;
}

/** A malformed pools.json; the sidecar refuses to start on one, with this message. */
export class PoolsFileError extends Error {
  override readonly name = 'PoolsFileError';
}

/** The file's text; placement written flat, the layout older sidecars read during an upgrade. */
export function renderPoolsFile(pools: readonly PoolEntry[]): string {
  const entries = [...pools]
    .sort((a, b) => compareStrings(a.id, b.id))
    .map((p) => ({
      id: p.id,
      namespace: p.namespace,
      nodeLabelKey: p.nodeLabelKey,
      nodeSelector: p.placement.nodeSelector,
      tolerations: p.placement.tolerations,
      gateTaintKey: p.gateTaintKey,
      ...(p.deadlineSeconds === undefined ? {} : { deadlineSeconds: p.deadlineSeconds }),
    }));
  return `${JSON.stringify({ pools: entries }, null, 2)}\n`;
}

const OPERATORS = new Set(['Exists', 'Equal']);
const EFFECTS = new Set(['NoSchedule', 'PreferNoSchedule', 'NoExecute']);

/** Parses and checks pools.json. */
export function parsePoolsFile(text: string): PoolsFile {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new PoolsFileError(`pools.json is not valid JSON: ${(e as Error).message}`);
  }
  const pools = (raw as { pools?: unknown } | null)?.pools;
  if (!Array.isArray(pools)) throw new PoolsFileError('pools.json: "pools" must be an array');
  return { pools: pools.map((p: unknown, i) => parseEntry(p, `pools.json: pools[${i}]`)) };
}

function parseEntry(p: unknown, where: string): PoolEntry {
  if (!isObject(p)) throw new PoolsFileError(`${where} must be an object`);
  for (const k of ['id', 'namespace', 'nodeLabelKey', 'gateTaintKey']) {
    if (typeof p[k] !== 'string') throw new PoolsFileError(`${where}.${k} must be a string`);
  }
  const selector = p['nodeSelector'];
  if (!isObject(selector) || !Object.values(selector).every((x) => typeof x === 'string')) {
    throw new PoolsFileError(`${where}.nodeSelector must map strings to strings`);
  }
  const tolerations = p['tolerations'];
  if (!Array.isArray(tolerations)) throw new PoolsFileError(`${where}.tolerations must be an array`);
  const d = p['deadlineSeconds'];
  if (d !== undefined && (typeof d !== 'number' || !Number.isInteger(d) || d <= 0)) {
    throw new PoolsFileError(`${where}.deadlineSeconds must be a positive integer`);
  }
  const gateTaintKey = p['gateTaintKey'] as string;
  // Synthesis never writes such a key (src/contract/gate-key.ts); a file that holds one was not
  // written by it, and is refused rather than read as a pool gating on a system taint.
  if (gateTaintKey !== '' && (!isQualifiedKey(gateTaintKey) || isKubernetesNodeTaint(gateTaintKey))) {
    throw new PoolsFileError(
      `${where}.gateTaintKey must be a taint key prewarm may gate on, got ${JSON.stringify(gateTaintKey.slice(0, 100))}`,
    );
  }
  return {
    id: p['id'] as string,
    namespace: p['namespace'] as string,
    nodeLabelKey: p['nodeLabelKey'] as string,
    // Verbatim, as the DaemonSet has it. Files of earlier releases left the gate toleration
    // implicit; withGateToleration adds it back, and leaves a file this release wrote unchanged.
    placement: {
      nodeSelector: selector as Record<string, string>,
      tolerations: withGateToleration(
        tolerations.map((t: unknown, j) => parseToleration(t, `${where}.tolerations[${j}]`)),
        gateTaintKey,
      ),
    },
    gateTaintKey,
    ...(d === undefined ? {} : { deadlineSeconds: d }),
  };
}

function parseToleration(t: unknown, where: string): Toleration {
  if (!isObject(t)) throw new PoolsFileError(`${where}: toleration must be an object`);
  for (const k of ['key', 'value']) {
    if (t[k] !== undefined && typeof t[k] !== 'string') throw new PoolsFileError(`${where}.${k} must be a string`);
  }
  const operator = t['operator'] ?? 'Equal';
  if (typeof operator !== 'string' || !OPERATORS.has(operator)) throw new PoolsFileError(`${where}.operator must be "Exists" or "Equal"`);
  const effect = t['effect'];
  if (effect !== undefined && effect !== '' && (typeof effect !== 'string' || !EFFECTS.has(effect))) {
    throw new PoolsFileError(`${where}.effect must be one of NoSchedule, PreferNoSchedule, NoExecute`);
  }
  const seconds = t['tolerationSeconds'];
  if (seconds !== undefined && (typeof seconds !== 'number' || !Number.isInteger(seconds))) {
    throw new PoolsFileError(`${where}.tolerationSeconds must be an integer`);
  }
  const key = t['key'] as string | undefined;
  const value = t['value'] as string | undefined;
  return {
    ...(key === undefined || key === '' ? {} : { key }),
    operator: operator as Toleration['operator'],
    ...(value === undefined || value === '' ? {} : { value }),
    ...(effect === undefined || effect === '' ? {} : { effect: effect as TaintEffect }),
    ...(seconds === undefined ? {} : { tolerationSeconds: seconds }),
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
