/** Which documents are ImageCaches, read as the loader reads them; a near miss of our own group is refused. */
import { isAlias, isMap, isScalar, isSeq, type Document } from 'yaml';
import { LABEL_MANAGED_BY, MANAGED_BY } from '../contract/names.js';
import { API_VERSIONS } from './model.js';
import { editDistance, isMergeKey } from './read.js';

/** The kind every ImageCache document has. */
export const KIND = 'ImageCache';
import { resolveAlias } from './yaml.js';

/** The API groups read as ImageCaches; documents of every other group are passed over. */
export const OWN_GROUPS: readonly string[] = Object.values(API_VERSIONS).map(groupOf);
/** kube-fledged's group before v0.8: refused with the versions we read, never passed over. */
const FORMER_GROUPS: readonly string[] = ['fledged.k8s.io'];

/** What a document is, by its header alone; our groups and their near misses are read in full. */
export function kindOf(doc: Document.Parsed): 'empty' | 'imagecache' | 'other' | 'output' {
  // prewarm's own output is told by the managed-by label on every object it writes: a synth output
  // folder inside a spec folder (`synth specs -o specs/out`), with or without its marker file.
  const root = doc.contents;
  // An empty document (only comments, or nothing after a trailing `---`) holds nothing at all.
  if (root === null || (isScalar(root) && root.value === null && (root.source ?? '') === '')) return 'empty';
  const apiVersion = scalarAt(doc, ['apiVersion']);
  if (typeof apiVersion === 'string') {
    if (isOwnGroup(groupOf(apiVersion))) return 'imagecache';
    return scalarAt(doc, ['metadata', 'labels', LABEL_MANAGED_BY]) === MANAGED_BY ? 'output' : 'other';
  }
  // A document that does not parse and names no group may be an ImageCache: report its errors.
  if (doc.errors.length > 0) return 'imagecache';
  return scalarAt(doc, ['kind']) === KIND ? 'imagecache' : 'other';
}

/** The scalar at a path of mapping keys from a document's root (aliases and merge keys followed), or undefined. */
function scalarAt(doc: Document.Parsed, keys: readonly string[]): unknown {
  let node: unknown = doc.contents;
  for (const key of keys) node = valueAt(doc, node, key, new Set(), 0);
  return isScalar(node) ? node.value : undefined;
}

/** The value of `key` in a mapping or the mappings it merges; each mapping is searched once. */
function valueAt(doc: Document.Parsed, node: unknown, key: string, searched: Set<unknown>, depth: number): unknown {
  const follow = (n: unknown) => (isAlias(n) ? resolveAlias(doc, n) : n);
  const map = follow(node);
  if (!isMap(map) || searched.has(map) || depth > 8) return undefined;
  searched.add(map);
  const pair = map.items.find((p) => isScalar(p.key) && p.key.value === key);
  if (pair !== undefined) return follow(pair.value);
  for (const merge of map.items.filter((p) => isMergeKey(p.key))) {
    const sources = follow(merge.value);
    for (const source of isSeq(sources) ? sources.items : [sources]) {
      const found = valueAt(doc, source, key, searched, depth + 1);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/** The API group of an apiVersion: `apps/v1` → `apps`, `v1` → `` (core); a bare `prewarm.dev` is a group missing its version. */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  if (slash >= 0) return apiVersion.slice(0, slash);
  return apiVersion.includes('.') ? apiVersion : '';
}

/** Whether `group` is ours, or so near it (or a former group) that it is refused rather than passed over. */
export function isOwnGroup(group: string): boolean {
  if (FORMER_GROUPS.includes(group)) return true;
  return OWN_GROUPS.some((own) => editDistance(group.toLowerCase(), own) <= 2);
}
