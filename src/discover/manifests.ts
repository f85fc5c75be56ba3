/**
 * Rendered manifests → workloads, pure: each pod template's images and placement. Manifests are as
 * untrusted as specs, so they are read with the same YAML reader, budget and diagnostics.
 */
import { isMap, isScalar, isSeq, LineCounter, type Node } from 'yaml';
import type { Diagnostic, Location } from '../imagecache/errors.js';
import { describe, DocContext, entries, ReadBudget, type Path } from '../imagecache/read.js';
import type { SourceFile } from '../imagecache/parse.js';
import { parseYamlDocuments, YamlLimitError } from '../imagecache/yaml.js';
import { parseImageRef } from '../oci/reference.js';
import { LABEL_MANAGED_BY, MANAGED_BY } from '../contract/names.js';
import type { WorkloadPlacement, WorkloadRequirement, WorkloadTerm, WorkloadToleration } from '../contract/placement.js';
import { excerpt } from '../text/quote.js';

/** The kinds whose pod template sits at `spec.template`, with the core and apps kinds named. */
export const WORKLOAD_KINDS = ['Pod', 'Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob', 'ReplicationController'];

/** One image a workload runs. */
export interface WorkloadImage {
  /** The canonical reference: what images compare by. */
  readonly canonical: string;
  /** The reference as written. */
  readonly text: string;
  readonly location: Location;
}

/** An object with a pod template. */
export interface Workload {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  /** `kind/namespace/name`: how the plan names it. */
  readonly id: string;
  readonly placement: WorkloadPlacement;
  /** Of containers and init containers (native sidecars included), de-duplicated, in template order. */
  readonly images: readonly WorkloadImage[];
  readonly location: Location;
}

/** Documents read that hold no workload, by kind (`<no kind>` for plain YAML). */
export type OtherKinds = Readonly<Record<string, number>>;

/** What {@link readWorkloads} found. */
export interface ManifestResult {
  readonly workloads: readonly Workload[];
  readonly diagnostics: readonly Diagnostic[];
  /** Objects that are neither workloads nor lists of them, counted by kind. */
  readonly others: OtherKinds;
  /** Objects prewarm wrote itself (its managed-by label), which are never workloads to warm. */
  readonly own: number;
}

/** Options of {@link readWorkloads}. */
export interface ManifestOptions {
  /** Namespace of objects whose metadata names none, as `kubectl apply` would use its context's. @default "default" */
  readonly defaultNamespace?: string;
}

/** Reads every document of every file; never throws on bad input. */
export function readWorkloads(files: readonly SourceFile[], options: ManifestOptions = {}): ManifestResult {
  const diagnostics: Diagnostic[] = [];
  const found: Workload[] = [];
  const others: Record<string, number> = {};
  const counts = { own: 0 };
  const budget = new ReadBudget();
  const ns = options.defaultNamespace ?? 'default';
  for (const file of files) {
    const lines = new LineCounter();
    let i = 0;
    for (const doc of parseYamlDocuments(file.text, lines)) {
      i++;
      const ctx = new DocContext(file.path, i, doc, lines, diagnostics, budget);
      if (doc.errors.length > 0) {
        for (const e of doc.errors) {
          const pos = lines.linePos(e.pos[0]);
          const message = e instanceof YamlLimitError ? e.message : `YAML syntax error: ${excerpt(e.message.split('\n')[0] ?? '', 200)}`;
          diagnostics.push({ severity: 'error', file: file.path, document: i, line: pos.line, column: pos.col, path: '', message });
        }
        continue;
      }
      const root = doc.contents as Node | null;
      if (root === null || (isScalar(root) && root.value === null)) continue;
      readObject(ctx, root, [], ns, { found, others, counts });
    }
  }
  return { workloads: found, diagnostics, others, own: counts.own };
}

/** Records an error and reads nothing: `return fail(...)` in a reader. */
function fail(ctx: DocContext, node: Node | null | undefined, path: Path, message: string): undefined {
  ctx.error(node, path, message);
  return undefined;
}

interface Sink {
  readonly found: Workload[];
  readonly others: Record<string, number>;
  readonly counts: { own: number };
}

/** The value of `key` in a mapping (merge keys applied), resolved; undefined when absent or not a mapping. */
function field(ctx: DocContext, node: Node | null | undefined, key: string, path: Path): Node | null | undefined {
  if (!isMap(node)) return undefined;
  for (const e of entries(ctx, node, path) ?? []) {
    if (isScalar(e.key) && e.key.value === key) return ctx.resolve(e.value, [...path, key]);
  }
  return undefined;
}

function stringAt(ctx: DocContext, node: Node | null | undefined, key: string, path: Path): string | undefined {
  const value = field(ctx, node, key, path);
  return isScalar(value) && typeof value.value === 'string' ? value.value : undefined;
}

/** Nothing there: absent, or written as `null` or `~`, which Kubernetes reads as absent. */
function isNothing(node: Node | null | undefined): node is null | undefined {
  return node === undefined || node === null || (isScalar(node) && node.value === null);
}

function readObject(ctx: DocContext, root: Node, path: Path, ns: string, sink: Sink): void {
  const kind = stringAt(ctx, root, 'kind', path);
  const metadata = field(ctx, root, 'metadata', path);
  if (
    stringAt(ctx, field(ctx, metadata, 'labels', [...path, 'metadata']), LABEL_MANAGED_BY, [...path, 'metadata', 'labels']) === MANAGED_BY
  ) {
    sink.counts.own++;
    return;
  }
  if (kind === 'List' || (kind?.endsWith('List') === true && isSeq(field(ctx, root, 'items', path)))) {
    const items = field(ctx, root, 'items', path);
    if (!isSeq(items)) return fail(ctx, items ?? root, [...path, 'items'], `must be a list, got ${describe(items)}`);
    items.items.forEach((raw, i) => {
      const item = ctx.resolve(raw, [...path, 'items', i]);
      if (item !== undefined && item !== null) readObject(ctx, item, [...path, 'items', i], ns, sink);
    });
    return;
  }
  const spec = field(ctx, root, 'spec', path);
  const at = kind === 'Pod' ? { node: spec, path: [...path, 'spec'] } : templateSpec(ctx, kind, spec, [...path, 'spec']);
  if (at === undefined || !isMap(at.node) || kind === undefined) {
    const name = kind ?? '<no kind>';
    sink.others[name] = (sink.others[name] ?? 0) + 1;
    return;
  }
  const name = stringAt(ctx, metadata, 'name', [...path, 'metadata']) ?? stringAt(ctx, metadata, 'generateName', [...path, 'metadata']);
  if (name === undefined) return fail(ctx, metadata ?? root, [...path, 'metadata', 'name'], `a ${kind} must have a name`);
  const namespace = stringAt(ctx, metadata, 'namespace', [...path, 'metadata']) ?? ns;
  const podSpec = readPodSpec(ctx, at.node, at.path);
  if (podSpec === undefined) return;
  sink.found.push({
    kind,
    namespace,
    name,
    id: `${kind}/${namespace}/${name}`,
    ...podSpec,
    location: ctx.locate(root, path),
  });
}

/** The pod spec of a template: `spec.template.spec`, or a CronJob's `spec.jobTemplate.spec.template.spec`. */
function templateSpec(
  ctx: DocContext,
  kind: string | undefined,
  spec: Node | null | undefined,
  path: Path,
): { node: Node | null | undefined; path: Path } | undefined {
  if (kind === 'CronJob') {
    const job = field(ctx, field(ctx, spec, 'jobTemplate', path), 'spec', [...path, 'jobTemplate']);
    return templateSpec(ctx, 'Job', job, [...path, 'jobTemplate', 'spec']);
  }
  const template = field(ctx, spec, 'template', path);
  const podSpec = field(ctx, template, 'spec', [...path, 'template']);
  // A kind we do not name counts only when its template holds containers: another `template`
  // (a Knative-like or a templating CRD) is no pod template.
  if (!WORKLOAD_KINDS.includes(kind ?? '') && !isSeq(field(ctx, podSpec, 'containers', [...path, 'template', 'spec']))) return undefined;
  return { node: podSpec, path: [...path, 'template', 'spec'] };
}

function readPodSpec(ctx: DocContext, spec: Node, path: Path): { placement: WorkloadPlacement; images: WorkloadImage[] } | undefined {
  const errors = ctx.errorCount();
  const images: WorkloadImage[] = [];
  for (const list of ['initContainers', 'containers']) {
    const node = field(ctx, spec, list, path);
    if (isNothing(node)) continue;
    if (!isSeq(node)) {
      ctx.error(node, [...path, list], `must be a list, got ${describe(node)}`);
      continue;
    }
    node.items.forEach((raw, i) => {
      const container = ctx.resolve(raw, [...path, list, i]);
      if (!isMap(container)) return fail(ctx, container, [...path, list, i], `must be a mapping, got ${describe(container)}`);
      const image = field(ctx, container, 'image', [...path, list, i]);
      const imagePath = [...path, list, i, 'image'];
      if (isNothing(image)) return;
      if (!isScalar(image) || typeof image.value !== 'string')
        return fail(ctx, image, imagePath, `must be a string, got ${describe(image)}`);
      const parsed = parseImageRef(image.value);
      if (!parsed.ok) return fail(ctx, image, imagePath, parsed.error);
      if (!images.some((m) => m.canonical === parsed.ref.canonical))
        images.push({ canonical: parsed.ref.canonical, text: image.value, location: ctx.locate(image, imagePath) });
    });
  }
  const nodeSelector = stringRecord(ctx, field(ctx, spec, 'nodeSelector', path), [...path, 'nodeSelector']);
  const tolerations = readTolerations(ctx, field(ctx, spec, 'tolerations', path), [...path, 'tolerations']);
  const affinityPath = [...path, 'affinity', 'nodeAffinity', 'requiredDuringSchedulingIgnoredDuringExecution'];
  const required = field(
    ctx,
    field(ctx, field(ctx, spec, 'affinity', path), 'nodeAffinity', [...path, 'affinity']),
    'requiredDuringSchedulingIgnoredDuringExecution',
    [...path, 'affinity', 'nodeAffinity'],
  );
  const terms = isNothing(required)
    ? undefined
    : readTerms(ctx, field(ctx, required, 'nodeSelectorTerms', affinityPath), [...affinityPath, 'nodeSelectorTerms']);
  const nodeName = stringAt(ctx, spec, 'nodeName', path);
  if (ctx.errorCount() > errors) return undefined;
  const placement: WorkloadPlacement = {
    ...(nodeSelector === undefined ? {} : { nodeSelector }),
    ...(terms === undefined ? {} : { requiredTerms: terms }),
    ...(tolerations === undefined ? {} : { tolerations }),
    ...(nodeName === undefined || nodeName === '' ? {} : { nodeName }),
  };
  return { placement, images };
}

function stringRecord(ctx: DocContext, node: Node | null | undefined, path: Path): Record<string, string> | undefined {
  if (isNothing(node)) return undefined;
  if (!isMap(node)) return fail(ctx, node, path, `must be a mapping, got ${describe(node)}`);
  const out: Record<string, string> = {};
  for (const e of entries(ctx, node, path) ?? []) {
    const key = isScalar(e.key) ? e.key.value : undefined;
    const value = ctx.resolve(e.value, [...path, String(key)]);
    if (typeof key !== 'string') {
      ctx.error(e.key as Node, path, `keys must be strings, got ${describe(e.key as Node)}`);
      continue;
    }
    if (!isScalar(value) || typeof value.value !== 'string') {
      ctx.error(
        value,
        [...path, key],
        `must be a string, got ${describe(value)}${isScalar(value) && value.value !== null ? ' (quote it)' : ''}`,
      );
      continue;
    }
    out[key] = value.value;
  }
  return out;
}

/** A list of mappings, each read by `item`; null and absent are no list. */
function listOf<T>(ctx: DocContext, node: Node | null | undefined, path: Path, item: (n: Node, p: Path) => T | undefined): T[] | undefined {
  if (isNothing(node)) return undefined;
  if (!isSeq(node)) return fail(ctx, node, path, `must be a list, got ${describe(node)}`);
  const out: T[] = [];
  node.items.forEach((raw, i) => {
    const child = ctx.resolve(raw, [...path, i]);
    if (!isMap(child)) return fail(ctx, child, [...path, i], `must be a mapping, got ${describe(child)}`);
    const value = item(child, [...path, i]);
    if (value !== undefined) out.push(value);
  });
  return out;
}

/** Optional string fields of a mapping; a field of another type is an error. */
function strings<K extends string>(ctx: DocContext, node: Node, path: Path, keys: readonly K[]): Partial<Record<K, string>> {
  const out: Partial<Record<K, string>> = {};
  for (const key of keys) {
    const value = field(ctx, node, key, path);
    if (isNothing(value)) continue;
    if (isScalar(value) && typeof value.value === 'string') out[key] = value.value;
    else ctx.error(value, [...path, key], `must be a string, got ${describe(value)}`);
  }
  return out;
}

function readTolerations(ctx: DocContext, node: Node | null | undefined, path: Path): WorkloadToleration[] | undefined {
  return listOf(ctx, node, path, (n, p) => {
    const t = strings(ctx, n, p, ['key', 'operator', 'value', 'effect'] as const);
    if (t.operator !== undefined && t.operator !== '')
      warnOperator(ctx, n, p, t.operator, TOLERATION_OPERATORS, 'so it tolerates nothing here');
    return t;
  });
}

const TOLERATION_OPERATORS = ['Equal', 'Exists'];
const REQUIREMENT_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt'];

/** A warning at an operator Kubernetes refuses: kept, and matching nothing, as in the scheduler. */
function warnOperator(ctx: DocContext, node: Node, path: Path, operator: string, allowed: readonly string[], consequence: string): void {
  if (allowed.includes(operator)) return;
  const quoted = excerpt(JSON.stringify(operator), 80);
  ctx.warn(
    field(ctx, node, 'operator', path),
    [...path, 'operator'],
    `${quoted} is not an operator Kubernetes accepts (${allowed.join(', ')}), ${consequence}`,
  );
}

function readTerms(ctx: DocContext, node: Node | null | undefined, path: Path): WorkloadTerm[] {
  const requirements = (n: Node | null | undefined, p: Path): WorkloadRequirement[] | undefined =>
    listOf(ctx, n, p, (r, rp) => {
      const { key, operator } = strings(ctx, r, rp, ['key', 'operator'] as const);
      if (operator !== undefined) warnOperator(ctx, r, rp, operator, REQUIREMENT_OPERATORS, 'so its term matches no node');
      const valuesNode = field(ctx, r, 'values', rp);
      const values = listOfStrings(ctx, valuesNode, [...rp, 'values']);
      return { key: key ?? '', operator: operator ?? '', ...(values === undefined ? {} : { values }) };
    });
  return (
    listOf(ctx, node, path, (t, tp) => {
      const matchExpressions = requirements(field(ctx, t, 'matchExpressions', tp), [...tp, 'matchExpressions']);
      const matchFields = requirements(field(ctx, t, 'matchFields', tp), [...tp, 'matchFields']);
      return { ...(matchExpressions === undefined ? {} : { matchExpressions }), ...(matchFields === undefined ? {} : { matchFields }) };
    }) ?? []
  );
}

function listOfStrings(ctx: DocContext, node: Node | null | undefined, path: Path): string[] | undefined {
  if (isNothing(node)) return undefined;
  if (!isSeq(node)) return fail(ctx, node, path, `must be a list, got ${describe(node)}`);
  const out: string[] = [];
  node.items.forEach((raw, i) => {
    const v = ctx.resolve(raw, [...path, i]);
    if (isScalar(v) && typeof v.value === 'string') out.push(v.value);
    else ctx.error(v, [...path, i], `must be a string, got ${describe(v)}${isScalar(v) && v.value !== null ? ' (quote it)' : ''}`);
  });
  return out;
}
