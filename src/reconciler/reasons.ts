/**
 * Every metric name the sidecar emits, in one place, so the set stays fixed and dashboards and
 * alerts can rely on it. The Event reasons and texts are the contract's (src/contract/events.ts),
 * re-exported here for the sidecar's modules.
 */

export {
  EVENT_COMPONENT,
  EVENT_TYPE,
  EventReason,
  eventMessage,
  MAX_EVENT_MESSAGE_CHARS,
  tagMovedEvent,
  tagRefreshFailedEvent,
  type EventIntent,
} from '../contract/events.js';

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
  pinnedBytes: 'prewarm_pool_pinned_bytes',
  gateOpened: 'prewarm_gate_opened_total',
  refreshChecks: 'prewarm_refresh_checks_total',
  apiErrors: 'prewarm_api_errors_total',
  watchRestarts: 'prewarm_watch_restarts_total',
  watchIgnored: 'prewarm_watch_ignored_total',
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
  /** The tag moved, and the apiserver refused to set the container to the new digest. */
  RestartFailed: 'restart-failed',
} as const;
/** One of {@link RefreshOutcome}. */
export type RefreshOutcome = (typeof RefreshOutcome)[keyof typeof RefreshOutcome];

/** The sidecar's two watches, as the `watch` label of the watch counters names them. */
export const WatchName = { Pod: 'pod', PoolPods: 'pool-pods' } as const;
/** One of {@link WatchName}. */
export type WatchName = (typeof WatchName)[keyof typeof WatchName];

/** Why a watch was opened again: the `cause` label of `watchRestarts`. */
export const WatchRestart = {
  /** The server ended the stream after it ran a while (its timeout): opened again at once. */
  Ended: 'ended',
  /** 410 after it ran a while: listed again at once. */
  Expired: 'expired',
  /** Ended or expired right after it opened: opened again after a backoff. */
  Short: 'short',
  /** A transport or HTTP error: opened again after a backoff. */
  Error: 'error',
} as const;
/** One of {@link WatchRestart}. */
export type WatchRestart = (typeof WatchRestart)[keyof typeof WatchRestart];

/** Why a watch's object was not used: the `reason` label of `watchIgnored`. */
export type IgnoredReason = 'invalid' | 'other-node' | 'over-cap';
