/**
 * Digest pinning of spec files, pure: find every image reference in ImageCache documents and
 * rewrite `tag` into `tag@sha256:…` in place. Edits are made on the exact source span of each
 * scalar, so comments, quoting, key order and every other byte of the file stay as they were, and
 * Renovate or Dependabot can keep updating the lines afterwards.
 */
import { isMap, isScalar, isSeq, parseAllDocuments, Scalar, type Node } from 'yaml';
import { API_VERSIONS } from './model.js';
import { parseImageRef } from './reference.js';

/** One image reference found in a file. */
export interface ImageSite {
  /** The reference as written, e.g. `python:3.12`. */
  readonly text: string;
  /** Byte range of the scalar's value in the file, quotes excluded. */
  readonly start: number;
  readonly end: number;
}

/** Every image reference of every ImageCache document in `text` (images and helperImage). */
export function findImages(text: string): ImageSite[] {
  const docs = parseAllDocuments(text, { version: '1.2', keepSourceTokens: true });
  const sites: ImageSite[] = [];
  for (const doc of Array.isArray(docs) ? docs : []) {
    const apiVersion = doc.get('apiVersion');
    if (doc.get('kind') !== 'ImageCache' || !(Object.values(API_VERSIONS) as unknown[]).includes(apiVersion)) continue;
    const entries = doc.getIn(['spec', 'cacheSpec']);
    if (isSeq(entries)) {
      for (const entry of entries.items) {
        const images = isMap(entry) ? entry.get('images', true) : undefined;
        if (isSeq(images)) for (const item of images.items) addSite(item as Node, sites);
      }
    }
    const helper = doc.getIn(['spec', 'helperImage'], true);
    if (helper !== undefined) addSite(helper as Node, sites);
  }
  return sites.sort((a, b) => a.start - b.start);
}

function addSite(node: Node, sites: ImageSite[]): void {
  if (!isScalar(node) || typeof node.value !== 'string' || node.range === undefined || node.range === null) return;
  // Only plain and simply quoted scalars: their value is their source, minus the quotes.
  const [start, valueEnd] = node.range;
  const quoted = node.type === Scalar.QUOTE_DOUBLE || node.type === Scalar.QUOTE_SINGLE;
  if (node.type !== Scalar.PLAIN && !quoted) return;
  const from = quoted ? start + 1 : start;
  const to = quoted ? valueEnd - 1 : valueEnd;
  sites.push({ text: node.value, start: from, end: to });
}

/** References that want pinning: valid, and without a digest. */
export function needsPin(reference: string): boolean {
  const parsed = parseImageRef(reference);
  return parsed.ok && parsed.ref.digest === undefined;
}

/**
 * Applies digests: `digests` maps a reference as written to its `sha256:…` digest. Sites whose
 * reference has no entry are left alone. Returns the new text.
 */
export function applyPins(text: string, sites: readonly ImageSite[], digests: ReadonlyMap<string, string>): string {
  let out = '';
  let at = 0;
  for (const site of sites) {
    const digest = digests.get(site.text);
    if (digest === undefined) continue;
    if (text.slice(site.start, site.end) !== site.text) throw new Error(`image at offset ${site.start} is not written literally; refusing to rewrite it`);
    out += text.slice(at, site.start) + `${site.text}@${digest}`;
    at = site.end;
  }
  return out + text.slice(at);
}
