/**
 * What a pod's container statuses mean for a pool's images, in one place so the sidecar, status,
 * timeline and doctor read them alike. Types fit both raw JSON and client-node's models.
 */
import { SIDECAR_CONTAINER, SIDECAR_IMAGE_CONTAINER } from './names.js';

/** A field that may be absent; client-node's models spell absence as `undefined`. */
export type Opt<T> = T | undefined;

/** A Kubernetes timestamp: RFC 3339 text on the wire, a Date in client-node's models. */
export type Timestamp = Date | string;

/** A timestamp as ms since the epoch; absent or unreadable is undefined. */
export function timeOf(t: Opt<Timestamp>): number | undefined {
  if (t === undefined) return undefined;
  const v = t instanceof Date ? t.getTime() : Date.parse(t);
  return Number.isNaN(v) ? undefined : v;
}

export interface ObjectMeta {
  readonly name?: Opt<string>;
  readonly namespace?: Opt<string>;
  readonly uid?: Opt<string>;
  readonly resourceVersion?: Opt<string>;
  readonly creationTimestamp?: Opt<Timestamp>;
  readonly deletionTimestamp?: Opt<Timestamp>;
  readonly labels?: Opt<Readonly<Record<string, string>>>;
  readonly annotations?: Opt<Readonly<Record<string, string>>>;
}

/** core/v1 ContainerState. */
export interface ContainerState {
  readonly running?: Opt<{ readonly startedAt?: Opt<Timestamp> }>;
  readonly terminated?: Opt<{
    readonly exitCode?: Opt<number>;
    readonly reason?: Opt<string>;
    readonly message?: Opt<string>;
    readonly startedAt?: Opt<Timestamp>;
    readonly finishedAt?: Opt<Timestamp>;
  }>;
  readonly waiting?: Opt<{ readonly reason?: Opt<string>; readonly message?: Opt<string> }>;
}

/** core/v1 ContainerStatus. */
export interface ContainerStatus {
  readonly name: string;
  readonly image?: Opt<string>;
  /** Set once the runtime created the container, so its image is on the node. */
  readonly imageID?: Opt<string>;
  readonly containerID?: Opt<string>;
  readonly restartCount?: Opt<number>;
  readonly started?: Opt<boolean>;
  readonly ready?: Opt<boolean>;
  readonly state?: Opt<ContainerState>;
  readonly lastState?: Opt<ContainerState>;
}

/** core/v1 Container (only what we read). */
export interface Container {
  readonly name: string;
  readonly image?: Opt<string>;
  readonly imagePullPolicy?: Opt<string>;
  readonly restartPolicy?: Opt<string>;
}

/** core/v1 PodCondition and NodeCondition (only what we read). */
export interface Condition {
  readonly type: string;
  readonly status: string;
  readonly lastTransitionTime?: Opt<Timestamp>;
}

/** core/v1 Pod (only what the sidecar, status, the timeline and doctor read). */
export interface Pod {
  readonly metadata?: Opt<ObjectMeta>;
  readonly spec?: Opt<{
    readonly nodeName?: Opt<string>;
    readonly containers?: Opt<readonly Container[]>;
    readonly initContainers?: Opt<readonly Container[]>;
  }>;
  readonly status?: Opt<{
    readonly phase?: Opt<string>;
    readonly startTime?: Opt<Timestamp>;
    readonly conditions?: Opt<readonly Condition[]>;
    readonly containerStatuses?: Opt<readonly ContainerStatus[]>;
    readonly initContainerStatuses?: Opt<readonly ContainerStatus[]>;
  }>;
}

/** When a condition of `type` last turned True, if it is True now (ms since the epoch). */
export function conditionTrueSince(conditions: Opt<readonly Condition[]>, type: string): number | undefined {
  const c = conditions?.find((x) => x.type === type);
  return c?.status === 'True' ? timeOf(c.lastTransitionTime) : undefined;
}

/** Reasons of the kubelet's Events about a pull (kubelet `events/event.go`). */
export const PullEventReason = {
  Pulling: 'Pulling',
  /** The message carries the pull's duration. */
  Pulled: 'Pulled',
} as const;

/** Waiting reasons of a failed pull (kubelet `images/types.go`). */
export const PULL_FAILURE_REASONS: ReadonlySet<string> = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'RegistryUnavailable',
  'SignatureValidationFailed',
  'ImageInspectError',
]);

/** Waiting reasons reached only after `EnsureImageExists` succeeded: the image is on the node. */
export const POST_PULL_REASONS: ReadonlySet<string> = new Set([
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
  'PreStartHookError',
  'PostStartHookError',
  'CrashLoopBackOff',
]);

function stateStartedAt(s: Opt<ContainerState>): number | undefined {
  return timeOf(s?.running?.startedAt) ?? timeOf(s?.terminated?.startedAt);
}

/** When the container last started, as far as its current or last state still tells (ms). */
export function startedAt(st: Opt<ContainerStatus>): number | undefined {
  return stateStartedAt(st?.state) ?? stateStartedAt(st?.lastState);
}

/** Whether the container runs or ran; a terminated state counts only with a start. */
export function containerStarted(st: Opt<ContainerStatus>): boolean {
  return (
    st?.state?.running !== undefined ||
    st?.lastState?.running !== undefined ||
    timeOf(st?.state?.terminated?.startedAt) !== undefined ||
    timeOf(st?.lastState?.terminated?.startedAt) !== undefined
  );
}

/** Whether the image is on the node: started, an imageID reported, or stopped past a successful pull. */
export function imagePresent(st: Opt<ContainerStatus>): boolean {
  const reason = st?.state?.waiting?.reason;
  return containerStarted(st) || (st?.imageID ?? '') !== '' || (reason !== undefined && POST_PULL_REASONS.has(reason));
}

/** The kubelet's pull failure of the container (its waiting reason), unless its image is present. */
export function pullFailure(st: Opt<ContainerStatus>): string | undefined {
  const reason = st?.state?.waiting?.reason;
  return reason !== undefined && PULL_FAILURE_REASONS.has(reason) && !imagePresent(st) ? reason : undefined;
}

/** Every container status of the pod, init containers first; names are unique across both. */
export function allStatuses(pod: Opt<Pod>): readonly ContainerStatus[] {
  return [...(pod?.status?.initContainerStatuses ?? []), ...(pod?.status?.containerStatuses ?? [])];
}

/** The status of the pod's container `name`, an init container or not. */
export function statusOf(pod: Opt<Pod>, name: string): ContainerStatus | undefined {
  return allStatuses(pod).find((s) => s.name === name);
}

/** The containers of a pod spec that run beside the others: native sidecars, then containers. */
export function runningContainers<C extends Container>(
  spec: Opt<{ readonly initContainers?: Opt<readonly C[]>; readonly containers?: Opt<readonly C[]> }>,
): readonly C[] {
  return [...(spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always'), ...(spec?.containers ?? [])];
}

/** Containers of a pull pod that cache no pool image: the sidecar, and the early puller's copy of its image. */
const NOT_CACHED: ReadonlySet<string> = new Set([SIDECAR_CONTAINER, SIDECAR_IMAGE_CONTAINER]);

/** The containers of a pull pod that hold a pool's images: its running containers but the sidecar's. */
export function imageContainers<C extends Container>(
  spec: Opt<{ readonly initContainers?: Opt<readonly C[]>; readonly containers?: Opt<readonly C[]> }>,
): readonly C[] {
  return runningContainers(spec).filter((c) => !NOT_CACHED.has(c.name));
}

/** The statuses of the pod's {@link imageContainers}, those the kubelet reports, in their order. */
export function imageStatuses(pod: Opt<Pod>): readonly ContainerStatus[] {
  const byName = new Map(allStatuses(pod).map((s) => [s.name, s]));
  return imageContainers(pod?.spec).flatMap((c) => byName.get(c.name) ?? []);
}
