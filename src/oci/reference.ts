/**
 * Image references by distribution/reference's grammar, normalised as the kubelet and containerd
 * resolve them (normalize.go). `registry-1.docker.io/...` stays as written, as there: containerd
 * stores the image under that name, so only a pull of that name serves it.
 */
import { DIGEST_LENGTHS } from '../contract/digest.js';

/** A parsed, normalised image reference. */
export interface ImageRef {
  /** With port if any; `docker.io` for none or `index.docker.io`. */
  readonly domain: string;
  readonly path: string;
  readonly tag?: string;
  readonly digest?: string;
  /** The tag was filled in as `latest`. */
  readonly defaultedTag: boolean;
  /** `domain/path[:tag][@digest]`: identity for de-duplication. */
  readonly canonical: string;
}

export type ParseResult = { readonly ok: true; readonly ref: ImageRef } | { readonly ok: false; readonly error: string };

const DEFAULT_DOMAIN = 'docker.io';
/** Docker Hub's legacy name, which normalize.go turns into {@link DEFAULT_DOMAIN}. */
const LEGACY_DEFAULT_DOMAIN = 'index.docker.io';
const OFFICIAL_PREFIX = 'library/';
/** distribution/reference's NameTotalLengthMax, applied once normalised, as every node does. */
const MAX_NAME_LENGTH = 255;
/** ParseNormalizedNamed refuses a name of 64 hex digits: it reads as an image ID. */
const IMAGE_ID = /^[a-f0-9]{64}$/;

const DOMAIN_COMPONENT = /^(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])$/;
const IPV6_HOST = /^\[[0-9a-fA-F:.]+\]$/;
const PORT = /^[0-9]+$/;
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;

/** Parses and normalises an image reference; never throws: the message names the offending part. */
export function parseImageRef(input: string): ParseResult {
  if (input.length === 0) return fail('image reference is empty');
  if (input.trim() !== input) return fail('image reference has leading or trailing white space');
  if (IMAGE_ID.test(input)) {
    return fail(
      'a name of 64 hex digits reads as an image ID, which the kubelet and containerd refuse to pull by name: add a tag or a registry',
    );
  }

  let rest = input;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    const digestError = checkDigest(digest);
    if (digestError !== undefined) return fail(digestError);
  }

  // A tag follows the last colon only when no slash comes after it: `host:5000/app` has a port.
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (tag === '') return fail(`tag is empty in "${input}"`);
    if (!TAG.test(tag)) return fail(`tag "${tag}" is invalid: it must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`);
  }

  if (rest === '') return fail(`repository name is empty in "${input}"`);
  // Normalising cannot shorten a name this long enough to fit: refused before any further work.
  if (rest.length > MAX_NAME_LENGTH + 'index.'.length) return fail(tooLong(rest.length));

  const { domain, path } = splitDomain(rest);
  if (domain !== undefined) {
    const domainError = checkDomain(domain);
    if (domainError !== undefined) return fail(domainError);
  }
  if (path === '') return fail(`repository path is empty in "${input}"`);
  for (const component of path.split('/')) {
    if (component === '') return fail(`repository path "${path}" has an empty component`);
    if (component.toLowerCase() !== component) return fail(`repository name "${path}" must be lowercase`);
    if (!PATH_COMPONENT.test(component)) {
      return fail(`repository path component "${component}" is invalid: use lowercase letters, digits and single separators (. _ __ -)`);
    }
  }

  const fullDomain = domain === undefined || domain === LEGACY_DEFAULT_DOMAIN ? DEFAULT_DOMAIN : domain;
  const fullPath = fullDomain === DEFAULT_DOMAIN && !path.includes('/') ? OFFICIAL_PREFIX + path : path;
  const normalisedLength = fullDomain.length + 1 + fullPath.length;
  if (normalisedLength > MAX_NAME_LENGTH) return fail(tooLong(normalisedLength, `${`${fullDomain}/${fullPath}`.slice(0, 40)}…`));
  const defaultedTag = tag === undefined && digest === undefined;
  const finalTag = defaultedTag ? 'latest' : tag;
  const canonical =
    `${fullDomain}/${fullPath}` + (finalTag === undefined ? '' : `:${finalTag}`) + (digest === undefined ? '' : `@${digest}`);
  return {
    ok: true,
    ref: {
      domain: fullDomain,
      path: fullPath,
      ...(finalTag === undefined ? {} : { tag: finalTag }),
      ...(digest === undefined ? {} : { digest }),
      defaultedTag,
      canonical,
    },
  };
}

/**
 * Splits off the registry host the way Docker does: the first component is a host only if it
 * contains a dot or a colon, is `localhost`, or has an uppercase letter.
 */
function splitDomain(name: string): { domain: string | undefined; path: string } {
  const slash = name.indexOf('/');
  if (slash < 0) return { domain: undefined, path: name };
  const first = name.slice(0, slash);
  const isDomain = /[.:]/.test(first) || first === 'localhost' || first.toLowerCase() !== first;
  return isDomain ? { domain: first, path: name.slice(slash + 1) } : { domain: undefined, path: name };
}

function checkDomain(domain: string): string | undefined {
  let host = domain;
  const bracket = domain.lastIndexOf(']');
  const colon = domain.lastIndexOf(':');
  if (colon > bracket) {
    const port = domain.slice(colon + 1);
    if (!PORT.test(port)) return `registry port "${port}" is not a number`;
    host = domain.slice(0, colon);
  }
  if (IPV6_HOST.test(host)) return undefined;
  if (host.split('.').every((c) => DOMAIN_COMPONENT.test(c))) return undefined;
  return `registry host "${host}" is invalid`;
}

/** Why `digest` is not one containerd can pull by, or undefined. */
export function checkDigest(digest: string): string | undefined {
  const colon = digest.indexOf(':');
  if (colon <= 0) return `digest "${digest}" must have the form algorithm:hex`;
  const algorithm = digest.slice(0, colon);
  const hex = digest.slice(colon + 1);
  const expected = Object.hasOwn(DIGEST_LENGTHS, algorithm) ? DIGEST_LENGTHS[algorithm] : undefined;
  if (expected === undefined) {
    return `digest algorithm "${algorithm}" is not supported: containerd accepts ${Object.keys(DIGEST_LENGTHS).join(', ')}`;
  }
  if (hex.length !== expected || !/^[a-f0-9]+$/.test(hex)) {
    return `digest "${digest}" is invalid: ${algorithm} needs ${expected} lowercase hex characters, got ${hex.length}`;
  }
  return undefined;
}

function tooLong(length: number, normalised?: string): string {
  const as = normalised === undefined ? '' : ` once normalised (${normalised})`;
  return `repository name is ${length} characters long${as}, over the limit of ${MAX_NAME_LENGTH} that registries and container runtimes enforce`;
}

function fail(error: string): ParseResult {
  return { ok: false, error };
}
