/** What `prewarm doctor` reads from the cluster, as far as its checks look (client-node's types fit). */

import type { Opt, Pod } from '../contract/pod-status.js';

/** `node.runtime.imageFs` of the kubelet's summary API, checked. */
export interface ImageFsStats {
  readonly capacityBytes: number;
  readonly usedBytes: number;
  /** At most the capacity (the kubelet's GC caps it so too). */
  readonly availableBytes: number;
}

export type Labels = Opt<Readonly<Record<string, string>>>;

/** One read: the object, or why not (`denied` is the user's missing permission, `missing` a 404). */
export type ClusterRead<T> =
  | { readonly kind: 'ok'; readonly value: T }
  | { readonly kind: 'missing' }
  | { readonly kind: 'denied'; readonly message: string }
  | { readonly kind: 'failed'; readonly message: string };

export interface ObservedVersion {
  readonly major: string;
  /** As the apiserver says it: `36`, or `30+` on some managed clusters. */
  readonly minor: string;
  readonly gitVersion: string;
}

interface ObservedContainer {
  readonly name: string;
  readonly image?: Opt<string>;
  readonly env?: Opt<readonly { readonly name: string; readonly value?: Opt<string> }[]>;
  readonly restartPolicy?: Opt<string>;
}

export interface DoctorDaemonSet {
  readonly metadata?: Opt<{
    readonly name?: Opt<string>;
    readonly namespace?: Opt<string>;
    readonly labels?: Labels;
    readonly generation?: Opt<number>;
  }>;
  readonly spec?: Opt<{
    readonly selector?: Opt<{ readonly matchLabels?: Labels }>;
    readonly template?: Opt<{
      readonly spec?: Opt<{
        readonly initContainers?: Opt<readonly ObservedContainer[]>;
        readonly containers?: Opt<readonly ObservedContainer[]>;
        readonly imagePullSecrets?: Opt<readonly { readonly name?: Opt<string> }[]>;
        /** True on the pullers of a pool that pulls early. */
        readonly hostNetwork?: Opt<boolean>;
        /** Read for the sleeper's ConfigMap volume, whose one item's key is its architecture. */
        readonly volumes?: Opt<
          readonly {
            readonly name: string;
            readonly configMap?: Opt<{ readonly items?: Opt<readonly { readonly key: string }[]> }>;
          }[]
        >;
      }>;
    }>;
  }>;
  readonly status?: Opt<{
    readonly desiredNumberScheduled?: Opt<number>;
    readonly updatedNumberScheduled?: Opt<number>;
    readonly numberAvailable?: Opt<number>;
    readonly observedGeneration?: Opt<number>;
  }>;
}

export interface DoctorNode {
  readonly metadata?: Opt<{ readonly name?: Opt<string>; readonly creationTimestamp?: Opt<Date | string> }>;
  readonly spec?: Opt<{ readonly taints?: Opt<readonly { readonly key: string; readonly effect?: Opt<string> }[]> }>;
  readonly status?: Opt<{
    readonly capacity?: Opt<Readonly<Record<string, string>>>;
    readonly allocatable?: Opt<Readonly<Record<string, string>>>;
    /** As the kubelet lists them: the largest first, at most `nodeStatusMaxImages` of them. */
    readonly images?: Opt<readonly { readonly names?: Opt<readonly string[]>; readonly sizeBytes?: Opt<number> }[]>;
    readonly nodeInfo?: Opt<{ readonly operatingSystem?: Opt<string>; readonly architecture?: Opt<string> }>;
  }>;
}

/** The KubeletConfiguration fields doctor reads, as `/configz` returns them (`kubeletconfig`). */
export interface KubeletConfig {
  readonly serializeImagePulls?: boolean;
  readonly maxParallelImagePulls?: number;
  readonly imageGCHighThresholdPercent?: number;
  readonly imageGCLowThresholdPercent?: number;
  readonly maxPods?: number;
  /** How many images the node lists in its status (-1: all of them). */
  readonly nodeStatusMaxImages?: number;
  readonly registerWithTaints?: readonly { readonly key: string; readonly effect?: string }[];
}

/** The fields of the early pullers' ValidatingAdmissionPolicyBinding that doctor reads. */
export interface EarlyPullBinding {
  readonly spec?: Opt<{
    readonly matchResources?: Opt<{
      readonly namespaceSelector?: Opt<{
        readonly matchLabels?: Labels;
        readonly matchExpressions?: Opt<
          readonly { readonly key: string; readonly operator: string; readonly values?: Opt<readonly string[]> }[]
        >;
      }>;
    }>;
  }>;
}

/** Everything doctor looked at. Secrets and kubelet configs are read for what the rest names. */
export interface DoctorInput {
  /** When the cluster was read (ms since the epoch). */
  readonly now: number;
  readonly version: ClusterRead<ObservedVersion>;
  readonly policy: ClusterRead<unknown>;
  readonly policyBinding: ClusterRead<unknown>;
  /** The admission policy for early pullers (src/synth/early-pull.ts), and its binding. */
  readonly earlyPullPolicy: ClusterRead<unknown>;
  readonly earlyPullPolicyBinding: ClusterRead<EarlyPullBinding>;
  /** DaemonSets labelled `app.kubernetes.io/managed-by: prewarm`, holders and pullers. */
  readonly daemonSets: ClusterRead<readonly DoctorDaemonSet[]>;
  /** Every pod that is neither Succeeded nor Failed, in every namespace. */
  readonly pods: ClusterRead<readonly Pod[]>;
  readonly nodes: ClusterRead<readonly DoctorNode[]>;
  /** By `namespace/name`, for each name {@link pullSecretsOf} returns. */
  readonly secrets: ReadonlyMap<string, ClusterRead<unknown>>;
  readonly kubeletConfigs: ReadonlyMap<string, ClusterRead<KubeletConfig>>;
  /** `/stats/summary`'s image filesystem, by node name, for each of `nodesWithPools`. */
  readonly imageFs: ReadonlyMap<string, ClusterRead<ImageFsStats>>;
  /** Compressed registry sizes by `sizeKey`, for each of `imagesToSize`. */
  readonly imageSizes: ReadonlyMap<string, ClusterRead<number>>;
}
