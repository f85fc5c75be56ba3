/**
 * The size limits of synth's output: what the apiserver, etcd and client-side apply refuse, in one
 * table, measured on an object's compact JSON. docs/cli.md (Limits) states the same numbers.
 */
import type { Severity } from '../../imagecache/errors.js';
import { POOLS_CONFIGMAP } from '../../contract/names.js';

const MIB = 1024 * 1024;

/** Every limit synth enforces or warns about; each with the severity of going over it. */
export const OUTPUT_LIMITS = {
  /** core/v1 validation's MaxSecretSize on a ConfigMap's data; `prewarm-pools` lists every pool. */
  configMapDataBytes: { limit: 1 * MIB, severity: 'error' as Severity },
  /**
   * etcd's default `--max-request-bytes`, measured on compact JSON: larger than the protobuf etcd
   * stores, to which server-side apply adds managedFields.
   */
  objectBytes: { limit: 1.5 * MIB, severity: 'error' as Severity },
  /** Client-side apply copies the object into `last-applied-configuration`, within the annotation limit. */
  clientSideApplyBytes: { limit: 256 * 1024, severity: 'warning' as Severity },
} as const;

/** The limits an object's size is measured against. */
export type SizeLimit = 'configMapDataBytes' | 'objectBytes' | 'clientSideApplyBytes';

/** An object as far as its size is measured: all of it, and a ConfigMap's data. */
export interface Sized {
  readonly kind: string;
  readonly data?: Readonly<Record<string, string>>;
  readonly binaryData?: Readonly<Record<string, string>>;
}

/** The size limits `m` goes over, each with the size measured against it. */
export function sizesOver(m: Sized): [SizeLimit, number][] {
  const over: [SizeLimit, number][] = [];
  if (m.kind === 'ConfigMap') {
    const bytes = [...Object.values(m.data ?? {}), ...Object.values(m.binaryData ?? {})].reduce((n, v) => n + Buffer.byteLength(v), 0);
    if (bytes > OUTPUT_LIMITS.configMapDataBytes.limit) over.push(['configMapDataBytes', bytes]);
  }
  const bytes = Buffer.byteLength(JSON.stringify(m));
  if (bytes > OUTPUT_LIMITS.objectBytes.limit) over.push(['objectBytes', bytes]);
  else if (bytes > OUTPUT_LIMITS.clientSideApplyBytes.limit) over.push(['clientSideApplyBytes', bytes]);
  return over;
}

/** What exceeding `limit` means, and what to do about it. */
export function overLimit(
  limit: SizeLimit,
  name: string,
  bytes: number,
  counts: { readonly images?: number; readonly pools?: number },
): string {
  const split =
    counts.images === undefined ? '' : `; split the pool's ${counts.images} images across pools (another selector or tolerations)`;
  switch (limit) {
    case 'configMapDataBytes':
      return (
        `would hold ${size(bytes)} of data; the apiserver refuses a ConfigMap over ${size(OUTPUT_LIMITS[limit].limit)}` +
        (name === POOLS_CONFIGMAP && counts.pools !== undefined
          ? `: it lists all ${counts.pools} pools of the bundle, so fewer pools (fewer distinct selectors and tolerations) fit`
          : '')
      );
    case 'objectBytes':
      return `would be ${size(bytes)} as JSON; the apiserver refuses an object over about ${size(OUTPUT_LIMITS[limit].limit)}${split}`;
    case 'clientSideApplyBytes':
      return (
        `is ${size(bytes)} as JSON: client-side "kubectl apply" and Argo CD without ServerSideApply=true will fail on it, since they copy it ` +
        `into an annotation limited to ${size(OUTPUT_LIMITS[limit].limit)}; apply it server-side${split}`
      );
  }
}

/** A byte count for messages: `1.5 MiB (1,572,864 bytes)`, or without the exact count. */
export function size(bytes: number, exact = true): string {
  const [unit, scale] = bytes >= 1024 * MIB ? ['GiB', 1024 * MIB] : bytes >= MIB ? ['MiB', MIB] : ['KiB', 1024];
  const human = `${Number((bytes / scale).toFixed(2))} ${unit}`;
  return exact ? `${human} (${bytes.toLocaleString('en-US')} bytes)` : human;
}
