/**
 * Spec text → YAML documents, in time and stack depth linear in the input. The `yaml` library's
 * own conveniences are quadratic or recursive on hostile input, so three of them are replaced:
 * - nesting is measured on the syntax tokens (the parser is iterative; composing is recursive and
 *   overflows the stack at about 800 levels), and a collection nested too deep is cut off;
 * - duplicate keys are found with one set per mapping (the library compares each key with every
 *   earlier one);
 * - aliases are resolved from one table per document (the library walks the whole document for
 *   every alias).
 */
import { Composer, isAlias, isMap, isPair, isSeq, Parser, YAMLParseError, type CST, type Document, type LineCounter } from 'yaml';
import type { Alias, Node } from 'yaml';

/**
 * Lists and mappings nested inside each other, at most. An ImageCache needs six; the margin is for
 * anchors parked in deeper places.
 */
export const MAX_YAML_DEPTH = 64;

/**
 * Keys, values and list items per document, at most, before aliases are expanded. The apiserver
 * takes objects up to about 1.5 MiB; 100,000 nodes is more than that holds in any ImageCache, and
 * bounds the memory one document's tree takes.
 */
export const MAX_YAML_NODES = 100_000;

/**
 * The documents of `text`, one at a time, read as the spec loader reads YAML: version 1.2, merge
 * keys on, duplicate keys an error. Each document is composed only when asked for, so a file of
 * many documents never holds more than one tree. A document nested deeper than
 * {@link MAX_YAML_DEPTH}, or with more than {@link MAX_YAML_NODES} nodes, keeps what comes before
 * the limit and gets an error where it was reached.
 */
export function* parseYamlDocuments(text: string, lines?: LineCounter): Generator<Document.Parsed> {
  const composer = new Composer({ version: '1.2', merge: true, uniqueKeys: false });
  const problems: (Problem | undefined)[] = [];
  const finish = (doc: Document.Parsed): Document.Parsed => {
    if (lines !== undefined) for (const e of doc.errors) locateError(e, lines);
    const problem = problems.shift();
    if (problem !== undefined) doc.errors.push(new YamlLimitError(problem.offset, problem.message));
    checkUniqueKeys(doc, lines);
    return doc;
  };
  for (const token of new Parser(lines?.addNewLine).parse(text)) {
    if (token.type === 'document') problems.push(cutOversized(token));
    for (const doc of composer.next(token)) yield finish(doc);
  }
  for (const doc of composer.end()) yield finish(doc);
}

interface Problem {
  readonly offset: number;
  readonly message: string;
}

const tooDeep = (offset: number): Problem => ({
  offset,
  message: `document is too deep to read: lists and mappings nested more than ${MAX_YAML_DEPTH} levels deep`,
});

const tooLarge = (offset: number): Problem => ({
  offset,
  message: `document is too large to read: more than ${MAX_YAML_NODES} YAML nodes (keys, values and list items)`,
});

/**
 * Walks a document's syntax tokens without recursion, and replaces with an empty scalar each
 * collection nested too deep, and drops the items past the node limit. Returns the first limit hit.
 */
function cutOversized(document: CST.Document): Problem | undefined {
  const stack: { readonly token: CST.Token; readonly depth: number; readonly replace: (t: CST.Token) => void }[] = [];
  if (document.value) stack.push({ token: document.value, depth: 0, replace: (t) => (document.value = t) });
  let nodes = 0;
  let problem: Problem | undefined;
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const { token, depth } = next;
    if (token.type !== 'block-map' && token.type !== 'block-seq' && token.type !== 'flow-collection') continue;
    if (depth >= MAX_YAML_DEPTH) {
      next.replace({ type: 'scalar', offset: token.offset, indent: token.indent, source: '' });
      problem ??= tooDeep(token.offset);
      continue;
    }
    const all = token.items as CST.CollectionItem[];
    if (nodes + all.length > MAX_YAML_NODES) {
      const first = all[MAX_YAML_NODES - nodes];
      problem ??= tooLarge(first?.value?.offset ?? first?.start[0]?.offset ?? token.offset);
      all.length = MAX_YAML_NODES - nodes;
    }
    // Pushed last first, so that tokens are visited in document order and a cut keeps the start.
    nodes += all.length;
    for (let i = all.length - 1; i >= 0; i--) {
      const item = all[i] as CST.CollectionItem;
      if (item.value) stack.push({ token: item.value, depth: depth + 1, replace: (t) => (item.value = t) });
      if (item.key) stack.push({ token: item.key, depth: depth + 1, replace: (t) => (item.key = t) });
    }
  }
  return problem;
}

/** Adds an error for every key written twice in one mapping, as the library's `uniqueKeys` does. */
function checkUniqueKeys(doc: Document.Parsed, lines: LineCounter | undefined): void {
  for (const node of nodesOf(doc)) {
    if (!isMap(node)) continue;
    const seen = new Set<unknown>();
    for (const pair of node.items) {
      const key = pair.key as Node | null;
      const id = key !== null && 'value' in key && !isMap(key) && !isSeq(key) ? (key as { value: unknown }).value : key;
      if (!seen.has(id)) {
        seen.add(id);
        continue;
      }
      doc.errors.push(parseError(key?.range?.[0] ?? node.range?.[0] ?? 0, 'DUPLICATE_KEY', 'Map keys must be unique', lines));
    }
  }
}

/** Every node of a document in document order (keys before values), without recursion. */
function* nodesOf(doc: Document.Parsed): Generator<Node> {
  const stack: unknown[] = [doc.contents];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    if (next === null) continue;
    if (isPair(next)) {
      stack.push(next.value, next.key);
      continue;
    }
    yield next as Node;
    if (isMap(next) || isSeq(next)) for (let i = next.items.length - 1; i >= 0; i--) stack.push(next.items[i]);
  }
}

const aliasTables = new WeakMap<Document.Parsed, Map<Alias, Node | undefined>>();

/**
 * The node an alias stands for: the last node before it with that anchor, as YAML defines it (and
 * the library's `Alias.resolve` finds). Undefined when no anchor comes before it.
 */
export function resolveAlias(doc: Document.Parsed, alias: Alias): Node | undefined {
  let table = aliasTables.get(doc);
  if (table === undefined) {
    table = new Map();
    const anchors = new Map<string, Node>();
    for (const node of nodesOf(doc)) {
      if (isAlias(node)) table.set(node, anchors.get(node.source));
      else if (node.anchor !== undefined) anchors.set(node.anchor, node);
    }
    aliasTables.set(doc, table);
  }
  return table.get(alias);
}

/** A document over one of the limits above: not a syntax error, so reported in its own words. */
export class YamlLimitError extends YAMLParseError {
  constructor(offset: number, message: string) {
    super([offset, offset + 1], 'BAD_INDENT', message);
  }
}

function parseError(offset: number, code: 'DUPLICATE_KEY', message: string, lines: LineCounter | undefined): YAMLParseError {
  const error = new YAMLParseError([offset, offset + 1], code, message);
  if (lines !== undefined) locateError(error, lines);
  return error;
}

/** Names the line and column in the message, as the library's `prettyErrors` does (without its excerpt). */
function locateError(error: YAMLParseError, lines: LineCounter): void {
  if (error.linePos !== undefined) return;
  const { line, col } = lines.linePos(error.pos[0]);
  error.linePos = [{ line, col }];
  error.message = `${error.message} at line ${line}, column ${col}:`;
}
