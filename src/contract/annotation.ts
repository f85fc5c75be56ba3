/**
 * The per-pool node annotation (`status.prewarm.dev/<pool-id>`): bounded JSON details of a pool on
 * one node, the sidecar's only memory across restarts. Render and parse live together.
 */
import type { NodeState } from './names.js';
import { compareStrings } from './order.js';

/** Version of the annotation's JSON schema. */
export const ANNOTATION_VERSION = 1;
/** Upper bound of the annotation's serialized size (the apiserver allows 256 KiB for all). */
export const ANNOTATION_MAX_BYTES = 4096;
/** At most this many failing images are listed by name; the rest are counted. */
export const MAX_FAILING_LISTED = 10;

/** One failing (or, past the deadline, missing) image in the annotation. */
export interface FailingImage {
  readonly image: string;
  readonly reason: string;
  readonly message?: string;
}

/** The JSON stored in the per-pool node annotation. Bounded by {@link ANNOTATION_MAX_BYTES}. */
export interface PoolAnnotation {
  readonly v: number;
  /** The pod that wrote it; a different name means the data is stale (previous pod). */
  readonly pod: string;
  readonly state: 'warming' | NodeState;
  readonly images: number;
  readonly present?: number;
  readonly warmAt?: string;
  readonly ttwSeconds?: number;
  /** Image reference → digest of what is running. */
  readonly digests?: Readonly<Record<string, string>>;
  readonly digestsOmitted?: number;
  readonly failing?: readonly FailingImage[];
  readonly failingOmitted?: number;
}

const STATES: ReadonlySet<string> = new Set(['warming', 'warm', 'partial']);
const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const optional = (x: unknown, type: 'string' | 'number'): boolean => x === undefined || typeof x === type;
const isFailing = (x: unknown): boolean =>
  isRecord(x) && typeof x['image'] === 'string' && typeof x['reason'] === 'string' && optional(x['message'], 'string');

/** Parses our annotation; anything not exactly as {@link renderAnnotation} writes it is treated as absent. */
export function parseAnnotation(text: string | undefined): PoolAnnotation | undefined {
  if (text === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(v) || v['v'] !== ANNOTATION_VERSION || typeof v['pod'] !== 'string') return undefined;
  if (typeof v['state'] !== 'string' || !STATES.has(v['state']) || typeof v['images'] !== 'number') return undefined;
  for (const k of ['present', 'ttwSeconds', 'digestsOmitted', 'failingOmitted']) if (!optional(v[k], 'number')) return undefined;
  if (!optional(v['warmAt'], 'string') || (v['warmAt'] !== undefined && Number.isNaN(Date.parse(v['warmAt'] as string)))) return undefined;
  const digests = v['digests'];
  if (digests !== undefined && !(isRecord(digests) && Object.values(digests).every((d) => typeof d === 'string'))) return undefined;
  const failing = v['failing'];
  if (failing !== undefined && !(Array.isArray(failing) && failing.every(isFailing))) return undefined;
  return v as unknown as PoolAnnotation;
}

/** Serializes an annotation under {@link ANNOTATION_MAX_BYTES}, dropping what fits least; fixed key order. */
export function renderAnnotation(a: PoolAnnotation): string {
  let failing = [...(a.failing ?? [])];
  let failingOmitted = a.failingOmitted ?? 0;
  if (failing.length > MAX_FAILING_LISTED) {
    failingOmitted += failing.length - MAX_FAILING_LISTED;
    failing = failing.slice(0, MAX_FAILING_LISTED);
  }
  let digests = Object.entries(a.digests ?? {}).sort(([x], [y]) => compareStrings(x, y));
  let digestsOmitted = a.digestsOmitted ?? 0;
  const render = (): string =>
    JSON.stringify({
      v: a.v,
      pod: a.pod,
      state: a.state,
      images: a.images,
      ...(a.present !== undefined ? { present: a.present } : {}),
      ...(a.warmAt !== undefined ? { warmAt: a.warmAt } : {}),
      ...(a.ttwSeconds !== undefined ? { ttwSeconds: a.ttwSeconds } : {}),
      ...(digests.length ? { digests: Object.fromEntries(digests) } : {}),
      ...(digestsOmitted ? { digestsOmitted } : {}),
      ...(failing.length ? { failing } : {}),
      ...(failingOmitted ? { failingOmitted } : {}),
    });
  let text = render();
  while (Buffer.byteLength(text) > ANNOTATION_MAX_BYTES && (digests.length || failing.length)) {
    if (digests.length) {
      const drop = Math.max(1, Math.ceil(digests.length / 4));
      digests = digests.slice(0, digests.length - drop);
      digestsOmitted += drop;
    } else {
      failing = failing.slice(0, failing.length - 1);
      failingOmitted += 1;
    }
    text = render();
  }
  return text;
}
