/**
 * Spec text → YAML documents, linear in time and stack depth. The `yaml` library is quadratic or
 * recursive on hostile input, so nesting is measured on tokens (composing recurses), duplicate keys
 * use one set per mapping, and aliases one table per document.
 */
import { Composer, isAlias, isMap, isPair, isSeq, Parser, YAMLParseError, type CST, type Document, type LineCounter } from 'yaml';
import type { Alias, Node } from 'yaml';

/** Nesting depth, at most; the margin over an ImageCache's needs is for anchors parked deeper. */
export const MAX_YAML_DEPTH = 64;

/** Nodes per document before aliases expand: more than any object the apiserver takes holds. */
export const MAX_YAML_NODES = 100_000;

/**
 * The documents of `text`, composed one at a time (never more than one tree held): YAML 1.2, merge
 * keys on, duplicate keys an error; past a limit, an error where it was reached.
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

/** Cuts, without recursion, what is nested too deep or past the node limit; returns the first hit. */
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

/** The last node before the alias with its anchor, as YAML defines it. */
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
