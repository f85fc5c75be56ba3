/**
 * A typed reader over the YAML syntax tree: unlike `toJS()`, it keeps every value's position for
 * diagnostics and tells an unquoted number from a string.
 */
import { isAlias, isMap, isNode, isScalar, isSeq, type Document, type LineCounter, type Node, type YAMLMap } from 'yaml';
import { type Diagnostic, type Location, type Severity } from './errors.js';
import { excerpt, quote } from '../text/quote.js';
import { resolveAlias } from './yaml.js';

/** A field path, rendered like `spec.cacheSpec[0].nodeSelector["kubernetes.io/arch"]`. */
export type Path = readonly (string | number)[];

export function formatPath(path: Path): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(part)) out += out === '' ? part : `.${part}`;
    else out += `[${quote(part)}]`;
  }
  return out;
}

/** Nodes visited per document: aliases can expand a small file exponentially ("billion laughs"). */
const NODE_BUDGET = 200_000;

/** Nodes visited over all files of one run, expanded: this bounds the run's memory. */
export const RUN_NODE_BUDGET = 1_000_000;

/** Merge keys (`<<`) that include mappings that include mappings, at most. */
export const MAX_MERGE_DEPTH = 32;

/** Nodes left to visit in one run, shared by the documents it reads. */
export class ReadBudget {
  constructor(private left: number = RUN_NODE_BUDGET) {}
  take(count: number): boolean {
    this.left -= count;
    return this.left >= 0;
  }
}

/** Reading context of one YAML document. */
export class DocContext {
  private visited = 0;
  private exhausted = false;
  /** Merged entries of each mapping read so far: a mapping merged many times is merged once. */
  readonly merged = new Map<YAMLMap, MapEntry[]>();

  constructor(
    readonly file: string,
    readonly document: number,
    private readonly doc: Document.Parsed,
    private readonly lines: LineCounter,
    private readonly diagnostics: Diagnostic[],
    private readonly budget: ReadBudget = new ReadBudget(),
  ) {}

  locate(node: Node | null | undefined, path: Path): Location {
    const offset = node?.range?.[0] ?? this.doc.range[0];
    const pos = this.lines.linePos(offset);
    return { file: this.file, document: this.document, line: pos.line, column: pos.col, path: formatPath(path) };
  }

  report(severity: Severity, node: Node | null | undefined, path: Path, message: string): void {
    this.diagnostics.push({ ...this.locate(node, path), severity, message });
  }

  errorCount(): number {
    return this.diagnostics.filter((d) => d.severity === 'error').length;
  }

  /** A context over the same document that records into `sink` instead, for tentative reads. */
  fork(sink: Diagnostic[]): DocContext {
    return new DocContext(this.file, this.document, this.doc, this.lines, sink, this.budget);
  }

  adopt(diagnostics: readonly Diagnostic[]): void {
    for (const d of diagnostics) this.diagnostics.push(d);
  }

  error(node: Node | null | undefined, path: Path, message: string): void {
    this.report('error', node, path, message);
  }

  warn(node: Node | null | undefined, path: Path, message: string): void {
    this.report('warning', node, path, message);
  }

  /** Counts nodes against the document's and the run's budgets; false (one error) once spent. */
  spend(count: number, node: unknown, path: Path): boolean {
    if (this.exhausted) return false;
    this.visited += count;
    const at = isNode(node) ? node : undefined;
    if (this.visited > NODE_BUDGET) {
      this.exhausted = true;
      this.error(at, path, `document is too large to read: more than ${NODE_BUDGET} nodes (aliases and merge keys expanded)`);
      return false;
    }
    if (!this.budget.take(count)) {
      this.exhausted = true;
      this.error(
        at,
        path,
        `too much to read: more than ${RUN_NODE_BUDGET} nodes over all files of this run (aliases and merge keys expanded); not read further`,
      );
      return false;
    }
    return true;
  }

  /** Follows aliases and counts visits; returns undefined once a budget is spent. */
  resolve(node: unknown, path: Path): Node | null | undefined {
    if (!this.spend(1, node, path)) return undefined;
    let current = node as Node | null | undefined;
    for (let hops = 0; isAlias(current); hops++) {
      if (hops > 64) return undefined;
      const target = resolveAlias(this.doc, current);
      if (target === undefined) {
        // The YAML parser leaves an alias without an anchor for later; report it where it is.
        this.error(
          current,
          path,
          `undefined alias *${excerpt(current.source)}: no anchor &${excerpt(current.source)} comes before it in this document`,
        );
        return undefined;
      }
      current = target;
    }
    return current ?? null;
  }
}

/** One key and value of a mapping, as written or merged in by a `<<` key. */
export interface MapEntry {
  readonly key: unknown;
  readonly value: unknown;
}

/**
 * A mapping's entries with YAML 1.1 merge keys applied, as kubectl accepts them: written keys win,
 * then earlier merges. Undefined after an invalid merge or a spent budget.
 */
export function entries(ctx: DocContext, map: YAMLMap, path: Path, merging: Set<YAMLMap> = new Set()): MapEntry[] | undefined {
  const known = ctx.merged.get(map);
  if (known !== undefined) return known;
  const own: MapEntry[] = [];
  const merged: MapEntry[] = [];
  for (const pair of map.items) {
    if (!isMergeKey(pair.key)) {
      own.push(pair);
      continue;
    }
    const value = ctx.resolve(pair.value, path);
    if (value === undefined) return undefined;
    for (const raw of isSeq(value) ? value.items : [value]) {
      const source = raw === value ? value : ctx.resolve(raw, path);
      if (source === undefined) return undefined;
      if (!isMap(source)) {
        ctx.error(source ?? (pair.key as Node), path, `a merge key (<<) takes a mapping or a list of mappings, got ${describe(source)}`);
        return undefined;
      }
      if (merging.has(source) || source === map) {
        ctx.error(pair.key as Node, path, 'a merge key (<<) includes a mapping that includes this one');
        return undefined;
      }
      if (merging.size >= MAX_MERGE_DEPTH) {
        ctx.error(pair.key as Node, path, `merge keys (<<) include mappings more than ${MAX_MERGE_DEPTH} levels deep`);
        return undefined;
      }
      merging.add(map);
      const inner = entries(ctx, source, path, merging);
      merging.delete(map);
      if (inner === undefined || !ctx.spend(inner.length, raw, path)) return undefined;
      for (const entry of inner) merged.push(entry);
    }
  }
  if (merged.length > 0) {
    const seen = new Set(own.map((e) => keyName(e.key)));
    for (const entry of merged) {
      const name = keyName(entry.key);
      if (name !== undefined && seen.has(name)) continue;
      seen.add(name);
      own.push(entry);
    }
  }
  ctx.merged.set(map, own);
  return own;
}

/** With the parser's `merge` option, a plain `<<` key is a scalar holding a symbol; a quoted one stays a string. */
export function isMergeKey(key: unknown): boolean {
  return isScalar(key) && typeof key.value === 'symbol' && key.value.description === '<<';
}

function keyName(key: unknown): string | undefined {
  return isScalar(key) && typeof key.value === 'string' ? key.value : undefined;
}

/** For "expected X, got Y" messages. */
export function describe(node: Node | null | undefined): string {
  if (node === null || node === undefined) return 'nothing';
  if (isMap(node)) return 'a mapping';
  if (isSeq(node)) return 'a list';
  if (isScalar(node)) {
    const v = node.value;
    if (v === null) return 'null';
    if (typeof v === 'string') return `the string ${quote(v)}`;
    if (typeof v === 'number' || typeof v === 'bigint') return `the number ${excerpt(String(node.source ?? v))}`;
    if (typeof v === 'boolean') return `the boolean ${String(v)}`;
  }
  return 'an unsupported value';
}

/** A reader turns one node into a value, reporting problems; undefined means "invalid". */
export type Reader<T> = (ctx: DocContext, node: Node | null, path: Path) => T | undefined;

/** A string scalar. Numbers, booleans and null are refused, so `3.12` must be quoted. */
export const str: Reader<string> = (ctx, node, path) => {
  if (isScalar(node) && typeof node.value === 'string') return node.value;
  let hint = isScalar(node) && node.value !== null && typeof node.value !== 'object' ? ' (quote it)' : '';
  // `- redis:` is YAML for the mapping {redis: null}: almost always an image with an empty tag.
  if (
    isMap(node) &&
    node.items.length === 1 &&
    isScalar(node.items[0]?.key) &&
    isScalar(node.items[0]?.value) &&
    node.items[0]?.value.value === null
  ) {
    hint = ` (YAML reads an unquoted ${quote(`${String(node.items[0]?.key.value)}:`)} as a mapping: the tag after the colon is empty)`;
  }
  ctx.error(node, path, `must be a string, got ${describe(node)}${hint}`);
  return undefined;
};

/** A string that also passes `check` (which returns an error message or undefined). */
export function checked(check: (value: string) => string | undefined, what: string): Reader<string> {
  return (ctx, node, path) => {
    const value = str(ctx, node, path);
    if (value === undefined) return undefined;
    const problem = check(value);
    if (problem !== undefined) {
      ctx.error(node, path, `${what} ${quote(value)} ${problem}`);
      return undefined;
    }
    return value;
  };
}

export function int(min: number, max: number): Reader<number> {
  return (ctx, node, path) => {
    if (isScalar(node) && typeof node.value === 'number' && Number.isInteger(node.value)) {
      if (node.value >= min && node.value <= max) return node.value;
      ctx.error(node, path, `must be between ${min} and ${max}, got ${node.value}`);
      return undefined;
    }
    ctx.error(node, path, `must be an integer, got ${describe(node)}`);
    return undefined;
  };
}

export const bool: Reader<boolean> = (ctx, node, path) => {
  if (isScalar(node) && typeof node.value === 'boolean') return node.value;
  ctx.error(node, path, `must be true or false, got ${describe(node)}`);
  return undefined;
};

/** Anything at all, unread: for fields we accept but ignore, such as `status`. */
export const ignored: Reader<true> = () => true;

/** A field that is known but never accepted: any value is an error saying `message`. */
export function refused(message: string): Reader<true> {
  return (ctx, node, path) => {
    ctx.error(node, path, message);
    return undefined;
  };
}

/** A list of items; `nonEmpty` refuses `[]`. Invalid items are reported and dropped. */
export function list<T>(item: Reader<T>, opts: { nonEmpty?: boolean } = {}): Reader<T[]> {
  return (ctx, node, path) => {
    if (!isSeq(node)) {
      ctx.error(node, path, `must be a list, got ${describe(node)}`);
      return undefined;
    }
    if (opts.nonEmpty === true && node.items.length === 0) {
      ctx.error(node, path, 'must not be empty');
      return undefined;
    }
    const out: T[] = [];
    let ok = true;
    node.items.forEach((raw, i) => {
      const child = ctx.resolve(raw, [...path, i]);
      if (child === undefined) {
        ok = false;
        return;
      }
      const value = item(ctx, child, [...path, i]);
      if (value === undefined) ok = false;
      else out.push(value);
    });
    return ok ? out : undefined;
  };
}

/** A mapping of string keys to string values, each checked (label selectors). */
export function stringMap(
  checkKey: (key: string) => string | undefined,
  checkValue: (value: string) => string | undefined,
  what: { key: string; value: string },
): Reader<Record<string, string>> {
  return (ctx, node, path) => {
    if (!isMap(node)) {
      ctx.error(node, path, `must be a mapping, got ${describe(node)}`);
      return undefined;
    }
    const out = new Map<string, string>();
    let ok = true;
    const valid = (n: Node | null, at: Path, label: string, text: string, problem: string | undefined): boolean => {
      if (problem === undefined) return true;
      ctx.error(n, at, `${label} ${quote(text)} is invalid: ${problem}`);
      return false;
    };
    const pairs = entries(ctx, node, path);
    if (pairs === undefined) return undefined;
    for (const pair of pairs) {
      const keyNode = ctx.resolve(pair.key, path);
      if (keyNode === undefined) return undefined;
      const key = str(ctx, keyNode, path);
      if (key === undefined) {
        ok = false;
        continue;
      }
      if (!valid(keyNode, [...path, key], what.key, key, checkKey(key))) {
        ok = false;
        continue;
      }
      const valueNode = ctx.resolve(pair.value, [...path, key]);
      if (valueNode === undefined) return undefined;
      const value = str(ctx, valueNode, [...path, key]);
      if (value === undefined) {
        ok = false;
        continue;
      }
      if (!valid(valueNode, [...path, key], what.value, value, checkValue(value))) {
        ok = false;
        continue;
      }
      out.set(key, value);
    }
    // fromEntries defines own properties, so a `__proto__` label key stays a plain key.
    return ok ? Object.fromEntries(out) : undefined;
  };
}

/** What the spec reference (docs/spec.md) says of a field. */
export interface FieldDoc {
  readonly type: string;
  readonly description: string;
  /** What a spec that leaves the field out gets. */
  readonly default?: string;
  readonly limits?: string;
}

export interface Field<T> {
  readonly read: Reader<T>;
  readonly required?: boolean;
  readonly doc?: FieldDoc;
  /** The fields of a nested object, or of each object of a list, for the spec reference. */
  readonly fields?: Readonly<Record<string, Field<unknown>>>;
}

export type Shape<T> = { readonly [K in keyof T]-?: Field<NonNullable<T[K]>> };

/** The value an object reader yields, plus the nodes it came from (for later diagnostics). */
export interface Read<T> {
  readonly value: T;
  readonly node: Node;
  readonly fieldNodes: Readonly<Partial<Record<keyof T, Node>>>;
}

/**
 * An object with a fixed set of fields. Unknown fields are errors: a typo such as `nodeSelecter`
 * would otherwise be silently ignored and cache images on every node.
 */
export function object<T extends object>(shape: Shape<T>): Reader<Read<T>> {
  return (ctx, node, path) => {
    if (!isMap(node)) {
      ctx.error(node, path, `must be a mapping, got ${describe(node)}`);
      return undefined;
    }
    const known = Object.keys(shape);
    const value = new Map<string, unknown>();
    const fieldNodes = new Map<string, Node>();
    let ok = true;
    const pairs = entries(ctx, node, path);
    if (pairs === undefined) return undefined;
    for (const pair of pairs) {
      const keyNode = ctx.resolve(pair.key, path);
      if (keyNode === undefined) return undefined;
      if (!isScalar(keyNode) || typeof keyNode.value !== 'string') {
        ctx.error(keyNode, path, `field names must be strings, got ${describe(keyNode)}`);
        ok = false;
        continue;
      }
      const key = keyNode.value;
      // Own properties only: `constructor` or `__proto__` must be unknown fields, not Object's.
      const field = Object.hasOwn(shape, key) ? (shape as Record<string, Field<unknown>>)[key] : undefined;
      if (field === undefined) {
        ctx.error(keyNode, [...path, key], `unknown field ${quote(key)}${suggest(key, known)}`);
        ok = false;
        continue;
      }
      const valueNode = ctx.resolve(pair.value, [...path, key]);
      if (valueNode === undefined) return undefined;
      // An optional field set to null (`nodeSelector:` with every entry commented out) is unset:
      // the apiserver prunes nulls of fields that are not nullable.
      if (field.required !== true && (valueNode === null || (isScalar(valueNode) && valueNode.value === null))) continue;
      fieldNodes.set(key, valueNode ?? keyNode);
      const read = field.read(ctx, valueNode, [...path, key]);
      if (read === undefined) ok = false;
      else value.set(key, read);
    }
    for (const [key, field] of Object.entries(shape as Record<string, Field<unknown>>)) {
      if (field.required === true && !value.has(key) && !fieldNodes.has(key)) {
        ctx.error(node, [...path, key], `required field "${key}" is missing`);
        ok = false;
      }
    }
    if (!ok) return undefined;
    return {
      value: Object.fromEntries(value) as T,
      node,
      fieldNodes: Object.fromEntries(fieldNodes) as Partial<Record<keyof T, Node>>,
    };
  };
}

/** ` (did you mean "x"?)` for a near miss among the known names, else empty. */
function suggest(key: string, known: readonly string[]): string {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(key.length / 3)) + 1;
  for (const name of known) {
    const d = editDistance(key.toLowerCase(), name.toLowerCase());
    if (d < bestDistance) {
      best = name;
      bestDistance = d;
    }
  }
  const list = known.map((k) => `"${k}"`).join(', ');
  return best === undefined ? ` (known fields: ${list})` : ` (did you mean "${best}"?)`;
}

export function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] ?? 0;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] ?? 0;
      row[j] = Math.min(above + 1, (row[j - 1] ?? 0) + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length] ?? 0;
}
