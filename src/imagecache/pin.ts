/**
 * Digest pinning of spec files, pure: `tag` becomes `tag@sha256:…` on each scalar's exact span, so
 * every other byte stays and Renovate or Dependabot keep updating the lines.
 */
import { isAlias, isMap, isScalar, isSeq, LineCounter, type Alias, type Node, type Scalar } from 'yaml';
import { applyEdits, scalarSpan } from './edit.js';
import type { Location } from './errors.js';
import { API_VERSIONS } from './model.js';
import { DocContext, isMergeKey, type Path } from './read.js';
import { parseImageRef } from '../oci/reference.js';
import { parseYamlDocuments, resolveAlias } from './yaml.js';

/** One image reference found in a file. */
export interface ImageSite {
  /** As written. */
  readonly text: string;
  /** Quotes excluded. */
  readonly start: number;
  readonly end: number;
  /** The span holds the reference verbatim (not a block scalar, escaped string or alias). */
  readonly literal: boolean;
  readonly location: Location;
  /** An alias whose anchored value lies outside the image fields: never rewritten. */
  readonly alias?: { readonly anchor: string; readonly anchorLine: number; readonly merge: boolean };
}

/** A node with the alias that led to it, if any, and whether a merge key (`<<: *name`) did. */
interface Reached {
  readonly node: unknown;
  readonly via?: Alias;
  readonly merge?: boolean;
}

/** Every image reference of every ImageCache document in `text`, in file order; `file` only labels. */
export function findImages(text: string, file = ''): ImageSite[] {
  const lines = new LineCounter();
  // Parsed as the loader parses: pin must see every image the loader sees.
  const docs = [...parseYamlDocuments(text, lines)];
  const sites: ImageSite[] = [];
  docs.forEach((doc, i) => {
    const firstSite = sites.length;
    const apiVersion = doc.get('apiVersion');
    if (doc.get('kind') !== 'ImageCache' || !(Object.values(API_VERSIONS) as unknown[]).includes(apiVersion)) return;
    const ctx = new DocContext(file, i + 1, doc, lines, []);
    // Follows aliases, remembering the first one: the place the user wrote instead of a value.
    const at = (node: unknown, via?: Alias, merge = false): Reached => {
      let current = node;
      let first = via;
      for (let hops = 0; isAlias(current) && hops <= 64; hops++) {
        first ??= current;
        current = resolveAlias(doc, current);
      }
      return first === undefined ? { node: current } : { node: current, via: first, merge };
    };
    // Written keys first, then merged ones, as the loader reads them.
    const member = (reached: Reached, key: string, seen = new Set<unknown>()): Reached | undefined => {
      const map = reached.node;
      if (!isMap(map) || seen.has(map)) return undefined;
      seen.add(map);
      const own = map.items.find((p) => !isMergeKey(p.key) && isScalar(p.key) && p.key.value === key);
      if (own !== undefined) return at(own.value, reached.via, reached.merge);
      for (const pair of map.items.filter((p) => isMergeKey(p.key))) {
        const value = at(pair.value, reached.via, reached.merge === true || isAlias(pair.value));
        const sources = isSeq(value.node) ? value.node.items.map((i) => at(i, value.via, value.merge === true || isAlias(i))) : [value];
        for (const source of sources) {
          const found = member(source, key, seen);
          if (found !== undefined) return found;
        }
      }
      return undefined;
    };
    const aliased: { readonly node: Scalar; readonly via: Alias; readonly merge: boolean; readonly path: Path }[] = [];
    const visit = (reached: Reached, path: Path): void => {
      const { node, via, merge } = at(reached.node, reached.via, reached.merge);
      if (via === undefined) addSite(text, ctx, node as Node, path, sites);
      else if (isScalar(node) && typeof node.value === 'string') aliased.push({ node, via, merge: merge === true, path });
    };
    const spec = member({ node: doc.contents }, 'spec');
    if (spec === undefined || !isMap(spec.node)) return;
    const entries = member(spec, 'cacheSpec');
    if (entries !== undefined && isSeq(entries.node)) {
      const via = entries.via;
      const merge = entries.merge;
      entries.node.items.forEach((item, e) => {
        const images = member(at(item, via, merge), 'images');
        if (images !== undefined && isSeq(images.node))
          images.node.items.forEach((image, j) => visit(at(image, images.via, images.merge), ['spec', 'cacheSpec', e, 'images', j]));
      });
    }
    // An alias of a value that is itself an image field is pinned with it; any other cannot be.
    const direct = new Set(sites.slice(firstSite).map((s) => s.start));
    for (const { node, via, merge, path } of aliased) {
      const span = scalarSpan(text, node);
      if (span === undefined || direct.has(span.start) || via.range === undefined || via.range === null) continue;
      const anchorLine = lines.linePos(node.range?.[0] ?? 0).line;
      // The span is the alias as written (`*name`); it is never rewritten.
      sites.push({
        text: node.value as string,
        start: via.range[0],
        end: via.range[1],
        literal: false,
        location: ctx.locate(via, path),
        alias: { anchor: via.source, anchorLine, merge },
      });
    }
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

/** `tag@digest`; a missing tag becomes the `:latest` it stood for, visible to Renovate and readers. */
export function pinnedRef(reference: string, digest: string): string {
  const parsed = parseImageRef(reference);
  return `${reference}${parsed.ok && parsed.ref.defaultedTag ? ':latest' : ''}@${digest}`;
}

/** Applies digests (by reference as written) to literal sites; returns the new text. */
export function applyPins(text: string, sites: readonly ImageSite[], digests: ReadonlyMap<string, string>): string {
  return applyEdits(
    text,
    sites.flatMap((site) => {
      const digest = digests.get(site.text);
      return digest === undefined || !site.literal ? [] : [{ start: site.start, end: site.end, text: pinnedRef(site.text, digest) }];
    }),
  );
}
