/**
 * YAML text → validated ImageCache models. Pure: no file system, no clock, no environment.
 *
 * Both dialects share one reader: kube-fledged's `kubefledged.io/v1alpha2` fields are a subset of
 * ours, and the prewarm-only fields are refused in kube-fledged documents, so a file that works
 * with kube-fledged means exactly the same thing here.
 */
import { TOLERATE_ALL } from '../contract/placement.js';
import { isAlias, isMap, isScalar, isSeq, LineCounter, Pair, YAMLMap, type Document, type Node } from 'yaml';
import { DEFAULT_GATE_TAINT_KEY, DEFAULTS, LABEL_MANAGED_BY, LIMITS, MANAGED_BY } from '../contract/names.js';
import { formatDuration, outsideRange, parseDuration } from './duration.js';
import { excerpt, MAX_QUOTED_CHARS, NOTHING_SKIPPED, quote, type Diagnostic, type Location, type Skipped } from './errors.js';
import { checkDns1123Label, checkDns1123Subdomain, checkLabelValue, checkQualifiedName } from './k8s-validation.js';
import {
  API_VERSIONS,
  type ApiVersion,
  type CacheEntry,
  type ImageCache,
  type PoolSettings,
  type SettingField,
  type Toleration,
} from './model.js';
import {
  bool,
  checked,
  DocContext,
  editDistance,
  entries,
  ignored,
  isMergeKey,
  int,
  list,
  object,
  ReadBudget,
  str,
  stringMap,
  type Path,
  type Read,
  type Reader,
  type Shape,
} from './read.js';
import { parseImageRef, type ImageRef } from './reference.js';
import { parseYamlDocuments, resolveAlias, YamlLimitError } from './yaml.js';

/** One input file: its name for messages, and its text. */
export interface SourceFile {
  readonly path: string;
  readonly text: string;
}

/** Options of {@link parseFiles}. */
export interface ParseOptions {
  /**
   * Namespace for ImageCaches whose metadata names none, as `kubectl apply` would use its context's.
   * @default "prewarm"
   */
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

const DEFAULT_HELPER_IMAGE = 'docker.io/library/busybox:1.36.1-musl';
const DEFAULT_MAX_UNAVAILABLE = '10%';
/**
 * Lanes per pool: why the default is 4 is measured in docs/benchmarks.md (Lanes); the cap keeps a
 * joining node's pod slots and IPs, one per puller during warm-up, bounded.
 */
const LANES = { default: 4, min: 1, max: 16 } as const;
const KIND = 'ImageCache';

// ---- raw shapes, as written -------------------------------------------------------------------

interface RawMetadata {
  name: string;
  namespace: string;
  generateName: string;
  labels: true;
  annotations: true;
  uid: true;
  resourceVersion: true;
  generation: true;
  creationTimestamp: true;
  managedFields: true;
  finalizers: true;
  ownerReferences: true;
  selfLink: true;
  deletionTimestamp: true;
  deletionGracePeriodSeconds: true;
}

interface RawToleration {
  key: string;
  operator: string;
  value: string;
  effect: string;
  tolerationSeconds: number;
}

interface RawEntry {
  images: ImageRef[];
  nodeSelector: Record<string, string>;
  tolerations: Read<RawToleration>[];
  pool: string;
}

interface RawGate {
  enabled: boolean;
  taintKey: string;
  deadline: number;
}

interface RawSpec {
  cacheSpec: Read<RawEntry>[];
  imagePullSecrets: Read<{ name: string }>[];
  helperImage: ImageRef;
  priorityClassName: string;
  rollout: Read<{ maxUnavailable: number | string }>;
  gate: Read<RawGate>;
  refresh: Read<{ interval: number }>;
  lanes: number;
}

interface RawDocument {
  apiVersion: string;
  kind: string;
  metadata: Read<RawMetadata>;
  spec: Read<RawSpec>;
  status: true;
}

// ---- field readers ----------------------------------------------------------------------------

/** An image reference; a missing tag becomes `latest` with a warning. */
const image: Reader<ImageRef> = (ctx, node, path) => {
  const text = str(ctx, node, path);
  if (text === undefined) return undefined;
  const parsed = parseImageRef(text);
  if (!parsed.ok) {
    // reference.ts quotes parts of the input as they are: it is shared with the sidecar's image,
    // which ships without errors.ts, so its message is bounded and escaped here.
    ctx.error(node, path, `invalid image reference ${quote(text)}: ${excerpt(parsed.error, 3 * MAX_QUOTED_CHARS)}`);
    return undefined;
  }
  if (parsed.ref.defaultedTag) {
    ctx.warn(node, path, `image ${quote(text)} has no tag; using ${parsed.ref.canonical} (pin a tag or digest)`);
  }
  return parsed.ref;
};

const duration: Reader<number> = (ctx, node, path) => {
  const text = str(ctx, node, path);
  if (text === undefined) return undefined;
  const parsed = parseDuration(text);
  if ('error' in parsed) {
    ctx.error(node, path, parsed.error);
    return undefined;
  }
  return parsed.seconds;
};

/**
 * A duration within `range` (seconds): what the sidecar accepts, see {@link LIMITS}. A non-zero
 * value under `warnBelow` is accepted with a warning.
 */
const durationIn =
  (range: { readonly min: number; readonly max: number; readonly warnBelow?: number }): Reader<number> =>
  (ctx, node, path) => {
    const seconds = duration(ctx, node, path);
    if (seconds === undefined) return undefined;
    const outside = outsideRange(seconds, range);
    if (outside !== undefined) {
      ctx.error(node, path, outside);
      return undefined;
    }
    if (range.warnBelow !== undefined && seconds > 0 && seconds < range.warnBelow) {
      ctx.warn(
        node,
        path,
        `${formatDuration(seconds)} is under ${formatDuration(range.warnBelow)}: every node of the pool checks every image's tag this often, so registry requests grow with the node count`,
      );
    }
    return seconds;
  };

const maxUnavailable: Reader<number | string> = (ctx, node, path) => {
  const asNumber = node !== null && 'value' in node && typeof node.value === 'number';
  if (asNumber) return int(1, 1_000_000)(ctx, node, path);
  const text = str(ctx, node, path);
  if (text === undefined) return undefined;
  const m = /^(\d{1,3})%$/.exec(text);
  const percent = m === null ? NaN : Number(m[1]);
  if (!(percent >= 1 && percent <= 100)) {
    ctx.error(node, path, `must be a positive integer or a percentage from 1% to 100%, got ${quote(text)}`);
    return undefined;
  }
  return text;
};

const oneOf = <T extends string>(values: readonly T[]): Reader<T> =>
  checked((v) => (values.includes(v as T) ? undefined : `is not one of ${values.map((x) => `"${x}"`).join(', ')}`), 'value') as Reader<T>;

const metadataShape: Shape<RawMetadata> = {
  name: { read: checked(checkDns1123Subdomain, 'name') },
  namespace: { read: checked(checkDns1123Label, 'namespace') },
  generateName: { read: str },
  labels: { read: ignored },
  annotations: { read: ignored },
  uid: { read: ignored },
  resourceVersion: { read: ignored },
  generation: { read: ignored },
  creationTimestamp: { read: ignored },
  managedFields: { read: ignored },
  finalizers: { read: ignored },
  ownerReferences: { read: ignored },
  selfLink: { read: ignored },
  deletionTimestamp: { read: ignored },
  deletionGracePeriodSeconds: { read: ignored },
};

/**
 * Toleration fields as core/v1 `ValidateTolerations` reads them: an empty key matches every key (the
 * operator must then be `Exists`), an empty operator means `Equal`, an empty effect matches every
 * effect, and tolerationSeconds may be any integer (taint eviction reads a negative one as 0).
 */
const tolerationShape: Shape<RawToleration> = {
  key: { read: checked((v) => (v === '' ? undefined : checkQualifiedName(v)), 'toleration key') },
  operator: { read: oneOf(['Exists', 'Equal', '']) },
  value: { read: checked(checkLabelValue, 'toleration value') },
  effect: { read: oneOf(['NoSchedule', 'PreferNoSchedule', 'NoExecute', '']) },
  tolerationSeconds: { read: int(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER) },
};

const nodeSelector = stringMap(checkQualifiedName, checkLabelValue, { key: 'label key', value: 'label value' });

/** Entry fields kube-fledged defines; prewarm adds to them. */
const fledgedEntry: Shape<Pick<RawEntry, 'images' | 'nodeSelector'>> = {
  images: { read: list(image, { nonEmpty: true }), required: true },
  nodeSelector: { read: nodeSelector },
};
const prewarmEntry: Shape<RawEntry> = {
  ...fledgedEntry,
  tolerations: { read: list(object(tolerationShape)) },
  pool: { read: checked((v) => checkDns1123Label(v) ?? (v.length > 40 ? 'must be at most 40 characters' : undefined), 'pool name') },
};

const secretRef = object<{ name: string }>({ name: { read: checked(checkDns1123Subdomain, 'Secret name'), required: true } });

const fledgedSpec: Shape<Pick<RawSpec, 'cacheSpec' | 'imagePullSecrets'>> = {
  cacheSpec: { read: list(object(fledgedEntry as Shape<RawEntry>), { nonEmpty: true }), required: true },
  imagePullSecrets: { read: list(secretRef) },
};
const prewarmSpec: Shape<RawSpec> = {
  cacheSpec: { read: list(object(prewarmEntry), { nonEmpty: true }), required: true },
  imagePullSecrets: fledgedSpec.imagePullSecrets,
  helperImage: { read: image },
  priorityClassName: { read: checked(checkDns1123Subdomain, 'PriorityClass name') },
  rollout: { read: object({ maxUnavailable: { read: maxUnavailable } }) },
  gate: {
    read: object<RawGate>({
      enabled: { read: bool },
      taintKey: { read: checked(checkQualifiedName, 'taint key') },
      deadline: { read: durationIn(LIMITS.deadlineSeconds) },
    }),
  },
  refresh: { read: object({ interval: { read: durationIn(LIMITS.refreshSeconds) } }) },
  lanes: { read: int(LANES.min, LANES.max) },
};

function documentShape(apiVersion: ApiVersion): Shape<RawDocument> {
  const spec = apiVersion === API_VERSIONS.prewarm ? prewarmSpec : (fledgedSpec as Shape<RawSpec>);
  return {
    apiVersion: { read: str, required: true },
    kind: { read: str, required: true },
    metadata: { read: object(metadataShape), required: true },
    spec: { read: object(spec), required: true },
    status: { read: ignored },
  };
}

// ---- documents --------------------------------------------------------------------------------

/**
 * Parses every document of every file. Never throws on bad input: each problem becomes a
 * diagnostic, and only fully valid ImageCaches are returned.
 */
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

/**
 * The files of `files` that hold at least one document the loader reads as an ImageCache, valid or
 * not: the files `synth` reads rather than passes over. Nothing is validated, so a file with a
 * broken ImageCache is listed too (synth then reports it).
 */
export function imageCacheFiles(files: readonly SourceFile[]): string[] {
  const holds = (file: SourceFile) => {
    // Read as parseFile reads it, so a document counts here exactly when synth would read it.
    for (const doc of parseYamlDocuments(file.text)) if (kindOf(doc) === 'imagecache') return true;
    return false;
  };
  return files.filter(holds).map((file) => file.path);
}

/** The API groups read as ImageCaches; documents of every other group are passed over. */
const OWN_GROUPS: readonly string[] = Object.values(API_VERSIONS).map(groupOf);
/** kube-fledged's group before v0.8: refused with the versions we read, never passed over. */
const FORMER_GROUPS: readonly string[] = ['fledged.k8s.io'];

/**
 * What a document is, judged by its header alone, so that other manifests (Deployments, CRDs,
 * kustomization.yaml, plain configuration) cost nothing and are never reported on. Within our
 * groups, and for groups one or two typos away from them, every document is read in full, so an
 * unknown kind or version is still an error.
 */
function kindOf(doc: Document.Parsed): 'empty' | 'imagecache' | 'other' | 'output' {
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
function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  if (slash >= 0) return apiVersion.slice(0, slash);
  return apiVersion.includes('.') ? apiVersion : '';
}

function isOwnGroup(group: string): boolean {
  if (FORMER_GROUPS.includes(group)) return true;
  return OWN_GROUPS.some((own) => editDistance(group.toLowerCase(), own) <= 2);
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
  assignDefined(settingLocations, 'helperImage', at(spec.fieldNodes.helperImage, ['spec', 'helperImage']));
  assignDefined(settingLocations, 'priorityClassName', at(spec.fieldNodes.priorityClassName, ['spec', 'priorityClassName']));
  assignDefined(settingLocations, 'maxUnavailable', at(f.rollout?.fieldNodes.maxUnavailable, ['spec', 'rollout', 'maxUnavailable']));
  assignDefined(settingLocations, 'gate', at(spec.fieldNodes.gate, ['spec', 'gate']));
  assignDefined(settingLocations, 'gateTaintKey', at(f.gate?.fieldNodes.taintKey, ['spec', 'gate', 'taintKey']));
  assignDefined(settingLocations, 'refreshSeconds', at(f.refresh?.fieldNodes.interval, ['spec', 'refresh', 'interval']));
  assignDefined(settingLocations, 'lanes', at(spec.fieldNodes.lanes, ['spec', 'lanes']));

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

function toEntry(ctx: DocContext, apiVersion: ApiVersion, entry: Read<RawEntry>, path: Path): CacheEntry {
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
function toToleration(ctx: DocContext, t: Read<RawToleration>, path: Path): Toleration {
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

function toSettings(spec: Partial<RawSpec>): PoolSettings {
  const gate = spec.gate?.value;
  const gateEnabled = gate?.enabled ?? true;
  const helper = spec.helperImage ?? defaultHelperImage();
  return {
    helperImage: helper,
    ...(spec.priorityClassName === undefined ? {} : { priorityClassName: spec.priorityClassName }),
    maxUnavailable: spec.rollout?.value.maxUnavailable ?? DEFAULT_MAX_UNAVAILABLE,
    ...(gateEnabled
      ? { gate: { taintKey: gate?.taintKey ?? DEFAULT_GATE_TAINT_KEY, deadlineSeconds: gate?.deadline ?? DEFAULTS.deadlineSeconds } }
      : {}),
    refreshSeconds: spec.refresh?.value.interval ?? DEFAULTS.refreshSeconds,
    lanes: spec.lanes ?? LANES.default,
  };
}

function defaultHelperImage(): ImageRef {
  const parsed = parseImageRef(DEFAULT_HELPER_IMAGE);
  if (!parsed.ok) throw new Error(`built-in helper image is invalid: ${parsed.error}`);
  return parsed.ref;
}

/** The lane count a pool gets when no ImageCache sets `spec.lanes`, and the range it may take. */
export const LANES_SETTING = LANES;

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

/**
 * A view of a mapping that keeps only the named keys. Shallow: a deep clone of a document with
 * 150,000 images took most of the time spent reading it.
 */
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
