/**
 * The few fields of core/v1 objects the sidecar reads, typed as they arrive on the wire (JSON,
 * timestamps as RFC 3339 strings). We do not use @kubernetes/client-node's model classes at run
 * time: importing that package costs ~50 MiB of RSS (measured in bench/footprint.ts's notes),
 * more than the sidecar's whole budget, and its models turn timestamps into Date objects.
 */

/** metadata common to the objects we read. */
export interface KMeta {
  readonly name?: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
  readonly creationTimestamp?: string;
  readonly deletionTimestamp?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

/** core/v1 ContainerState. */
export interface KContainerState {
  readonly running?: { readonly startedAt?: string };
  readonly terminated?: {
    readonly exitCode?: number;
    readonly reason?: string;
    readonly message?: string;
    readonly startedAt?: string;
    readonly finishedAt?: string;
  };
  readonly waiting?: { readonly reason?: string; readonly message?: string };
}

/** core/v1 ContainerStatus. */
export interface KContainerStatus {
  readonly name: string;
  readonly image?: string;
  readonly imageID?: string;
  readonly containerID?: string;
  readonly restartCount?: number;
  readonly started?: boolean;
  readonly state?: KContainerState;
  readonly lastState?: KContainerState;
}

/** core/v1 Container (only what we read). */
export interface KContainer {
  readonly name: string;
  readonly image?: string;
  readonly imagePullPolicy?: string;
  readonly restartPolicy?: string;
}

/** core/v1 Pod (only what we read). */
export interface KPod {
  readonly metadata: KMeta;
  readonly spec?: {
    readonly nodeName?: string;
    readonly containers?: readonly KContainer[];
    readonly initContainers?: readonly KContainer[];
  };
  readonly status?: {
    readonly phase?: string;
    readonly startTime?: string;
    readonly containerStatuses?: readonly KContainerStatus[];
    readonly initContainerStatuses?: readonly KContainerStatus[];
  };
}

/** core/v1 Taint. */
export interface KTaint {
  readonly key: string;
  readonly value?: string;
  readonly effect: string;
  readonly timeAdded?: string;
}

/** core/v1 NodeCondition (only what we read). */
export interface KNodeCondition {
  readonly type: string;
  readonly status: string;
  readonly lastTransitionTime?: string;
}

/** core/v1 Node (only what we read). */
export interface KNode {
  readonly metadata: KMeta;
  readonly spec?: { readonly taints?: readonly KTaint[]; readonly unschedulable?: boolean };
  readonly status?: { readonly conditions?: readonly KNodeCondition[] };
}
