/**
 * Digest pinning of spec files, pure: find every image reference in ImageCache documents and
 * rewrite `tag` into `tag@sha256:…` in place. Edits are made on the exact source span of each
 * scalar, so comments, quoting, key order and every other byte of the file stay as they were, and
 * Renovate or Dependabot can keep updating the lines afterwards.
 */
import { isMap, isSeq, LineCounter, parseAllDocuments, type Node, type Scalar } from 'yaml';
import { applyEdits, scalarSpan } from './edit.js';
import type { Location } from './errors.js';
import { API_VERSIONS } from './model.js';
import { DocContext, type Path } from './read.js';
import { parseImageRef } from './reference.js';

/** One image reference found in a file. */
export interface ImageSite {
  /** The reference as written, e.g. `python:3.12`. */
  readonly text: string;
  /** Byte range of the scalar's value in the file, quotes excluded. */
  readonly start: number;
  readonly end: number;
  /**
   * True when the span holds the reference character for character, so it can be rewritten in
   * place: false for block scalars and quoted strings with escape sequences.
   */
  readonly literal: boolean;
  /** Where it is, as diagnostics name it (file, document, line:column, field path). */
  readonly location: Location;
}

/**
 * Every image reference of every ImageCache document in `text` (images and helperImage), in file
 * order. `file` only labels the locations.
 */
export function findImages(text: string, file = ''): ImageSite[] {
  const lines = new LineCounter();
  const docs = parseAllDocuments(text, { version: '1.2', keepSourceTokens: true, lineCounter: lines });
  const sites: ImageSite[] = [];
  (Array.isArray(docs) ? docs : []).forEach((doc, i) => {
    const apiVersion = doc.get('apiVersion');
    if (doc.get('kind') !== 'ImageCache' || !(Object.values(API_VERSIONS) as unknown[]).includes(apiVersion)) return;
    const ctx = new DocContext(file, i + 1, doc, lines, []);
    const entries = doc.getIn(['spec', 'cacheSpec']);
    if (isSeq(entries)) {
      entries.items.forEach((entry, e) => {
        const images = isMap(entry) ? entry.get('images', true) : undefined;
        if (isSeq(images)) images.items.forEach((item, j) => addSite(text, ctx, item as Node, ['spec', 'cacheSpec', e, 'images', j], sites));
      });
    }
    const helper = doc.getIn(['spec', 'helperImage'], true);
    if (helper !== undefined) addSite(text, ctx, helper as Node, ['spec', 'helperImage'], sites);
  });
  return sites.sort((a, b) => a.start - b.start);
}

function addSite(text: string, ctx: DocContext, node: Node, path: Path, sites: ImageSite[]): void {
  const span = scalarSpan(text, node);
  if (span !== undefined) sites.push({ text: String((node as Scalar).value), ...span, location: ctx.locate(node, path) });
}

/** References that want pinning: valid, and without a digest. */
export function needsPin(reference: string): boolean {
  const parsed = parseImageRef(reference);
  return parsed.ok && parsed.ref.digest === undefined;
}

/**
 * The pinned form of a reference: `tag@digest`. A reference written without a tag gets the
 * `:latest` it stood for, so the tag stays visible to readers, to Renovate and to the next pin.
 */
export function pinnedRef(reference: string, digest: string): string {
  const parsed = parseImageRef(reference);
  return `${reference}${parsed.ok && parsed.ref.defaultedTag ? ':latest' : ''}@${digest}`;
}

/**
 * Applies digests: `digests` maps a reference as written to its `sha256:…` digest. Sites whose
 * reference has no entry, or that are not {@link ImageSite.literal}, are left alone. Returns the
 * new text.
 */
export function applyPins(text: string, sites: readonly ImageSite[], digests: ReadonlyMap<string, string>): string {
  return applyEdits(
    text,
    sites.flatMap((site) => {
      const digest = digests.get(site.text);
      return digest === undefined || !site.literal ? [] : [{ start: site.start, end: site.end, text: pinnedRef(site.text, digest) }];
    }),
  );
}
