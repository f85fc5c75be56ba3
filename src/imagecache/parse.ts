/**
 * YAML text → validated ImageCache models. Pure. Both dialects share one reader: kube-fledged's
 * fields are a subset of ours, and ours are refused in kube-fledged documents.
 */
import { isMap, isScalar, LineCounter, Pair, YAMLMap, type Node } from 'yaml';
import { NOTHING_SKIPPED, type Diagnostic, type Location, type Skipped } from './errors.js';
import { excerpt, quote } from '../text/quote.js';
import { API_VERSIONS, type ApiVersion, type ImageCache, type SettingField } from './model.js';
import { DocContext, entries, object, ReadBudget, str, type Path } from './read.js';
import { parseYamlDocuments, YamlLimitError } from './yaml.js';
import { documentShape } from './shapes.js';
import { KIND, kindOf } from './classify.js';
import { toEntry } from './convert.js';
import { toSettings } from './defaults.js';

/** One input file: its name for messages, and its text. */
export interface SourceFile {
  readonly path: string;
  readonly text: string;
}

/** Options of {@link parseFiles}. */
export interface ParseOptions {
  /** Namespace for ImageCaches whose metadata names none, as `kubectl apply` would use its context's. @default "prewarm" */
  readonly defaultNamespace?: string;
}

/** Result of parsing: the ImageCaches that are valid, every diagnostic, and what was passed over. */
export interface ParseResult {
  readonly caches: readonly ImageCache[];
  readonly diagnostics: readonly Diagnostic[];
  /** Documents that are not ImageCaches: other manifests and plain YAML. */
  readonly skipped: Skipped;
}

/** The namespace used when a document names none and no option overrides it. */
export const DEFAULT_NAMESPACE = 'prewarm';

// ---- documents --------------------------------------------------------------------------------

/** Parses every document of every file; never throws on bad input: each problem is a diagnostic. */
export function parseFiles(files: readonly SourceFile[], options: ParseOptions = {}): ParseResult {
  const defaultNamespace = options.defaultNamespace ?? DEFAULT_NAMESPACE;
  const diagnostics: Diagnostic[] = [];
  const read: ReadCache[] = [];
  let skipped = NOTHING_SKIPPED;
  const budget = new ReadBudget();
  for (const file of files) {
    const passed = { other: 0, output: 0 };
    for (const cache of parseFile(file, defaultNamespace, diagnostics, passed, budget)) read.push(cache);
    skipped = {
      ...skipped,
      documents: skipped.documents + passed.other,
      files: skipped.files + (passed.other > 0 ? 1 : 0),
      outputDocuments: skipped.outputDocuments + passed.output,
      outputFiles: skipped.outputFiles + (passed.output > 0 ? 1 : 0),
    };
  }
  checkDuplicates(read, diagnostics);
  return { caches: read.map((r) => r.cache), diagnostics, skipped };
}

/** An ImageCache as read, with where its name is, for duplicate-name errors. */
interface ReadCache {
  readonly cache: ImageCache;
  readonly nameAt: Location;
}

function parseFile(
  file: SourceFile,
  defaultNamespace: string,
  diagnostics: Diagnostic[],
  passed: { other: number; output: number },
  budget: ReadBudget,
): ReadCache[] {
  const lines = new LineCounter();
  const out: ReadCache[] = [];
  // One document at a time: its tree is garbage once it is read.
  let i = 0;
  for (const doc of parseYamlDocuments(file.text, lines)) {
    i++;
    const ctx = new DocContext(file.path, i, doc, lines, diagnostics, budget);
    const kind = kindOf(doc);
    if (kind === 'empty') continue;
    if (kind === 'other' || kind === 'output') {
      passed[kind]++;
      continue;
    }
    if (doc.errors.length > 0) {
      for (const e of doc.errors) {
        const pos = lines.linePos(e.pos[0]);
        diagnostics.push({
          severity: 'error',
          file: file.path,
          document: i,
          line: pos.line,
          column: pos.col,
          path: '',
          message: e instanceof YamlLimitError ? e.message : `YAML syntax error: ${excerpt(firstLine(e.message), 200)}`,
        });
      }
      continue;
    }
    const cache = readDocument(ctx, doc.contents as Node, defaultNamespace);
    if (cache !== undefined) out.push(cache);
  }
  return out;
}

/** The files holding at least one document the loader reads as an ImageCache, valid or not. */
export function imageCacheFiles(files: readonly SourceFile[]): string[] {
  const holds = (file: SourceFile) => {
    // Read as parseFile reads it, so a document counts here exactly when synth would read it.
    for (const doc of parseYamlDocuments(file.text)) if (kindOf(doc) === 'imagecache') return true;
    return false;
  };
  return files.filter(holds).map((file) => file.path);
}

function readDocument(ctx: DocContext, root: Node, defaultNamespace: string): ReadCache | undefined {
  const header = peekHeader(ctx, root);
  if (header === undefined) return undefined;
  const errorsBefore = ctx.errorCount();
  const read = object(documentShape(header))(ctx, root, []);
  if (read === undefined) return undefined;
  const { metadata, spec } = read.value;
  const location = ctx.locate(root, []);

  const name = metadata.value.name;
  if (name === undefined) {
    const hint = metadata.value.generateName === undefined ? '' : ' (generateName is not supported: output must be reproducible)';
    ctx.error(metadata.node, ['metadata', 'name'], `required field "name" is missing${hint}`);
    return undefined;
  }
  const namespace = metadata.value.namespace ?? defaultNamespace;

  const entries = (spec.value.cacheSpec ?? []).map((entry, i) => toEntry(ctx, header, entry, ['spec', 'cacheSpec', i]));
  const settings = toSettings(spec.value);
  const settingLocations: Partial<Record<SettingField, Location>> = {};
  const f = spec.value;
  const at = (node: Node | undefined, path: Path): Location | undefined => (node === undefined ? undefined : ctx.locate(node, path));
  assignDefined(settingLocations, 'priorityClassName', at(spec.fieldNodes.priorityClassName, ['spec', 'priorityClassName']));
  assignDefined(settingLocations, 'maxUnavailable', at(f.rollout?.fieldNodes.maxUnavailable, ['spec', 'rollout', 'maxUnavailable']));
  assignDefined(settingLocations, 'gate', at(spec.fieldNodes.gate, ['spec', 'gate']));
  assignDefined(settingLocations, 'gateTaintKey', at(f.gate?.fieldNodes.taintKey, ['spec', 'gate', 'taintKey']));
  assignDefined(settingLocations, 'refreshSeconds', at(f.refresh?.fieldNodes.interval, ['spec', 'refresh', 'interval']));
  assignDefined(settingLocations, 'lanes', at(spec.fieldNodes.lanes, ['spec', 'lanes']));
  assignDefined(settingLocations, 'earlyPull', at(spec.fieldNodes.earlyPull, ['spec', 'earlyPull']));

  if (ctx.errorCount() > errorsBefore) return undefined;
  const secrets = [...new Set((spec.value.imagePullSecrets ?? []).map((s) => s.value.name))].sort();
  const nameAt = ctx.locate(metadata.fieldNodes.name, ['metadata', 'name']);
  const cache = Object.freeze({
    apiVersion: header,
    name,
    namespace,
    entries,
    imagePullSecrets: secrets,
    settings,
    settingLocations,
    location,
  });
  return { cache, nameAt };
}

/** Reads apiVersion and kind first, so the right field set applies to the rest. */
function peekHeader(ctx: DocContext, root: Node): ApiVersion | undefined {
  const probe = object<{ apiVersion: string; kind: string }>({
    apiVersion: { read: str, required: true },
    kind: { read: str, required: true },
  });
  // Read only the two header fields: unknown-field errors are left to the full read.
  const scratch = new DocContextProbe(ctx);
  const header = probe(scratch.ctx, filterKeys(scratch.ctx, root, ['apiVersion', 'kind']), []);
  if (header === undefined) {
    scratch.flush();
    return undefined;
  }
  const { apiVersion, kind } = header.value;
  const versions = Object.values(API_VERSIONS) as string[];
  if (!versions.includes(apiVersion)) {
    ctx.error(
      header.fieldNodes.apiVersion,
      ['apiVersion'],
      `unsupported apiVersion ${quote(apiVersion)}: expected ${versions.map((v) => `"${v}"`).join(' or ')}`,
    );
    return undefined;
  }
  if (kind !== KIND) {
    ctx.error(header.fieldNodes.kind, ['kind'], `unsupported kind ${quote(kind)}: expected "${KIND}"`);
    return undefined;
  }
  return apiVersion as ApiVersion;
}

/** Two ImageCaches with one name in one namespace would overwrite each other in a cluster. */
function checkDuplicates(caches: readonly ReadCache[], diagnostics: Diagnostic[]): void {
  const seen = new Map<string, Location>();
  for (const { cache, nameAt } of caches) {
    const key = `${cache.namespace}/${cache.name}`;
    const first = seen.get(key);
    if (first === undefined) {
      seen.set(key, nameAt);
      continue;
    }
    diagnostics.push({
      ...nameAt,
      severity: 'error',
      message: `duplicate ImageCache ${quote(key)}: already defined at ${first.file}:${first.line}:${first.column} (document ${first.document})`,
    });
  }
}

// ---- helpers ----------------------------------------------------------------------------------

function firstLine(message: string): string {
  return message.split('\n')[0] ?? message;
}

function assignDefined<K extends string, V>(target: Partial<Record<K, V>>, key: K, value: V | undefined): void {
  if (value !== undefined) target[key] = value;
}

/** A view of a mapping that keeps only the named keys. Shallow, since a deep clone of a large document costs more than reading it. */
function filterKeys(ctx: DocContext, root: Node, keys: readonly string[]): Node {
  if (!isMap(root)) return root;
  const view = new YAMLMap();
  for (const entry of entries(ctx, root, []) ?? []) {
    if (isScalar(entry.key) && typeof entry.key.value === 'string' && keys.includes(entry.key.value))
      view.items.push(new Pair(entry.key, entry.value));
  }
  if (root.range) view.range = root.range;
  return view;
}

/** Collects a probe's diagnostics aside, to be kept only if the probe fails. */
class DocContextProbe {
  private readonly scratch: Diagnostic[] = [];
  readonly ctx: DocContext;
  constructor(private readonly parent: DocContext) {
    this.ctx = parent.fork(this.scratch);
  }
  flush(): void {
    this.parent.adopt(this.scratch);
  }
}
