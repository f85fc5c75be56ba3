/**
 * The Events the sidecar posts about its Node: the fixed reasons, a builder per message, and the
 * parser `prewarm status` reads them back with; a round-trip test holds them to each other.
 */

/** Reasons of the Events the sidecar posts about its Node. */
export const EventReason = {
  /** Every image of the pool is present on the node. */
  Warm: 'Warm',
  /** The pool's deadline passed with images missing; the node is labelled `partial`. */
  Partial: 'Partial',
  /** Some image of the pool failed to pull while the node was still warming. */
  ImagePullFailing: 'ImagePullFailing',
  /** The gating taint was removed because every pool selecting the node is warm or partial. */
  GateOpened: 'GateOpened',
  /** The gating taint was removed at the absolute bound although some pool never reported. */
  GateForcedOpen: 'GateForcedOpen',
  /** The cluster's fail-safe removed the gating taint: the node was past its bound and no sidecar ran on it. */
  GateFailsafeOpened: 'GateFailsafeOpened',
  /** A moved tag was detected and its container restarted to pull the new digest. */
  TagMoved: 'TagMoved',
  /** A moved tag was detected, but the apiserver refused to set its container to the new digest. */
  TagRefreshFailed: 'TagRefreshFailed',
} as const;
/** One of {@link EventReason}. */
export type EventReason = (typeof EventReason)[keyof typeof EventReason];

/** An Event the controller should post about the node. */
export interface EventIntent {
  readonly reason: EventReason;
  readonly message: string;
}

/** Upper bound of an Event message (the apiserver truncates at 1 KiB in events.k8s.io). */
export const MAX_EVENT_MESSAGE_CHARS = 1000;

/** `s` cut to {@link MAX_EVENT_MESSAGE_CHARS}, so the apiserver never truncates it mid-word unseen. */
export function eventMessage(s: string): string {
  return s.length > MAX_EVENT_MESSAGE_CHARS ? `${s.slice(0, MAX_EVENT_MESSAGE_CHARS - 1)}…` : s;
}

/** Event type per reason: Warning for anything an operator should look at. */
export const EVENT_TYPE: Readonly<Record<EventReason, 'Normal' | 'Warning'>> = {
  Warm: 'Normal',
  Partial: 'Warning',
  ImagePullFailing: 'Warning',
  GateOpened: 'Normal',
  GateForcedOpen: 'Warning',
  GateFailsafeOpened: 'Warning',
  TagMoved: 'Normal',
  TagRefreshFailed: 'Warning',
};

/** The `source.component` / `reportingController` of our Events. */
export const EVENT_COMPONENT = 'prewarm-reconciler';

/** The pool's Warm Event. */
export function warmEvent(pool: string, images: number, ttwSeconds: number): EventIntent {
  return { reason: EventReason.Warm, message: eventMessage(`pool ${pool}: all ${images} images present, time to warm ${ttwSeconds}s`) };
}

/** The pool's Partial Event: `missing` of `images` were not present at the deadline, as `detail` says. */
export function partialEvent(pool: string, deadlineSeconds: number, missing: number, images: number, detail: string): EventIntent {
  return {
    reason: EventReason.Partial,
    message: eventMessage(`pool ${pool}: deadline of ${deadlineSeconds}s passed with ${missing} of ${images} images missing: ${detail}`),
  };
}

/** The pool's ImagePullFailing Event, `detail` listing the failing images. */
export function pullFailingEvent(pool: string, detail: string): EventIntent {
  return { reason: EventReason.ImagePullFailing, message: eventMessage(`pool ${pool}: ${detail}`) };
}

/** A moved tag of `pool`: container `container` was set to `pinned` (the tag at `to`) to pull it. */
export function tagMovedEvent(pool: string, tag: string, from: string, to: string, container: string, pinned: string): EventIntent {
  return {
    reason: EventReason.TagMoved,
    message: eventMessage(`pool ${pool}: ${tag} moved from ${from} to ${to}; set container ${container} to ${pinned} to pull it`),
  };
}

/** A moved tag of `pool` whose container could not be set to `to`; `why` is the apiserver's answer, quoted. */
export function tagRefreshFailedEvent(pool: string, tag: string, to: string, container: string, why: string): EventIntent {
  return {
    reason: EventReason.TagRefreshFailed,
    message: eventMessage(`pool ${pool}: ${tag} moved to ${to}, but container ${container} could not be set to it: ${why}`),
  };
}

/** How the gating taint was removed: every pool ready, at the absolute bound, or by the fail-safe. */
export type GateRemoval = 'ready' | 'forced' | 'failsafe';

/** The Event of the gating taint's removal; carries this reconcile's phase 1 note, so one Event per reconcile. */
export function gateEvent(
  pool: EventIntent | undefined,
  removal: GateRemoval,
  taintKey: string,
  waitingFor: readonly string[],
): EventIntent {
  const note =
    removal === 'forced'
      ? `removed gate taint ${taintKey} at the absolute bound; pools not ready: ${waitingFor.join(', ')}`
      : `removed gate taint ${taintKey}: every pool selecting the node is warm or partial`;
  if (pool) return { reason: pool.reason, message: eventMessage(`${pool.message}; ${note}`) };
  return { reason: removal === 'forced' ? EventReason.GateForcedOpen : EventReason.GateOpened, message: eventMessage(note) };
}

/** The fail-safe's Event: it removed gate taint `taintKey` from a node without a sidecar, past its bound. */
export function failsafeGateEvent(taintKey: string, ageSeconds: number, boundSeconds: number, waitingFor: readonly string[]): EventIntent {
  const pools = waitingFor.length === 0 ? 'none' : waitingFor.join(', ');
  return {
    reason: EventReason.GateFailsafeOpened,
    message: eventMessage(
      `removed gate taint ${taintKey} from the fail-safe: no prewarm sidecar runs on the node ${ageSeconds}s after it was created, ` +
        `past its bound of ${boundSeconds}s (the longest deadline of the pools gating it plus the fail-safe's grace); pools not ready: ${pools}`,
    ),
  };
}

/** What a reader takes from one of our Events. */
export interface NodeEventFacts {
  readonly reason: EventReason;
  /** The pool the Event is about; absent for a gate-only Event. */
  readonly pool?: string;
  /** Set when the Event reports the gating taint's removal. */
  readonly gate?: GateRemoval;
}

const REASONS: ReadonlySet<string> = new Set(Object.values(EventReason));

/** Reads back an Event built above; undefined for a reason that is not ours. */
export function parseNodeEvent(reason: string | undefined, message: string | undefined): NodeEventFacts | undefined {
  if (reason === undefined || !REASONS.has(reason)) return undefined;
  const text = message ?? '';
  const pool = /^pool ([^\s:]+)/.exec(text)?.[1];
  const gate: GateRemoval | undefined = /removed gate taint \S+ from the fail-safe/.test(text)
    ? 'failsafe'
    : /removed gate taint \S+ at the absolute bound/.test(text)
      ? 'forced'
      : /removed gate taint /.test(text)
        ? 'ready'
        : undefined;
  return { reason: reason as EventReason, ...(pool === undefined ? {} : { pool }), ...(gate === undefined ? {} : { gate }) };
}
