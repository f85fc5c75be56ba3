/**
 * What an image takes in a registry, from its manifests: compressed (config and layers) and, where
 * every layer tells it, uncompressed. Pure; a registry is untrusted, so every field is checked.
 */
import { MAX_IMAGE_BYTES } from '../contract/node-images.js';
import { isObject } from '../text/json.js';

/** The platform a node pulls for: `node.status.nodeInfo` `operatingSystem` and `architecture`. */
export interface Platform {
  readonly os: string;
  readonly architecture: string;
}

export { MAX_IMAGE_BYTES };

/** Media types of an index or manifest list, whose entries are one manifest per platform. */
const INDEX_TYPES: ReadonlySet<string> = new Set([
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
]);

type Json = Record<string, unknown>;

/** Parses a manifest body: a JSON object, or an Error naming what it is instead. */
export function parseManifest(body: string | Buffer): Json {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString());
  } catch {
    throw new Error('the manifest is not JSON');
  }
  if (!isObject(parsed)) throw new Error('the manifest is not a JSON object');
  return parsed;
}

/** Whether a parsed manifest is an index (manifest list), by its media type or its `manifests` array. */
export function isIndex(doc: Json): boolean {
  return (typeof doc['mediaType'] === 'string' && INDEX_TYPES.has(doc['mediaType'])) || Array.isArray(doc['manifests']);
}

/** A blob size as the registry states it: a whole number from 0 to {@link MAX_IMAGE_BYTES}. */
function blobSize(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v > MAX_IMAGE_BYTES)
    throw new Error(`${what} has no believable size (${typeof v === 'number' ? String(v) : typeof v})`);
  return v;
}

/** The digest of the manifest an index names for `platform`: the first of that OS and architecture. */
export function platformDigest(index: Json, platform: Platform): string {
  const entries = Array.isArray(index['manifests']) ? index['manifests'] : [];
  for (const e of entries) {
    if (!isObject(e) || !isObject(e['platform'])) continue;
    const p = e['platform'];
    if (p['os'] === platform.os && p['architecture'] === platform.architecture && typeof e['digest'] === 'string') return e['digest'];
  }
  throw new Error(`the index names no manifest for ${platform.os}/${platform.architecture}`);
}

/** The compressed size of an image manifest: its config's and its layers' sizes, added up. */
export function compressedBytes(manifest: Json): number {
  return imageBytes(manifest).compressed;
}

/** An image's size as its manifest states it. */
export interface ImageBytes {
  /** Config and layers as stored in the registry: what a pull transfers. */
  readonly compressed: number;
  /** Config and layers unpacked, when the manifest tells it for every layer; else undefined. */
  readonly uncompressed?: number;
}

/** Layer media types stored without compression: their size is their unpacked size. */
const PLAIN_LAYER_TYPES: ReadonlySet<string> = new Set([
  'application/vnd.oci.image.layer.v1.tar',
  'application/vnd.docker.image.rootfs.diff.tar',
]);

/** The eStargz annotation that states a compressed layer's unpacked size (containerd stargz-snapshotter). */
export const UNCOMPRESSED_SIZE_ANNOTATION = 'containerd.io/snapshot/stargz/uncompressed_size';

/** A layer's unpacked size when the manifest states it; undefined otherwise. A stated size must be believable. */
function unpackedSize(layer: Json, stored: number, what: string): number | undefined {
  if (typeof layer['mediaType'] === 'string' && PLAIN_LAYER_TYPES.has(layer['mediaType'])) return stored;
  const annotations = layer['annotations'];
  const stated = isObject(annotations) ? annotations[UNCOMPRESSED_SIZE_ANNOTATION] : undefined;
  if (stated === undefined) return undefined;
  const n = typeof stated === 'string' && /^[0-9]{1,16}$/.test(stated) ? Number(stated) : Number.NaN;
  return blobSize(Number.isNaN(n) ? stated : n, `${what}'s ${UNCOMPRESSED_SIZE_ANNOTATION}`);
}

/** An image manifest's sizes: compressed always, uncompressed where every layer states it. */
export function imageBytes(manifest: Json): ImageBytes {
  if (isIndex(manifest)) throw new Error('an index, not an image manifest');
  const config = manifest['config'];
  const layers = manifest['layers'];
  if (!isObject(config) || !Array.isArray(layers)) throw new Error('the manifest has no config and layers (schema 1 is not read)');
  const configBytes = blobSize(config['size'], 'the config');
  let total = configBytes;
  let unpacked: number | undefined = configBytes;
  for (const [i, layer] of layers.entries()) {
    const what = `layer ${i + 1}`;
    const stored = blobSize(isObject(layer) ? layer['size'] : undefined, what);
    total += stored;
    if (total > MAX_IMAGE_BYTES) throw new Error(`the layers add up to more than ${MAX_IMAGE_BYTES} bytes`);
    const size = isObject(layer) ? unpackedSize(layer, stored, what) : undefined;
    unpacked = unpacked === undefined || size === undefined || unpacked + size > MAX_IMAGE_BYTES ? undefined : unpacked + size;
  }
  return unpacked === undefined || layers.length === 0 ? { compressed: total } : { compressed: total, uncompressed: unpacked };
}
