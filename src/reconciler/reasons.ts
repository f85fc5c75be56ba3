/**
 * Every Kubernetes Event reason and every metric name the sidecar emits, in one place, so the set
 * stays fixed and dashboards/alerts can rely on it (karpenter `pkg/events/reason.go` style).
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
  /** A moved tag was detected and its container restarted to pull the new digest. */
  TagMoved: 'TagMoved',
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
  TagMoved: 'Normal',
};

/** The `source.component` / `reportingController` of our Events. */
export const EVENT_COMPONENT = 'prewarm-reconciler';

/**
 * Metric names. Labels are bounded by construction: `pool` (one per pool in the bundle) and a
 * reason/outcome from a fixed set; never node or image (the node is the scrape target).
 */
export const Metric = {
  timeToWarm: 'prewarm_time_to_warm_seconds',
  warm: 'prewarm_pool_warm',
  partial: 'prewarm_pool_partial',
  imagesFailing: 'prewarm_images_failing',
  imagesPresent: 'prewarm_images_present',
  imagesTotal: 'prewarm_images',
  gateOpened: 'prewarm_gate_opened_total',
  refreshChecks: 'prewarm_refresh_checks_total',
  apiErrors: 'prewarm_api_errors_total',
} as const;

/** Buckets of {@link Metric.timeToWarm}, in seconds: from a cached layer to a 10 GB pull. */
export const TIME_TO_WARM_BUCKETS: readonly number[] = [1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600];

/** Outcomes of the `gateOpened` counter. */
export const GateOutcome = { Ready: 'ready', Forced: 'forced' } as const;
/** One of {@link GateOutcome}. */
export type GateOutcome = (typeof GateOutcome)[keyof typeof GateOutcome];

/** Outcomes of the `refreshChecks` counter. */
export const RefreshOutcome = {
  Unchanged: 'unchanged',
  Moved: 'moved',
  Error: 'error',
  Skipped: 'skipped',
} as const;
/** One of {@link RefreshOutcome}. */
export type RefreshOutcome = (typeof RefreshOutcome)[keyof typeof RefreshOutcome];
