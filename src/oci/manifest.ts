/**
 * What an image takes in a registry, read from its manifests: the compressed size of one
 * platform's image (its config and layers, as the manifest states them). Pure; the requests are
 * the client's (./client.ts). A registry is untrusted: every field is checked, and a size no real
 * image has is refused rather than added up.
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

/**
 * The digest of the manifest an index names for `platform`: the first entry of that OS and
 * architecture, as containerd picks one (a variant is not told apart here).
 */
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
  if (isIndex(manifest)) throw new Error('an index, not an image manifest');
  const config = manifest['config'];
  const layers = manifest['layers'];
  if (!isObject(config) || !Array.isArray(layers)) throw new Error('the manifest has no config and layers (schema 1 is not read)');
  let total = blobSize(config['size'], 'the config');
  for (const [i, layer] of layers.entries()) {
    total += blobSize(isObject(layer) ? layer['size'] : undefined, `layer ${i + 1}`);
    if (total > MAX_IMAGE_BYTES) throw new Error(`the layers add up to more than ${MAX_IMAGE_BYTES} bytes`);
  }
  return total;
}
