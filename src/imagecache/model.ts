/**
 * The validated, frozen model that synthesis consumes. Everything here is already checked and
 * normalised; constructs never see raw YAML.
 */
import type { Placement, Toleration } from '../contract/placement.js';
import type { Location } from './errors.js';
import type { ImageRef } from '../oci/reference.js';

/** The two ImageCache dialects we read. */
export const API_VERSIONS = {
  /** kube-fledged's ImageCache, accepted unchanged so its users can move over. */
  kubeFledged: 'kubefledged.io/v1alpha2',
  /** Our own ImageCache, a superset of kube-fledged's. */
  prewarm: 'prewarm.dev/v1alpha1',
} as const;
/** An ImageCache apiVersion we accept. */
export type ApiVersion = (typeof API_VERSIONS)[keyof typeof API_VERSIONS];

/** A core/v1 Toleration, validated; the placement contract defines it. */
export type { Toleration } from '../contract/placement.js';

/** The gating taint a pool lifts once its images are present. */
export interface Gate {
  /** Taint key, e.g. `prewarm.dev/warming`. */
  readonly taintKey: string;
  /** Seconds after the node turned Ready before the pool fails open. */
  readonly deadlineSeconds: number;
}

/** Settings that apply to a whole pool; every ImageCache feeding one pool must agree on them. */
export interface PoolSettings {
  /** PriorityClass of the pull pods, if any. */
  readonly priorityClassName?: string;
  /** RollingUpdate maxUnavailable: a count, or a percentage such as `10%`. */
  readonly maxUnavailable: number | string;
  /** Gating, or undefined when this pool does not gate nodes. */
  readonly gate?: Gate;
  /** Seconds between digest checks of moved tags; 0 disables refresh. */
  readonly refreshSeconds: number;
  /**
   * Pods that pull the pool's images in parallel while a node warms: 1 is the holder alone, with
   * no pullers; L > 1 is L burst pullers beside the holder, which then pulls none
   * (src/synth/lanes.ts).
   */
  readonly lanes: number;
  /**
   * Early pulling: the burst pullers run on the host network and tolerate the taints of a node's
   * start-up (`STARTUP_TOLERATIONS` in src/contract/placement.ts), so they pull before the CNI makes the node Ready. Needs
   * `lanes` > 1 (pullers) and a namespace prewarm owns (src/synth/checks/model.ts).
   */
  readonly earlyPull: boolean;
}

/**
 * What a location may be recorded for: each pool-wide setting, and the gate's taint key apart from
 * the rest of the gate (a refused key points at the key itself).
 */
export type SettingField = keyof PoolSettings | 'gateTaintKey';

/** Where each explicit setting of an ImageCache is written. */
export type SettingLocations = Readonly<Partial<Record<SettingField, Location>>>;

/** One `cacheSpec[]` entry: a set of images for the nodes a selector and tolerations pick. */
export interface CacheEntry {
  readonly images: readonly ImageRef[];
  /** Exact-match node labels; empty selects every node. */
  readonly nodeSelector: Readonly<Record<string, string>>;
  /** Tolerations of the pull pods (kube-fledged input tolerates every taint, as its Jobs did). */
  readonly tolerations: readonly Toleration[];
  /** Explicit pool name, when the spec gave one. */
  readonly pool?: string;
  /** Where this entry was written. */
  readonly location: Location;
}

/** One ImageCache document, validated. */
export interface ImageCache {
  readonly apiVersion: ApiVersion;
  readonly name: string;
  readonly namespace: string;
  readonly entries: readonly CacheEntry[];
  /** Names of Secrets in {@link namespace}, sorted and de-duplicated. */
  readonly imagePullSecrets: readonly string[];
  /** Pool-wide settings with defaults resolved, and where each explicit one was written. */
  readonly settings: PoolSettings;
  readonly settingLocations: SettingLocations;
  /** Where the document starts. */
  readonly location: Location;
}

/**
 * One `cacheSpec` entry that feeds a pool. Synthesis keeps no other link back to the spec, so
 * checks made after naming (a name two inputs share, an object over a size limit) use this to
 * point at the file and line.
 */
export interface PoolOrigin {
  /** `namespace/name` of the ImageCache. */
  readonly imageCache: string;
  /** Where the entry is written. */
  readonly location: Location;
  /** Canonical references of the entry's images, in the entry's order. */
  readonly images: readonly string[];
}

/** A node pool: the unit that becomes one pull DaemonSet. */
export interface Pool {
  /**
   * The pool's identity as objects name it, computed once when the bundle is built
   * (src/contract/identity.ts `poolId`): the DaemonSet's selector value, the node label's name part and
   * the id the sidecars know the pool by in pools.json.
   */
  readonly id: string;
  readonly namespace: string;
  /** Explicit pool name from the spec; otherwise naming derives {@link id} from the selector. */
  readonly name?: string;
  /** Canonical identity: namespace, selector and tolerations, serialised; stable across runs. */
  readonly key: string;
  /** The selector and tolerations the spec gave (without the gate toleration). */
  readonly nodeSelector: Readonly<Record<string, string>>;
  readonly tolerations: readonly Toleration[];
  /**
   * Where the pool's pods run, computed once: the DaemonSet and pools.json are both rendered from
   * it (src/contract/placement.ts).
   */
  readonly placement: Placement;
  /**
   * Where the pool's burst pullers run, computed with {@link placement}: the same selector and
   * tolerations, plus the start-up tolerations when the pool pulls early. The holder, and so the
   * sidecars' view in pools.json, keep {@link placement}.
   */
  readonly pullerPlacement: Placement;
  /** Every image of every entry that feeds the pool, de-duplicated and sorted by canonical form. */
  readonly images: readonly ImageRef[];
  /** Union of the pull secrets of the contributing ImageCaches, sorted. */
  readonly imagePullSecrets: readonly string[];
  readonly settings: PoolSettings;
  /** Where the ImageCache whose settings the pool took (the first by `namespace/name`) wrote them. */
  readonly settingLocations: SettingLocations;
  /** `namespace/name` of the contributing ImageCaches, sorted. */
  readonly sources: readonly string[];
  /** Every entry that feeds the pool, in ImageCache (`namespace/name`) then entry order. */
  readonly origins: readonly PoolOrigin[];
}

/** Everything one synth run produces objects for. */
export interface Bundle {
  /** Pools sorted by namespace, then key. */
  readonly pools: readonly Pool[];
  /** Namespaces that hold at least one pool, sorted. */
  readonly namespaces: readonly string[];
  /**
   * Compressed bytes of images, by canonical reference (with digest), as the repository's lock
   * files record them (./sizes.ts); only images whose entry is fresh. A pool whose every image
   * is here splits its pullers by bytes (src/synth/lanes.ts).
   * @default - no sizes: every pool splits by image count
   */
  readonly imageBytes?: ReadonlyMap<string, number>;
}
