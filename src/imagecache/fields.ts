/**
 * Readers of the ImageCache fields that are more than a string, number or list: image references,
 * durations, the rollout's maxUnavailable and enumerations. Each reports its own problems at the
 * field's location and returns undefined for a value it refuses.
 */
import { outsideRange, parseDuration } from './duration.js';
import { excerpt, MAX_QUOTED_CHARS, quote } from '../text/quote.js';
import { checked, int, str, type Reader } from './read.js';
import { parseImageRef, type ImageRef } from '../oci/reference.js';

/** An image reference; a missing tag becomes `latest` with a warning. */
export const image: Reader<ImageRef> = (ctx, node, path) => {
  const text = str(ctx, node, path);
  if (text === undefined) return undefined;
  const parsed = parseImageRef(text);
  if (!parsed.ok) {
    // reference.ts quotes parts of the input as they are: it is shared with the sidecar's image,
    // which ships without errors.ts, so its message is bounded and escaped here.
    ctx.error(node, path, `invalid image reference ${quote(text)}: ${excerpt(parsed.error, 3 * MAX_QUOTED_CHARS)}`);
    return undefined;
  }
  if (parsed.ref.defaultedTag) {
    ctx.warn(node, path, `image ${quote(text)} has no tag; using ${parsed.ref.canonical} (pin a tag or digest)`);
  }
  return parsed.ref;
};

/** A duration such as `90s` or `10m`, in whole seconds. */
export const duration: Reader<number> = (ctx, node, path) => {
  const text = str(ctx, node, path);
  if (text === undefined) return undefined;
  const parsed = parseDuration(text);
  if ('error' in parsed) {
    ctx.error(node, path, parsed.error);
    return undefined;
  }
  return parsed.seconds;
};

/**
 * A duration within `range` (seconds): what the sidecar accepts (`LIMITS` in src/contract/names.ts).
 * Bounds the invocation sets on top (the refresh floor) are synth's (src/synth/bounds.ts).
 */
export const durationIn =
  (range: { readonly min: number; readonly max: number }): Reader<number> =>
  (ctx, node, path) => {
    const seconds = duration(ctx, node, path);
    if (seconds === undefined) return undefined;
    const outside = outsideRange(seconds, range);
    if (outside !== undefined) {
      ctx.error(node, path, outside);
      return undefined;
    }
    return seconds;
  };

/** A rollout's maxUnavailable: a whole number, or a percentage from 1% to 100%. */
export const maxUnavailable: Reader<number | string> = (ctx, node, path) => {
  const asNumber = node !== null && 'value' in node && typeof node.value === 'number';
  if (asNumber) return int(1, 1_000_000)(ctx, node, path);
  const text = str(ctx, node, path);
  if (text === undefined) return undefined;
  const m = /^(\d{1,3})%$/.exec(text);
  const percent = m === null ? NaN : Number(m[1]);
  if (!(percent >= 1 && percent <= 100)) {
    ctx.error(node, path, `must be a positive integer or a percentage from 1% to 100%, got ${quote(text)}`);
    return undefined;
  }
  return text;
};

/** One of `values`, exactly. */
export const oneOf = <T extends string>(values: readonly T[]): Reader<T> =>
  checked((v) => (values.includes(v as T) ? undefined : `is not one of ${values.map((x) => `"${x}"`).join(', ')}`), 'value') as Reader<T>;
