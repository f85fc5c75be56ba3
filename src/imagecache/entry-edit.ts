/**
 * Adding images to a `cacheSpec` entry and removing them, in place, pure: as `pin` does, each edit
 * replaces one span of the source, so comments, quoting, flow or block style, indentation and line
 * endings stay as they were. `prewarm discover --write` changes spec files only through these.
 */
import { isSeq, LineCounter, type Node, type YAMLSeq } from 'yaml';
import { applyEdits, lineEnding, type TextEdit } from './edit.js';
import type { Location } from './errors.js';
import { findImages } from './pin.js';
import { parseYamlDocuments } from './yaml.js';
import { parseImageRef } from '../oci/reference.js';

/**
 * The marker a person writes to keep an image that no workload uses: a comment holding
 * `prewarm:keep`, at the end of the image's line or on the line just above it.
 */
export const KEEP_MARKER = /#.*\bprewarm:\s*keep\b/;

/** An image written in an entry of a spec file. */
export interface EntryImage {
  readonly canonical: string;
  readonly text: string;
  /** Where the image is; `path` is `spec.cacheSpec[e].images[i]`. */
  readonly location: Location;
  readonly start: number;
  readonly end: number;
  readonly keep: boolean;
}

/** Every image of every entry of the ImageCaches in `text` (helper images aside), with its keep marker. */
export function entryImages(text: string, file: string): EntryImage[] {
  const lines = text.split('\n');
  return findImages(text, file).flatMap((site) => {
    if (site.alias !== undefined || !/^spec\.cacheSpec\[\d+\]\.images\[\d+\]$/.test(site.location.path)) return [];
    const parsed = parseImageRef(site.text);
    if (!parsed.ok) return [];
    const line = lines[site.location.line - 1] ?? '';
    const above = (lines[site.location.line - 2] ?? '').trim();
    const keep = KEEP_MARKER.test(line) || (above.startsWith('#') && KEEP_MARKER.test(above));
    return [{ canonical: parsed.ref.canonical, text: site.text, location: site.location, start: site.start, end: site.end, keep }];
  });
}

/** The `images` list of the entry at `entry` (a location whose path is `spec.cacheSpec[e]`), when written in place. */
function imagesList(text: string, entry: Location): YAMLSeq | string {
  const index = /^spec\.cacheSpec\[(\d+)\]$/.exec(entry.path)?.[1];
  if (index === undefined) return `${entry.path} is not a cacheSpec entry`;
  let i = 0;
  for (const doc of parseYamlDocuments(text, new LineCounter())) {
    if (++i !== entry.document) continue;
    const node = doc.getIn(['spec', 'cacheSpec', Number(index), 'images'], true) as Node | undefined;
    return isSeq(node) ? node : `${entry.path}.images is not a list written in place (an alias or a merge key); add the images by hand`;
  }
  return `document ${entry.document} not found`;
}

/**
 * `text` with `images` appended to the entry's `images` list, in the list's own style. A problem,
 * as a string, when the list cannot be edited in place.
 */
export function addImages(text: string, entry: Location, images: readonly string[]): string | { problem: string } {
  if (images.length === 0) return text;
  const list = imagesList(text, entry);
  if (typeof list === 'string') return { problem: list };
  const items = list.items as Node[];
  const last = items[items.length - 1];
  if (list.flow === true) {
    const open = list.range?.[0];
    if (open === undefined || text[open] !== '[') return { problem: `${entry.path}.images: cannot find its opening bracket` };
    const at = last?.range?.[1] ?? open + 1;
    return applyEdits(text, [{ start: at, end: at, text: `${last === undefined ? '' : ', '}${images.join(', ')}` }]);
  }
  const first = items[0];
  if (first?.range === undefined || first.range === null || last?.range === undefined || last.range === null)
    return { problem: `${entry.path}.images: an empty block list` };
  const lineStart = text.lastIndexOf('\n', first.range[0] - 1) + 1;
  const prefix = text.slice(lineStart, first.range[0]);
  if (!/^[ \t]*-[ \t]+$/.test(prefix)) return { problem: `${entry.path}.images: its first item does not start a line` };
  const newline = text.indexOf('\n', last.range[1]);
  const lineEnd = newline < 0 ? text.length : text[newline - 1] === '\r' ? newline - 1 : newline;
  if (!/^[ \t]*(#.*)?$/.test(text.slice(last.range[1], lineEnd)))
    return { problem: `${entry.path}.images: its last item does not end a line` };
  const eol = lineEnding(text);
  return applyEdits(text, [{ start: lineEnd, end: lineEnd, text: images.map((image) => `${eol}${prefix}${image}`).join('') }]);
}

/** `text` without the images at `sites` (as {@link entryImages} found them): a block item's whole line, a flow item and its comma. */
export function removeImages(text: string, sites: readonly Pick<EntryImage, 'start' | 'end'>[]): string | { problem: string } {
  const edits: TextEdit[] = [];
  for (const site of sites) {
    const lineStart = text.lastIndexOf('\n', site.start - 1) + 1;
    const newline = text.indexOf('\n', site.end);
    const lineEnd = newline < 0 ? text.length : newline + 1;
    const before = text.slice(lineStart, site.start);
    const after = text.slice(site.end, lineEnd);
    if (/^[ \t]*-[ \t]+["']?$/.test(before) && /^["']?[ \t]*(#.*)?\r?\n?$/.test(after)) {
      edits.push({ start: lineStart, end: lineEnd, text: '' });
      continue;
    }
    // In a flow list: the item with the comma after it, or before it when it is the last.
    const quote = text[site.start - 1] === '"' || text[site.start - 1] === "'" ? 1 : 0;
    const start = site.start - quote;
    const end = site.end + quote;
    const next = /^[ \t]*,[ \t]*/.exec(text.slice(end));
    if (next !== null) {
      edits.push({ start, end: end + next[0].length, text: '' });
      continue;
    }
    if (/\[[ \t]*$/.test(text.slice(lineStart, start)) && /^[ \t]*\]/.test(text.slice(end))) {
      edits.push({ start, end, text: '' });
      continue;
    }
    const prev = /,[ \t]*$/.exec(text.slice(lineStart, start));
    if (prev === null || !/^[ \t]*\]/.test(text.slice(end))) return { problem: `cannot remove the image at offset ${site.start} in place` };
    edits.push({ start: start - prev[0].length, end, text: '' });
  }
  return applyEdits(text, edits);
}
