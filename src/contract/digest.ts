/** Image digests as the runtime and the registry write them, and the one reader of a container status's `imageID`. */

/**
 * The digest algorithms containerd accepts, with their hex lengths: those opencontainers/go-digest
 * registers. Any other algorithm (`md5:`, `sha1:`) parses under the reference grammar, but the
 * pull fails on the node.
 */
export const DIGEST_LENGTHS: Readonly<Record<string, number>> = { sha256: 64, sha384: 96, sha512: 128 };

/** Whether `s` is a digest `algorithm:hex` of an algorithm in {@link DIGEST_LENGTHS}. */
export function isDigest(s: string): boolean {
  const colon = s.indexOf(':');
  const algorithm = s.slice(0, colon);
  const expected = colon > 0 && Object.hasOwn(DIGEST_LENGTHS, algorithm) ? DIGEST_LENGTHS[algorithm] : undefined;
  const hex = s.slice(colon + 1);
  return expected !== undefined && hex.length === expected && /^[a-f0-9]+$/.test(hex);
}

/** What a container status's `imageID` says. */
export interface ImageID {
  /** The digest it ends with. */
  readonly digest: string;
  /**
   * `repo@digest`, a name the node lists the image by; absent for a bare `sha256:…`, which is
   * the runtime's image (config) id rather than the registry's manifest digest.
   */
  readonly repoDigest?: string;
}

/**
 * Reads an `imageID` (`repo@sha256:…`, `docker-pullable://repo@sha256:…` or `sha256:…`);
 * undefined when it is empty or ends with no digest.
 */
export function parseImageID(imageID: string | undefined): ImageID | undefined {
  if (!imageID) return undefined;
  const id = imageID.replace(/^docker-pullable:\/\//, '');
  const at = id.lastIndexOf('@');
  const digest = id.slice(at + 1);
  if (!isDigest(digest)) return undefined;
  return at > 0 ? { digest, repoDigest: id } : { digest };
}
