/**
 * kube-fledged → prewarm.dev conversion, pure. Images land exactly where kube-fledged put them (its
 * Jobs tolerate every taint), and only changed spans are rewritten, so a reviewer's diff is minimal.
 */
import { App, Chart } from 'cdk8s';
import { isDeepStrictEqual } from 'node:util';
import { isMap, isScalar, isSeq, parseAllDocuments, Scalar, stringify, type Document, type Node, type Pair, type YAMLMap } from 'yaml';
import { ImageCache, ImageCacheSpecCacheSpecTolerationsOperator, type ImageCacheSpecCacheSpec } from '../../imports/prewarm.dev.js';
import { TOLERATE_ALL } from '../contract/placement.js';
import { applyEdits, lineEnding, scalarSpan, type TextEdit } from '../imagecache/edit.js';
import type { Diagnostic } from '../imagecache/errors.js';
import { API_VERSIONS } from '../imagecache/model.js';
import { parseFiles } from '../imagecache/parse.js';
import { compareStrings } from '../contract/order.js';

/** Annotations that only mean something to kube-fledged or kubectl; never carried over. */
const DROPPED_ANNOTATION = /^(kubefledged\.io\/|kubectl\.kubernetes\.io\/last-applied-configuration$)/;

/** A block sequence at its key's own indentation, kube-fledged's sample style. */
const SEQUENCE_AT_KEY_INDENT = /^( *)[^\s#-][^\n]*:[ \t]*\r?\n\1- /m;

const CLUSTER_FIELDS = ['uid', 'resourceVersion', 'generation', 'creationTimestamp', 'managedFields', 'selfLink'];

export interface MigratedText {
  readonly text: string;
  /** kube-fledged ImageCache documents converted. */
  readonly converted: number;
}

/** A document whose layout the conversion cannot edit in place; it names the document (1-based). */
export class InPlaceError extends Error {
  constructor(
    readonly document: number,
    message: string,
  ) {
    super(`document ${document}: ${message}; convert it by hand`);
    this.name = 'InPlaceError';
  }
}

type Key = string | number;

/** One change to a document: rendered as text edits and, to check them, replayed on the tree. */
type Change =
  | { readonly op: 'set'; readonly path: readonly Key[]; readonly value: string }
  | { readonly op: 'delete'; readonly path: readonly Key[] }
  | { readonly op: 'add'; readonly path: readonly Key[]; readonly value: unknown };

/** Converts every `kubefledged.io/v1alpha2` ImageCache in validated `text`; throws {@link InPlaceError} when it cannot. */
export function migrateText(text: string): MigratedText {
  const docs = parseAllDocuments(text, { version: '1.2', keepSourceTokens: true });
  const list = Array.isArray(docs) ? docs : [];
  const style: Style = { eol: lineEnding(text), seqAtKeyIndent: SEQUENCE_AT_KEY_INDENT.test(text) };
  const edits: TextEdit[] = [];
  const planned = list.map((doc, i) => {
    if (!isFledged(doc)) return [];
    const changes = plan(doc);
    edits.push(...render(text, doc, changes, style, i + 1));
    return changes;
  });
  const converted = planned.filter((c) => c.length > 0).length;
  if (converted === 0) return { text, converted };
  const out = applyEdits(text, edits);
  checkEdits(list, planned, out);
  return { text: out, converted };
}

function isFledged(doc: Document.Parsed): boolean {
  return doc.get('apiVersion') === API_VERSIONS.kubeFledged && doc.get('kind') === 'ImageCache';
}

function plan(doc: Document.Parsed): Change[] {
  const changes: Change[] = [{ op: 'set', path: ['apiVersion'], value: API_VERSIONS.prewarm }];
  if (doc.has('status')) changes.push({ op: 'delete', path: ['status'] });
  const metadata = doc.get('metadata');
  if (isMap(metadata)) {
    for (const key of CLUSTER_FIELDS) if (metadata.has(key)) changes.push({ op: 'delete', path: ['metadata', key] });
    const annotations = metadata.get('annotations');
    if (isMap(annotations)) {
      const dropped = annotations.items.map(keyOf).filter((k) => DROPPED_ANNOTATION.test(k));
      if (dropped.length === annotations.items.length) changes.push({ op: 'delete', path: ['metadata', 'annotations'] });
      else for (const key of dropped) changes.push({ op: 'delete', path: ['metadata', 'annotations', key] });
    }
  }
  const entries = doc.getIn(['spec', 'cacheSpec']);
  if (isSeq(entries)) {
    entries.items.forEach((entry, i) => {
      if (isMap(entry) && !entry.has('tolerations'))
        changes.push({ op: 'add', path: ['spec', 'cacheSpec', i, 'tolerations'], value: TOLERATE_ALL });
    });
  }
  return changes;
}

interface Style {
  readonly eol: string;
  /** Block sequences sit at their key's indentation (`key:` then `- x` below it). */
  readonly seqAtKeyIndent: boolean;
}

function render(text: string, doc: Document.Parsed, changes: readonly Change[], style: Style, document: number): TextEdit[] {
  const fail = (message: string) => new InPlaceError(document, message);
  const mapAt = (path: readonly Key[]): YAMLMap => {
    const node = path.length === 0 ? doc.contents : doc.getIn(path, true);
    if (!isMap(node)) throw fail(`${path.join('.')} is not a map`);
    return node;
  };
  const edits: TextEdit[] = [];
  // Deletions are rendered per map, since removing neighbours of a flow map shares their commas.
  const deletions = new Map<YAMLMap, number[]>();
  for (const change of changes) {
    const parent = mapAt(change.path.slice(0, -1));
    const key = String(change.path[change.path.length - 1]);
    const index = parent.items.findIndex((p) => keyOf(p) === key);
    if (change.op === 'add') {
      edits.push(insertion(text, parent, key, change.value, style));
      continue;
    }
    const pair = parent.items[index];
    if (pair === undefined) throw fail(`no field ${change.path.join('.')}`);
    if (change.op === 'set') edits.push(replacement(text, pair, change.value, fail));
    else deletions.set(parent, [...(deletions.get(parent) ?? []), index]);
  }
  for (const [map, indexes] of deletions) edits.push(...removal(text, map, indexes, fail));
  return edits;
}

/** The value of `pair` replaced by the plain scalar `value`, keeping its quotes. */
function replacement(text: string, pair: Pair, value: string, fail: (m: string) => Error): TextEdit {
  const node = pair.value as Node | null;
  const span = node === null ? undefined : scalarSpan(text, node);
  if (span === undefined || node?.range === undefined || node.range === null) throw fail(`${keyOf(pair)} is not a string`);
  if (span.literal) return { start: span.start, end: span.end, text: value };
  // A block scalar or escaped string: the whole scalar, written plain, keeping the line break after it.
  const [from, to] = node.range;
  return { start: from, end: to, text: value + (/\s*$/.exec(text.slice(from, to))?.[0] ?? '') };
}

/** Edits that remove the pairs at `indexes` of `map`. */
function removal(text: string, map: YAMLMap, indexes: readonly number[], fail: (m: string) => Error): TextEdit[] {
  const items = map.items;
  const removed = new Set(indexes);
  if (!map.flow) {
    return indexes.map((i) => {
      const pair = items[i] as Pair;
      const keyStart = start(pair);
      const lineStart = text.lastIndexOf('\n', keyStart - 1) + 1;
      if (text.slice(lineStart, keyStart).trim() === '') return { start: lineStart, end: lineEnd(text, end(pair)), text: '' };
      // `- uid: 1` or `--- uid: 1`: the key shares its line; the next key takes its place.
      const next = items[i + 1];
      if (next === undefined || removed.has(i + 1)) throw fail(`cannot remove ${keyOf(pair)}: it shares its line with other syntax`);
      return { start: keyStart, end: start(next), text: '' };
    });
  }
  const firstKept = items.findIndex((_p, i) => !removed.has(i));
  if (firstKept < 0) return [{ start: start(items[0] as Pair), end: valueEnd(items[items.length - 1] as Pair), text: '' }];
  // Leading pairs go with the separator after them; any other pair with the separator before it.
  const edits: TextEdit[] = firstKept > 0 ? [{ start: start(items[0] as Pair), end: start(items[firstKept] as Pair), text: '' }] : [];
  for (const i of indexes)
    if (i > firstKept) edits.push({ start: valueEnd(items[i - 1] as Pair), end: valueEnd(items[i] as Pair), text: '' });
  return edits;
}

/** An edit that adds `key: value` as the last pair of `map`, in the map's own style. */
function insertion(text: string, map: YAMLMap, key: string, value: unknown, style: Style): TextEdit {
  const last = map.items[map.items.length - 1];
  if (map.flow) {
    // JSON stays JSON: a map whose keys are double-quoted gets a JSON pair.
    const json = isScalar(map.items[0]?.key) && map.items[0].key.type === Scalar.QUOTE_DOUBLE;
    const pair = json ? `${JSON.stringify(key)}: ${JSON.stringify(value)}` : `${key}: ${flowYaml(value)}`;
    if (last === undefined) return { start: (map.range?.[0] ?? 0) + 1, end: (map.range?.[0] ?? 0) + 1, text: pair };
    const at = valueEnd(last);
    return { start: at, end: at, text: `, ${pair}` };
  }
  const first = map.items[0] as Pair;
  const indent = ' '.repeat(start(first) - (text.lastIndexOf('\n', start(first) - 1) + 1));
  const itemIndent = style.seqAtKeyIndent ? indent : `${indent}  `;
  const lines = [
    `${indent}${key}:`,
    ...(value as readonly object[]).flatMap((item) =>
      Object.entries(item).map(([k, v], j) => `${itemIndent}${j === 0 ? '- ' : '  '}${k}: ${flowYaml(v)}`),
    ),
  ];
  const at = lineEnd(text, end(last as Pair));
  // At the end of a file without a final newline, the new lines go after one.
  const block =
    at === text.length && !text.endsWith('\n') ? `${style.eol}${lines.join(style.eol)}` : `${lines.join(style.eol)}${style.eol}`;
  return { start: at, end: at, text: block };
}

/** `[{operator: Exists}]`: YAML flow style for the small values migration adds. */
function flowYaml(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(flowYaml).join(', ')}]`;
  if (typeof value === 'object' && value !== null)
    return `{${Object.entries(value)
      .map(([k, v]) => `${k}: ${flowYaml(v)}`)
      .join(', ')}}`;
  return String(value);
}

/** The edited text, parsed, must equal the documents with the changes applied to the tree. */
function checkEdits(before: readonly Document.Parsed[], planned: readonly (readonly Change[])[], after: string): void {
  const parsed = parseAllDocuments(after, { version: '1.2' });
  const docs = Array.isArray(parsed) ? parsed : [];
  before.forEach((doc, i) => {
    const expected = doc.clone();
    for (const change of planned[i] ?? []) {
      if (change.op === 'delete') expected.deleteIn(change.path);
      else expected.setIn(change.path, change.op === 'set' ? change.value : expected.createNode(change.value));
    }
    const got = docs[i];
    if (got === undefined || got.errors.length > 0 || !isDeepStrictEqual(got.toJS(), expected.toJS())) {
      throw new InPlaceError(i + 1, 'its layout cannot be edited in place');
    }
  });
  if (docs.length !== before.length) throw new InPlaceError(before.length, 'its layout cannot be edited in place');
}

function keyOf(pair: Pair): string {
  return String(isScalar(pair.key) ? pair.key.value : pair.key);
}

function start(pair: Pair): number {
  return (pair.key as Node).range?.[0] ?? 0;
}

/** Where the pair's value ends, trailing comments and line break excluded. */
function valueEnd(pair: Pair): number {
  return ((pair.value ?? pair.key) as Node).range?.[1] ?? 0;
}

/** Where the pair ends, with a trailing comment. */
function end(pair: Pair): number {
  return Math.max(((pair.value ?? pair.key) as Node).range?.[2] ?? 0, valueEnd(pair));
}

/** `at`, or just past the line break of the line it is on when it is not already at a line start. */
function lineEnd(text: string, at: number): number {
  if (at === 0 || text[at - 1] === '\n') return at;
  const nl = text.indexOf('\n', at);
  return nl < 0 ? text.length : nl + 1;
}

/** A kube-fledged ImageCache as read from a cluster (the fields we carry over). */
export interface FledgedObject {
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
  };
  readonly spec?: {
    readonly cacheSpec?: readonly { readonly images?: readonly string[]; readonly nodeSelector?: Record<string, string> }[];
    readonly imagePullSecrets?: readonly { readonly name?: string }[];
  };
}

/** What {@link readClusterObjects} found: the ImageCaches, or why the list cannot be converted. */
export interface ClusterObjects {
  readonly objects: readonly FledgedObject[];
  /** Errors name the object (`cluster ImageCache NAMESPACE/NAME`, or its place in the list) and the field. */
  readonly diagnostics: readonly Diagnostic[];
}

/** Checks a cluster's ImageCache list as spec files are checked: an apiserver is untrusted. */
export function readClusterObjects(items: unknown): ClusterObjects {
  const where = (file: string, path: string, message: string): Diagnostic => ({
    file,
    document: 0,
    line: 0,
    column: 0,
    path,
    severity: 'error',
    message,
  });
  if (items === undefined || items === null) return { objects: [], diagnostics: [] };
  if (!Array.isArray(items)) return { objects: [], diagnostics: [where('cluster ImageCache list', 'items', 'must be a list')] };
  const diagnostics: Diagnostic[] = [];
  const files = items.flatMap((item: unknown, i) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      diagnostics.push(
        where('cluster ImageCache list', `items[${i}]`, `must be an ImageCache, got ${item === null ? 'null' : typeof item}`),
      );
      return [];
    }
    const metadata = (item as { metadata?: { name?: unknown; namespace?: unknown } }).metadata;
    const name = typeof metadata?.name === 'string' ? metadata.name : `items[${i}]`;
    const file = `cluster ImageCache ${typeof metadata?.namespace === 'string' ? `${metadata.namespace}/` : ''}${name}`;
    // Read as what the list holds, whatever each item says it is.
    return [{ path: file, text: stringify({ ...item, apiVersion: API_VERSIONS.kubeFledged, kind: 'ImageCache' }) }];
  });
  const parsed = parseFiles(files);
  for (const d of parsed.diagnostics) if (d.severity === 'error') diagnostics.push({ ...d, document: 0, line: 0, column: 0 });
  return { objects: diagnostics.length === 0 ? (items as FledgedObject[]) : [], diagnostics };
}

/** Renders cluster ImageCaches as prewarm.dev documents through the construct generated from our CRD. */
export function migrateObjects(objects: readonly FledgedObject[]): string {
  const app = new App({ outdir: 'unused', recordConstructMetadata: false });
  const chart = new Chart(app, 'migrated', { disableResourceNameHashes: true });
  // Code-point order: localeCompare would make the output depend on the user's locale.
  const sorted = [...objects].sort(
    (a, b) => compare(a.metadata?.namespace, b.metadata?.namespace) || compare(a.metadata?.name, b.metadata?.name),
  );
  sorted.forEach((obj, i) => {
    const name = obj.metadata?.name ?? '';
    const annotations = Object.fromEntries(Object.entries(obj.metadata?.annotations ?? {}).filter(([k]) => !DROPPED_ANNOTATION.test(k)));
    const labels = obj.metadata?.labels ?? {};
    const cacheSpec: ImageCacheSpecCacheSpec[] = (obj.spec?.cacheSpec ?? []).map((e) => ({
      images: [...(e.images ?? [])],
      ...(e.nodeSelector === undefined ? {} : { nodeSelector: e.nodeSelector }),
      tolerations: [{ operator: ImageCacheSpecCacheSpecTolerationsOperator.EXISTS }],
    }));
    const secrets = (obj.spec?.imagePullSecrets ?? []).flatMap((s) => (s.name === undefined ? [] : [{ name: s.name }]));
    // Ids by position: the names are explicit, and ids made of them collide (`a--b/c` and `a/b--c`).
    new ImageCache(chart, `imagecache-${i}`, {
      metadata: {
        name,
        ...(obj.metadata?.namespace === undefined ? {} : { namespace: obj.metadata.namespace }),
        ...(Object.keys(labels).length === 0 ? {} : { labels }),
        ...(Object.keys(annotations).length === 0 ? {} : { annotations }),
      },
      spec: { cacheSpec, ...(secrets.length === 0 ? {} : { imagePullSecrets: secrets }) },
    });
  });
  return app.synthYaml();
}

function compare(a: string | undefined, b: string | undefined): number {
  return compareStrings(a ?? '', b ?? '');
}
