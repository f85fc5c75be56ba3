/**
 * kube-fledged → prewarm.dev conversion. Pure: text in, text out.
 *
 * A converted ImageCache places every image exactly where kube-fledged did: same selectors, same
 * pull secrets, and a toleration of every taint, which is what kube-fledged's per-node Jobs carry.
 * File conversion edits the YAML syntax tree in place, so comments, key order and quoting survive
 * and the diff a reviewer sees is only the lines that had to change.
 */
import { App, Chart } from 'cdk8s';
import { isMap, isSeq, parseAllDocuments, type Document } from 'yaml';
import { ImageCache, ImageCacheSpecCacheSpecTolerationsOperator, type ImageCacheSpecCacheSpec } from '../../imports/prewarm.dev.js';
import { TOLERATE_ALL } from '../contract/placement.js';
import { API_VERSIONS } from '../imagecache/model.js';


/** Annotations that only mean something to kube-fledged or kubectl; never carried over. */
const DROPPED_ANNOTATION = /^(kubefledged\.io\/|kubectl\.kubernetes\.io\/last-applied-configuration$)/;

/**
 * A block sequence written at its key's own indentation (`images:` then `- x` directly below),
 * kube-fledged's sample style; kept as found so a converted file's diff stays minimal.
 */
const SEQUENCE_AT_KEY_INDENT = /^( *)[^\s#-][^\n]*:[ \t]*\n\1- /m;

/** Outcome of converting one file. */
export interface MigratedText {
  readonly text: string;
  /** kube-fledged ImageCache documents converted. */
  readonly converted: number;
}

/**
 * Converts every `kubefledged.io/v1alpha2` ImageCache in `text`; other documents pass through
 * untouched. The caller validates the input first: this assumes well-formed kube-fledged
 * documents.
 */
export function migrateText(text: string): MigratedText {
  const docs = parseAllDocuments(text, { version: '1.2' });
  const list = Array.isArray(docs) ? docs : [];
  let converted = 0;
  const out: string[] = [];
  const indentSeq = !SEQUENCE_AT_KEY_INDENT.test(text);
  for (const doc of list) {
    if (isFledged(doc)) {
      convertDocument(doc);
      converted++;
    }
    out.push(doc.toString({ lineWidth: 0, indentSeq }).replace(/\n*$/, '\n'));
  }
  // Re-join with explicit separators: each document's toString() carries its own `---` only when
  // the source had one, and a missing separator would merge two documents.
  const joined = out.map((d, i) => (i === 0 || d.startsWith('---') ? d : `---\n${d}`)).join('');
  return { text: joined, converted };
}

function isFledged(doc: Document.Parsed): boolean {
  return doc.get('apiVersion') === API_VERSIONS.kubeFledged && doc.get('kind') === 'ImageCache';
}

function convertDocument(doc: Document.Parsed): void {
  doc.set('apiVersion', API_VERSIONS.prewarm);
  doc.delete('status');
  const metadata = doc.get('metadata');
  if (isMap(metadata)) {
    for (const key of ['uid', 'resourceVersion', 'generation', 'creationTimestamp', 'managedFields', 'selfLink']) metadata.delete(key);
    const annotations = metadata.get('annotations');
    if (isMap(annotations)) {
      for (const pair of [...annotations.items]) {
        const key = String((pair.key as { value?: unknown } | null)?.value ?? pair.key);
        if (DROPPED_ANNOTATION.test(key)) annotations.delete(key);
      }
      if (annotations.items.length === 0) metadata.delete('annotations');
    }
  }
  const entries = doc.getIn(['spec', 'cacheSpec']);
  if (!isSeq(entries)) return;
  for (const entry of entries.items) {
    if (isMap(entry) && !entry.has('tolerations')) entry.set('tolerations', doc.createNode(TOLERATE_ALL.map((t) => ({ ...t }))));
  }
}

/** A kube-fledged ImageCache as read from a cluster (the fields we carry over). */
export interface FledgedObject {
  readonly metadata?: { readonly name?: string; readonly namespace?: string; readonly labels?: Record<string, string>; readonly annotations?: Record<string, string> };
  readonly spec?: {
    readonly cacheSpec?: readonly { readonly images?: readonly string[]; readonly nodeSelector?: Record<string, string> }[];
    readonly imagePullSecrets?: readonly { readonly name?: string }[];
  };
}

/**
 * Renders ImageCaches read from a cluster as prewarm.dev documents, through the construct
 * generated from our CRD (imports/), sorted by namespace and name in code-point order, whatever the
 * locale.
 */
export function migrateObjects(objects: readonly FledgedObject[]): string {
  const app = new App({ outdir: 'unused', recordConstructMetadata: false });
  const chart = new Chart(app, 'migrated', { disableResourceNameHashes: true });
  // Code-point order: localeCompare would make the output depend on the user's locale.
  const sorted = [...objects].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  for (const obj of sorted) {
    const name = obj.metadata?.name ?? '';
    const annotations = Object.fromEntries(Object.entries(obj.metadata?.annotations ?? {}).filter(([k]) => !DROPPED_ANNOTATION.test(k)));
    const labels = obj.metadata?.labels ?? {};
    const cacheSpec: ImageCacheSpecCacheSpec[] = (obj.spec?.cacheSpec ?? []).map((e) => ({
      images: [...(e.images ?? [])],
      ...(e.nodeSelector === undefined ? {} : { nodeSelector: e.nodeSelector }),
      tolerations: [{ operator: ImageCacheSpecCacheSpecTolerationsOperator.EXISTS }],
    }));
    const secrets = (obj.spec?.imagePullSecrets ?? []).flatMap((s) => (s.name === undefined ? [] : [{ name: s.name }]));
    new ImageCache(chart, key(obj), {
      metadata: {
        name,
        ...(obj.metadata?.namespace === undefined ? {} : { namespace: obj.metadata.namespace }),
        ...(Object.keys(labels).length === 0 ? {} : { labels }),
        ...(Object.keys(annotations).length === 0 ? {} : { annotations }),
      },
      spec: { cacheSpec, ...(secrets.length === 0 ? {} : { imagePullSecrets: secrets }) },
    });
  }
  return app.synthYaml();
}

function key(obj: FledgedObject): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}
