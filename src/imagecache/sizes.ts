/**
 * Image sizes recorded in the repository: the lock file `prewarm pin` writes beside the specs and
 * synth reads to split a pool's pullers by bytes without asking a registry. An entry whose digest
 * is not the one the spec pins is stale. Pure. See docs/architecture.md (Lanes: sizes live in git).
 */
import { isMap, isScalar, LineCounter, stringify, type Node } from 'yaml';
import type { Diagnostic, Location } from './errors.js';
import { checkDigest, parseImageRef, type ImageRef } from '../oci/reference.js';
import { MAX_IMAGE_BYTES } from '../contract/node-images.js';
import { compareStrings } from '../contract/order.js';
import { parseYamlDocuments } from './yaml.js';
import type { Bundle } from './model.js';

/** The lock file's name, in each spec folder named on the command line (or the folder of a named spec file). */
export const LOCK_FILE = 'prewarm.lock';

/** The only format version this code reads and writes. */
export const LOCK_VERSION = 1;

/** The platform sizes are measured for unless `pin --platform` says otherwise. */
export const DEFAULT_LOCK_PLATFORM = 'linux/amd64';

/** One image's recorded size. */
export interface SizeEntry {
  /** Canonical reference without digest: `domain/path:tag`. */
  readonly image: string;
  /** The digest the size was measured at. */
  readonly digest: string;
  /** Config and layers as stored (compressed), in bytes. */
  readonly compressed: number;
  /** Unpacked bytes, where the registry told them. */
  readonly uncompressed?: number;
}

/** A lock file read: its platform and entries by {@link SizeEntry.image}, with where each is written. */
export interface SizeLock {
  readonly file: string;
  readonly platform: string;
  readonly entries: ReadonlyMap<string, SizeEntry & { readonly location: Location }>;
}

/** The key of an image in a lock file: its canonical reference without the digest. */
export function lockKey(ref: ImageRef): string {
  return `${ref.domain}/${ref.path}${ref.tag === undefined ? '' : `:${ref.tag}`}`;
}

const PLATFORM = /^[a-z0-9]+\/[a-z0-9]+(\/[a-z0-9]+)?$/;

/** Why `text` is not a platform (`os/arch[/variant]`), or undefined. */
export function checkPlatform(text: string): string | undefined {
  return PLATFORM.test(text) && text.length <= 64
    ? undefined
    : `platform ${JSON.stringify(text.slice(0, 64))} is not os/arch, e.g. linux/amd64`;
}

/** A byte count of the file: a whole number from 0 to the largest image believed. */
function bytes(node: unknown): number | undefined {
  const v = isScalar(node) ? node.value : undefined;
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= MAX_IMAGE_BYTES ? v : undefined;
}

/** Reads a lock file; anything malformed is an error with line and field path, and the file is not used. */
export function parseLock(text: string, file: string): { lock?: SizeLock; diagnostics: Diagnostic[] } {
  const lines = new LineCounter();
  const diagnostics: Diagnostic[] = [];
  const at = (node: Node | null | undefined, path: string, message: string): void => {
    const pos = lines.linePos(node?.range?.[0] ?? 0);
    diagnostics.push({ severity: 'error', file, document: 1, line: pos.line, column: pos.col, path, message });
  };
  const docs = [...parseYamlDocuments(text, lines)];
  const doc = docs[0];
  if (doc === undefined || docs.length > 1) {
    at(undefined, '', `${LOCK_FILE} must hold exactly one YAML document (found ${docs.length}); run prewarm pin to write it again`);
    return { diagnostics };
  }
  for (const e of doc.errors) at(undefined, '', e.message);
  if (doc.errors.length > 0) return { diagnostics };
  const root = doc.contents;
  if (!isMap(root)) {
    at(root, '', `${LOCK_FILE} must be a mapping with version, platform and images`);
    return { diagnostics };
  }
  const field = (key: string): Node | undefined =>
    root.items.find((p) => isScalar(p.key) && p.key.value === key)?.value as Node | undefined;
  for (const p of root.items)
    if (!isScalar(p.key) || !['version', 'platform', 'images'].includes(String(p.key.value)))
      at(
        p.key,
        '',
        `unknown field ${JSON.stringify(isScalar(p.key) ? String(p.key.value).slice(0, 64) : '?')}: a lock has version, platform and images`,
      );
  const version = field('version');
  if (!isScalar(version) || version.value !== LOCK_VERSION)
    at(version, 'version', `version must be ${LOCK_VERSION}; this prewarm reads no other (run prewarm pin to write it again)`);
  const platformNode = field('platform');
  const platform = isScalar(platformNode) && typeof platformNode.value === 'string' ? platformNode.value : '';
  const badPlatform = checkPlatform(platform);
  if (badPlatform !== undefined) at(platformNode, 'platform', badPlatform);
  const entries = new Map<string, SizeEntry & { location: Location }>();
  const images = field('images');
  if (images !== undefined && !(isScalar(images) && images.value === null)) {
    if (!isMap(images)) at(images, 'images', 'images must be a mapping of image to its sizes');
    else for (const pair of images.items) readEntry(pair.key as Node, pair.value as Node, { at, lines, file, entries });
  }
  if (diagnostics.length > 0) return { diagnostics };
  return { lock: { file, platform, entries }, diagnostics };
}

interface EntryContext {
  readonly at: (node: Node | null | undefined, path: string, message: string) => void;
  readonly lines: LineCounter;
  readonly file: string;
  readonly entries: Map<string, SizeEntry & { location: Location }>;
}

/** Reads one `image: {digest, compressed, uncompressed}` entry into `c.entries`. */
function readEntry(keyNode: Node, value: Node, c: EntryContext): void {
  const name = isScalar(keyNode) && typeof keyNode.value === 'string' ? keyNode.value : '';
  const path = `images[${JSON.stringify(name.slice(0, 300))}]`;
  const parsed = parseImageRef(name);
  if (!parsed.ok || parsed.ref.digest !== undefined) {
    c.at(keyNode, path, parsed.ok ? 'an image here is named without its digest (the digest is its own field)' : parsed.error);
    return;
  }
  if (!isMap(value)) {
    c.at(value, path, 'must be a mapping with digest and compressed (and uncompressed, when known)');
    return;
  }
  const get = (k: string): Node | undefined => value.items.find((p) => isScalar(p.key) && p.key.value === k)?.value as Node | undefined;
  for (const p of value.items)
    if (!isScalar(p.key) || !['digest', 'compressed', 'uncompressed'].includes(String(p.key.value)))
      c.at(p.key as Node, path, 'unknown field: an entry has digest, compressed and uncompressed');
  const digestNode = get('digest');
  const digest = isScalar(digestNode) && typeof digestNode.value === 'string' ? digestNode.value : '';
  const badDigest = checkDigest(digest);
  if (badDigest !== undefined) c.at(digestNode ?? value, `${path}.digest`, badDigest);
  const compressed = bytes(get('compressed'));
  if (compressed === undefined)
    c.at(get('compressed') ?? value, `${path}.compressed`, `must be a whole number of bytes up to ${MAX_IMAGE_BYTES}`);
  const unode = get('uncompressed');
  const uncompressed = unode === undefined ? undefined : bytes(unode);
  if (unode !== undefined && uncompressed === undefined)
    c.at(unode, `${path}.uncompressed`, `must be a whole number of bytes up to ${MAX_IMAGE_BYTES}`);
  const key = lockKey(parsed.ref);
  if (c.entries.has(key)) c.at(keyNode, path, `${key} is listed twice`);
  if (compressed === undefined || badDigest !== undefined) return;
  const pos = c.lines.linePos(keyNode.range?.[0] ?? 0);
  const location: Location = { file: c.file, document: 1, line: pos.line, column: pos.col, path };
  c.entries.set(key, { image: key, digest, compressed, ...(uncompressed === undefined ? {} : { uncompressed }), location });
}

/** The lock file's text for `entries`: sorted by image, with a header that says what it is. */
export function renderLock(platform: string, entries: readonly SizeEntry[]): string {
  const images: Record<string, Record<string, string | number>> = {};
  for (const e of [...entries].sort((a, b) => compareStrings(a.image, b.image)))
    images[e.image] = {
      digest: e.digest,
      compressed: e.compressed,
      ...(e.uncompressed === undefined ? {} : { uncompressed: e.uncompressed }),
    };
  const header = [
    '# Written by `prewarm pin`; read by `prewarm synth` to split pullers by bytes. Do not edit:',
    '# run `prewarm pin` again after a digest moves. compressed: config and layers as the registry',
    `# stores them for ${platform}; uncompressed: only where the registry states it.`,
  ];
  return `${header.join('\n')}\n${stringify({ version: LOCK_VERSION, platform, images }, { lineWidth: 0 })}`;
}

/** Why an image of a pool has no usable size. */
export type SizeProblem = 'missing' | 'stale' | 'unpinned';

/** What a set of lock files says of a bundle's images. */
export interface ResolvedSizes {
  /** Compressed bytes by canonical reference (with digest), for every image with a fresh entry. */
  readonly bytes: ReadonlyMap<string, number>;
  /** Images without a usable size, by canonical reference, and why. */
  readonly unusable: ReadonlyMap<string, { readonly problem: SizeProblem; readonly measuredAt?: string }>;
}

/** The usable size of each of `images`; locks that disagree on an image make it missing. */
export function resolveSizes(images: readonly ImageRef[], locks: readonly SizeLock[]): ResolvedSizes {
  const bytes = new Map<string, number>();
  const unusable = new Map<string, { problem: SizeProblem; measuredAt?: string }>();
  for (const image of images) {
    const found = locks.flatMap((l) => {
      const e = l.entries.get(lockKey(image));
      return e === undefined ? [] : [e];
    });
    const same = found.every((e) => e.digest === found[0]?.digest && e.compressed === found[0]?.compressed);
    const entry = same ? found[0] : undefined;
    if (image.digest === undefined) unusable.set(image.canonical, { problem: 'unpinned' });
    else if (entry === undefined) unusable.set(image.canonical, { problem: 'missing' });
    else if (entry.digest !== image.digest) unusable.set(image.canonical, { problem: 'stale', measuredAt: entry.digest });
    else bytes.set(image.canonical, entry.compressed);
  }
  return { bytes, unusable };
}

/** An image of a split pool (`lanes` > 1) that has no usable size, for `validate` to list. */
export interface UnsizedImage {
  /** As the spec names it, canonical. */
  readonly image: string;
  readonly problem: SizeProblem;
  /** For a stale entry: the digest it was measured at. */
  readonly measuredAt?: string;
  /** Ids of the pools that hold it, sorted. */
  readonly pools: readonly string[];
}

/** The bundle with its lock files' sizes, and the images of split pools that have none. */
export function sizeBundle(bundle: Bundle, locks: readonly SizeLock[]): { bundle: Bundle; unsized: UnsizedImage[] } {
  if (locks.length === 0) return { bundle, unsized: [] };
  const split = bundle.pools.filter((p) => p.settings.lanes > 1);
  const images = [...new Map(split.flatMap((p) => p.images.map((i) => [i.canonical, i] as const))).values()];
  const { bytes, unusable } = resolveSizes(images, locks);
  const unsized = [...unusable].map(([image, why]) => ({
    image,
    ...why,
    pools: split
      .filter((p) => p.images.some((i) => i.canonical === image))
      .map((p) => p.id)
      .sort(),
  }));
  return { bundle: Object.freeze({ ...bundle, imageBytes: bytes }), unsized: unsized.sort((a, b) => compareStrings(a.image, b.image)) };
}

/** One line on an image without a usable size, for `validate`. */
export function unsizedText(u: UnsizedImage): string {
  const why =
    u.problem === 'unpinned'
      ? 'it has no digest, so no size can be trusted for it'
      : u.problem === 'stale'
        ? `its size was measured at ${u.measuredAt ?? '?'}, not the digest the spec pins`
        : `${LOCK_FILE} has no entry for it`;
  return `${u.image} (pool ${u.pools.join(', ')}): no usable size: ${why}; its pools split by image count (run prewarm pin)`;
}
