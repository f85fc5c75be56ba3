/** A pool's identity: its id and the node label and annotation keys derived from it, computed once at synth. */
import { createHash } from 'node:crypto';
import { NODE_ANNOTATION_PREFIX, NODE_LABEL_PREFIX } from './names.js';

/** Length of the short hashes in names; pool ids are immutable selector values, so it never changes. */
export const HASH_LENGTH = 8;

/** Pool ids sit inside `prewarm-<id>` (DaemonSet) and `prewarm.dev/<id>` (label key name part). */
const POOL_ID_MAX = 40;

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

/** What a pool id is computed from: the spec's pool name, or its selector and full identity key. */
export interface PoolIdentity {
  readonly name?: string | undefined;
  /** The pool's identity (namespace, selector, tolerations) as canonical text. */
  readonly key: string;
  readonly nodeSelector: Readonly<Record<string, string>>;
}

/** The pool id: the explicit pool name, or a slug of the selector values plus a hash of the pool's identity. */
export function poolId(pool: PoolIdentity): string {
  if (pool.name !== undefined) return pool.name;
  const values = Object.values(pool.nodeSelector).join('-');
  const head = slug(values === '' ? 'all' : values)
    .slice(0, POOL_ID_MAX - HASH_LENGTH - 1)
    .replace(/-+$/, '');
  return `${head === '' ? 'pool' : head}-${shortHash(pool.key)}`;
}

/** Node label key carrying a pool's state on each node: `prewarm.dev/<id>`. */
export function nodeLabelKey(id: string): string {
  return `${NODE_LABEL_PREFIX}${id}`;
}

/** Node annotation key carrying a pool's bounded status details: `status.prewarm.dev/<id>`. */
export function nodeAnnotationKey(id: string): string {
  return `${NODE_ANNOTATION_PREFIX}${id}`;
}
