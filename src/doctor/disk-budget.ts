/**
 * Doctor's disk budget of a node: the bytes its pools pin (never GC'd) against the image filesystem
 * and the kubelet's image GC thresholds. Sizes from the node's image list are lower bounds. Pure.
 */
import { believedSize, matchImages, podImages } from '../contract/node-images.js';
import { compareStrings } from '../contract/order.js';
import type { Pod } from '../contract/pod-status.js';
import { isHolder, poolOf } from '../contract/roles.js';
import type { Platform } from '../oci/manifest.js';
import { parseImageRef } from '../oci/reference.js';
import { plural } from '../text/plural.js';
import { excerpt } from '../text/quote.js';
import type { ClusterRead, DoctorNode, ImageFsStats, KubeletConfig } from './input.js';
import { managed } from './pools.js';
import { fixFor, KUBELET_FIX, unread } from './reads.js';
import type { Level } from './report.js';
import { isObject } from '../text/json.js';

/** The largest file system believed (8 PiB, the last exact number): a kubelet that reports more is not read. */
const MAX_FS_BYTES = Number.MAX_SAFE_INTEGER;

/** `nodeStatusMaxImages` when the kubelet configuration does not say. */
export const DEFAULT_NODE_STATUS_MAX_IMAGES = 50;

const MAX_WHY_CHARS = 200;

/** A byte count the summary reports: a whole number up to {@link MAX_FS_BYTES}, or why it is not one. */
function byteCount(v: unknown, what: string): number | string {
  if (typeof v !== 'number') return `${what} is ${v === undefined ? 'missing' : `a ${typeof v}`}`;
  if (!Number.isSafeInteger(v) || v < 0 || v > MAX_FS_BYTES) return `${what} is ${String(v)}, not a byte count`;
  return v;
}

/** The image filesystem from `/stats/summary`; numbers no file system has fail the read. */
export function imageFsOf(answer: ClusterRead<unknown>): ClusterRead<ImageFsStats> {
  if (answer.kind !== 'ok') return answer;
  let parsed: unknown = answer.value;
  try {
    if (typeof parsed === 'string' || Buffer.isBuffer(parsed)) parsed = JSON.parse(parsed.toString());
  } catch {
    return { kind: 'failed', message: 'the summary is not JSON' };
  }
  const node = isObject(parsed) ? parsed['node'] : undefined;
  const runtime = isObject(node) ? node['runtime'] : undefined;
  const fs = isObject(runtime) ? runtime['imageFs'] : undefined;
  if (!isObject(fs)) return { kind: 'failed', message: 'the summary holds no node.runtime.imageFs' };
  const capacity = byteCount(fs['capacityBytes'], 'capacityBytes');
  const used = byteCount(fs['usedBytes'], 'usedBytes');
  const available = byteCount(fs['availableBytes'], 'availableBytes');
  for (const v of [capacity, used, available]) if (typeof v === 'string') return { kind: 'failed', message: `imageFs.${v}` };
  const [c, u, a] = [capacity, used, available] as number[];
  if (c === 0) return { kind: 'failed', message: 'imageFs.capacityBytes is 0' };
  if ((u as number) > (c as number)) return { kind: 'failed', message: `imageFs reports ${u} bytes used of ${c}; not believed` };
  return { kind: 'ok', value: { capacityBytes: c as number, usedBytes: u as number, availableBytes: Math.min(a as number, c as number) } };
}

/** The holder pods of the pools on `node` (all of them when `node` is undefined). */
function holdersOf(pods: readonly Pod[], node?: string): Pod[] {
  return pods.filter(
    (p) => managed(p.metadata?.labels) && isHolder(p.metadata?.labels) && (node === undefined || p.spec?.nodeName === node),
  );
}

/** The nodes a pool's holder runs on, sorted: those doctor reads `/stats/summary` of. */
export function nodesWithPools(pods: readonly Pod[]): string[] {
  return [...new Set(holdersOf(pods).flatMap((p) => (p.spec?.nodeName ? [p.spec.nodeName] : [])))].sort();
}

/** The key of a registry size in `DoctorInput.imageSizes`. */
export function sizeKey(image: string, platform: Platform): string {
  return `${platform.os}/${platform.architecture} ${image}`;
}

/** The platform the node pulls for, from `nodeInfo`. */
export function platformOf(node: DoctorNode): Platform | undefined {
  const info = node.status?.nodeInfo;
  return info?.operatingSystem && info.architecture ? { os: info.operatingSystem, architecture: info.architecture } : undefined;
}

/** Image references as containerd names them (`python:3.12` is `docker.io/library/python:3.12`). */
function canonical(image: string): string {
  const parsed = parseImageRef(image);
  return parsed.ok ? parsed.ref.canonical : image;
}

/** The holders' images, matched against the node's image list. */
function matchOnNode(holders: readonly Pod[], node: DoctorNode): ReturnType<typeof matchImages> {
  return matchImages(podImages(holders, canonical), node.status?.images ?? []);
}

/** An image whose size doctor asks its registry for. */
export interface ImageToSize {
  readonly image: string;
  readonly platform: Platform;
  readonly key: string;
}

/** The pools' images each node's list does not show (not pulled, or cut), once per platform. */
export function imagesToSize(pods: readonly Pod[], nodes: readonly DoctorNode[]): ImageToSize[] {
  const out = new Map<string, ImageToSize>();
  for (const node of nodes) {
    const platform = platformOf(node);
    const holders = holdersOf(pods, node.metadata?.name ?? '');
    if (platform === undefined || holders.length === 0) continue;
    for (const { ref } of matchOnNode(holders, node).unlisted) {
      if (!parseImageRef(ref).ok) continue;
      const key = sizeKey(ref, platform);
      out.set(key, { image: ref, platform, key });
    }
  }
  return [...out.values()].sort((a, b) => compareStrings(a.key, b.key));
}

/** What the pools on a node pin, in bytes. */
export interface PinnedBytes {
  readonly pools: readonly string[];
  readonly images: number;
  readonly listed: number;
  /** Bytes of the images sized from their registry manifests: compressed. */
  readonly compressed: number;
  /** Images whose size neither the node nor the registry told. */
  readonly unknown: readonly string[];
  readonly why: readonly string[];
  /** The most the unknown images can add (each cut from the list is no larger than its smallest). */
  readonly unknownAtMost: number | undefined;
}

/** The bytes the holders on `node` pin; `maxImages` is the kubelet's `nodeStatusMaxImages`. */
export function pinnedBytes(
  holders: readonly Pod[],
  node: DoctorNode,
  maxImages: number,
  sizes: ReadonlyMap<string, ClusterRead<number>>,
): PinnedBytes {
  const { listed, unlisted } = matchOnNode(holders, node);
  const entries = node.status?.images ?? [];
  const cut = maxImages >= 0 && entries.length >= maxImages;
  const smallest = Math.min(...entries.map((e) => (typeof e.sizeBytes === 'number' && e.sizeBytes >= 0 ? e.sizeBytes : Infinity)));
  const platform = platformOf(node);
  let compressed = 0;
  const unknown: string[] = [];
  const why = new Set<string>();
  let bounded = true;
  for (const image of unlisted) {
    const read = platform === undefined ? undefined : sizes.get(sizeKey(image.ref, platform));
    if (read?.kind === 'ok' && believedSize(read.value) !== undefined) {
      compressed += read.value;
      continue;
    }
    unknown.push(image.ref);
    if (platform === undefined) why.add('the node states no OS and architecture');
    else if (read === undefined || read.kind === 'ok') why.add('the registry was not asked');
    else why.add(read.kind === 'missing' ? `${image.ref} is not in its registry` : excerpt(read.message, MAX_WHY_CHARS));
    // Cut from a full list, an image on the node is no larger than the smallest one listed.
    if (!(image.onNode && cut && Number.isFinite(smallest))) bounded = false;
  }
  const pools = [...new Set(holders.map((h) => poolOf(h.metadata?.labels) ?? '').filter((p) => p !== ''))].sort();
  return {
    pools,
    images: listed.size + unlisted.length,
    listed: [...listed.values()].reduce((a, b) => a + b, 0),
    compressed,
    unknown,
    why: [...why].sort(),
    unknownAtMost: unknown.length === 0 ? 0 : bounded ? unknown.length * smallest : undefined,
  };
}

export interface GcThresholds {
  readonly high: number;
  readonly low: number;
}

/** The thresholds a kubelet configuration states; undefined when they are not percentages. */
export function thresholdsOf(kc: KubeletConfig): GcThresholds | undefined {
  const high = kc.imageGCHighThresholdPercent ?? 85;
  const low = kc.imageGCLowThresholdPercent ?? 80;
  const pct = (v: number): boolean => Number.isInteger(v) && v >= 0 && v <= 100;
  return pct(high) && pct(low) && low <= high ? { high, low } : undefined;
}

/** The kubelet's usage percentage: `100 - floor(available * 100 / capacity)`, in exact integers. */
export function usagePercent(capacity: number, available: number): number {
  return 100 - Number((BigInt(available) * 100n) / BigInt(capacity));
}

/** Pinned bytes alone put usage at or past the high threshold: GC never brings the node back below it. */
export function passesHigh(pinned: number, capacity: number, high: number): boolean {
  return usagePercent(capacity, Math.max(0, capacity - pinned)) >= high;
}

/** Pinned bytes alone leave GC something to free below the low threshold that it may not free. */
export function passesLow(pinned: number, capacity: number, low: number): boolean {
  return (BigInt(capacity) * BigInt(100 - low)) / 100n - BigInt(Math.max(0, capacity - pinned)) > 0n;
}

/** Bytes for a reader: MiB below 1 GiB, GiB from there. */
export function byteSize(b: number): string {
  return b >= 2 ** 30 ? `${(b / 2 ** 30).toFixed(1)} GiB` : `${(b / 2 ** 20).toFixed(1)} MiB`;
}

export interface Judgement {
  readonly level: Level;
  readonly message: string;
  readonly fix?: string;
}

/** What the pools pin, in words. */
export function pinnedText(p: PinnedBytes): string {
  const total = p.listed + p.compressed;
  const parts: string[] = [];
  if (p.compressed > 0) parts.push(`${byteSize(p.listed)} as the node lists them, ${byteSize(p.compressed)} compressed, from the registry`);
  if (p.unknown.length > 0) {
    const bound =
      p.unknownAtMost === undefined ? '' : ` (at most ${byteSize(p.unknownAtMost)} more: they are on the node but cut from its image list)`;
    parts.push(`${plural(p.unknown.length, 'image')} of unknown size${bound}: ${p.why.join('; ')}`);
  }
  const pools = p.pools.length === 1 ? `pool ${p.pools.join('')} pins` : `pools ${p.pools.join(', ')} pin`;
  return `${pools} ${plural(p.images, 'image')}, ${p.unknown.length > 0 ? 'at least ' : ''}${byteSize(total)}${parts.length > 0 ? ` (${parts.join('; ')})` : ''}`;
}

/** The fix for a budget that does not fit: the disk or the pools, since GC cannot touch pinned images. */
const SHRINK_FIX =
  'give these nodes a larger image filesystem, or pin fewer or smaller images on them (a pool of their own, by node selector)';

/** Judges a node's disk budget: error past the high threshold, warning past the low, unknown when unsized. */
export function judgeBudget(p: PinnedBytes, fs: ImageFsStats, gc: GcThresholds | undefined): Judgement {
  const low = p.listed + p.compressed;
  const high = p.unknownAtMost === undefined ? undefined : low + p.unknownAtMost;
  const c = fs.capacityBytes;
  const disk = `an image filesystem of ${byteSize(c)} (${byteSize(fs.usedBytes)} used now)`;
  const share = `${Math.min(100, Math.round((low * 100) / c))}%`;
  const head = `${pinnedText(p)}, ${share} of ${disk}`;
  if (low >= c)
    return {
      level: 'error',
      message: `${head}: the pinned images do not fit, and pulls fail for lack of space`,
      fix: SHRINK_FIX,
    };
  if (gc === undefined) return { level: 'info', message: `${head}; image GC's thresholds are unknown (see kubelet-config)` };
  const thresholds = `image GC from ${gc.high}% down to ${gc.low}%`;
  if (gc.high >= 100) return { level: 'info', message: `${head}; image GC is off, so nothing frees this file system but you` };
  if (passesHigh(low, c, gc.high))
    return {
      level: 'error',
      message: `${head}; ${thresholds}: the pinned images alone pass the high threshold, which GC can never get below (each pass every 5 minutes fails with FreeDiskSpaceFailed), and once the file system passes the kubelet's eviction threshold the node reports DiskPressure and evicts workloads`,
      fix: SHRINK_FIX,
    };
  if (passesLow(low, c, gc.low)) {
    let enough = gc.low + 1;
    while (enough < gc.high && passesLow(low, c, enough)) enough++;
    const raise = enough < gc.high ? `raise imageGCLowThresholdPercent to ${enough} or more, ` : '';
    return {
      level: 'warning',
      message: `${head}; ${thresholds}: the pinned images alone pass the low threshold, so once GC starts it cannot get down to ${gc.low}%: each pass removes every image no container uses, and fails`,
      fix: `${raise}${SHRINK_FIX}`,
    };
  }
  if (p.unknown.length > 0 && (high === undefined || passesLow(high, c, gc.low)))
    return {
      level: 'unknown',
      message: `${head}; ${thresholds}: the images of unknown size could pass the low threshold; cannot tell`,
      fix: 'let doctor read those images from their registry (credentials with --docker-config, --plain-http for an HTTP registry), or raise nodeStatusMaxImages so the node lists every image',
    };
  return { level: 'ok', message: `${head}; ${thresholds}: GC has room below the low threshold beside them` };
}

/** The disk budget of one node: none without pools; unknown when its filesystem could not be read. */
export function checkDiskBudget(
  nodeName: string,
  node: DoctorNode,
  kc: KubeletConfig | undefined,
  pods: readonly Pod[],
  imageFs: ClusterRead<ImageFsStats> | undefined,
  sizes: ReadonlyMap<string, ClusterRead<number>>,
): Judgement | undefined {
  const holders = holdersOf(pods, nodeName);
  if (holders.length === 0) return undefined;
  const maxImages = kc?.nodeStatusMaxImages ?? DEFAULT_NODE_STATUS_MAX_IMAGES;
  const pinned = pinnedBytes(holders, node, maxImages, sizes);
  const fs = imageFs ?? { kind: 'failed', message: 'not read' };
  if (fs.kind !== 'ok') {
    const fix = fixFor(fs, 'grant get on nodes/proxy to read /api/v1/nodes/NAME/proxy/stats/summary', KUBELET_FIX);
    return {
      level: 'unknown',
      message: `${pinnedText(pinned)}; ${unread("the image filesystem (the kubelet's /stats/summary)", fs)}`,
      ...(fix === undefined ? {} : { fix }),
    };
  }
  return judgeBudget(pinned, fs.value, kc === undefined ? undefined : thresholdsOf(kc));
}
