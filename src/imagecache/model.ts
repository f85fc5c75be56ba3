/** The validated, frozen model that synthesis consumes; constructs never see raw YAML. */
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
export type ApiVersion = (typeof API_VERSIONS)[keyof typeof API_VERSIONS];

/** A core/v1 Toleration, validated; the placement contract defines it. */
export type { Toleration } from '../contract/placement.js';

/** The gating taint a pool lifts once its images are present. */
export interface Gate {
  readonly taintKey: string;
  /** Seconds after the node turned Ready before the pool fails open. */
  readonly deadlineSeconds: number;
}

/** Settings that apply to a whole pool; every ImageCache feeding one pool must agree on them. */
export interface PoolSettings {
  readonly priorityClassName?: string;
  /** RollingUpdate maxUnavailable: a count, or a percentage such as `10%`. */
  readonly maxUnavailable: number | string;
  readonly gate?: Gate;
  /** Seconds between digest checks of moved tags; 0 disables refresh. */
  readonly refreshSeconds: number;
  /** 1 is the holder alone; L > 1 is L burst pullers beside it (docs/architecture.md#lanes-burst-pullers). */
  readonly lanes: number;
  /** Burst pullers pull before the CNI is up; needs `lanes` > 1 and an owned namespace. */
  readonly earlyPull: boolean;
}

/** Each pool-wide setting, and the gate's taint key apart, so a refused key points at itself. */
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
  readonly pool?: string;
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
  /** Defaults resolved. */
  readonly settings: PoolSettings;
  readonly settingLocations: SettingLocations;
  readonly location: Location;
}

/** One `cacheSpec` entry that feeds a pool: the only link back to the spec for later checks. */
export interface PoolOrigin {
  readonly imageCache: string;
  readonly location: Location;
  /** Canonical, in the entry's order. */
  readonly images: readonly string[];
}

/** A node pool: the unit that becomes one pull DaemonSet. */
export interface Pool {
  /** The pool's identity as objects, labels and pools.json name it (contract/identity.ts `poolId`). */
  readonly id: string;
  readonly namespace: string;
  /** Explicit; otherwise {@link id} derives from the selector. */
  readonly name?: string;
  /** Namespace, selector and tolerations, serialised; stable across runs. */
  readonly key: string;
  /** As the spec gave them (without the gate toleration). */
  readonly nodeSelector: Readonly<Record<string, string>>;
  readonly tolerations: readonly Toleration[];
  /** Computed once; the DaemonSet and pools.json both render it. */
  readonly placement: Placement;
  /** {@link placement}, plus the start-up tolerations when the pool pulls early. */
  readonly pullerPlacement: Placement;
  /** De-duplicated, sorted by canonical form. */
  readonly images: readonly ImageRef[];
  readonly imagePullSecrets: readonly string[];
  readonly settings: PoolSettings;
  /** The settings come from the first contributing ImageCache by `namespace/name`. */
  readonly settingLocations: SettingLocations;
  readonly sources: readonly string[];
  readonly origins: readonly PoolOrigin[];
}

/** Everything one synth run produces objects for. */
export interface Bundle {
  /** Sorted by namespace, then key. */
  readonly pools: readonly Pool[];
  readonly namespaces: readonly string[];
  /** Compressed bytes by canonical reference, from fresh lock-file entries. @default - every pool splits by count */
  readonly imageBytes?: ReadonlyMap<string, number>;
}
