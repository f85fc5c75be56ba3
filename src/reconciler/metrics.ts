/**
 * The sidecar's metrics: every name it emits, and a minimal hand-written Prometheus registry (text
 * format 0.0.4) that keeps the sidecar free of dependencies.
 */
import { compareStrings } from '../contract/order.js';

/** Metric names; labels are bounded: `pool` and a reason or outcome, never node or image. */
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
  /** 410 after it ran a while: listed again after a backoff (client-go's reflector does the same). */
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

type Labels = Readonly<Record<string, string>>;

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function fmtLabels(l: Labels, extra?: [string, string]): string {
  const parts = Object.keys(l)
    .sort()
    .map((k) => `${k}="${escapeLabel(l[k] as string)}"`);
  if (extra) parts.push(`${extra[0]}="${escapeLabel(extra[1])}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

function fmtNum(n: number): string {
  if (n === Infinity) return '+Inf';
  if (n === -Infinity) return '-Inf';
  if (Number.isNaN(n)) return 'NaN';
  return String(n);
}

const key = (l: Labels): string => JSON.stringify(Object.entries(l).sort(([a], [b]) => compareStrings(a, b)));

/** A counter or gauge family. */
class Scalar {
  private readonly values = new Map<string, { labels: Labels; v: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge',
  ) {}
  set(l: Labels, v: number): void {
    this.values.set(key(l), { labels: l, v });
  }
  inc(l: Labels, by = 1): void {
    const k = key(l);
    this.values.set(k, { labels: l, v: (this.values.get(k)?.v ?? 0) + by });
  }
  get(l: Labels): number | undefined {
    return this.values.get(key(l))?.v;
  }
  /** Drops every series whose labels include `l` (e.g. stale failure reasons). */
  clear(match: Labels): void {
    for (const [k, s] of this.values) if (Object.entries(match).every(([a, b]) => s.labels[a] === b)) this.values.delete(k);
  }
  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`);
    for (const k of [...this.values.keys()].sort()) {
      const s = this.values.get(k) as { labels: Labels; v: number };
      out.push(`${this.name}${fmtLabels(s.labels)} ${fmtNum(s.v)}`);
    }
  }
}

/** A histogram family with fixed buckets. */
class Histogram {
  private readonly series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: readonly number[],
  ) {}
  observe(l: Labels, v: number): void {
    const k = key(l);
    let s = this.series.get(k);
    if (!s) {
      s = { labels: l, counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.series.set(k, s);
    }
    this.buckets.forEach((b, i) => {
      if (v <= b) (s.counts[i] as number)++;
    });
    s.sum += v;
    s.count++;
  }
  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`);
    for (const k of [...this.series.keys()].sort()) {
      const s = this.series.get(k) as { labels: Labels; counts: number[]; sum: number; count: number };
      this.buckets.forEach((b, i) => out.push(`${this.name}_bucket${fmtLabels(s.labels, ['le', fmtNum(b)])} ${s.counts[i]}`));
      out.push(`${this.name}_bucket${fmtLabels(s.labels, ['le', '+Inf'])} ${s.count}`);
      out.push(`${this.name}_sum${fmtLabels(s.labels)} ${fmtNum(s.sum)}`);
      out.push(`${this.name}_count${fmtLabels(s.labels)} ${s.count}`);
    }
  }
}

/** The sidecar's metric families; one instance per process. */
export class Metrics {
  readonly timeToWarm = new Histogram(
    Metric.timeToWarm,
    'Seconds from node Ready (or pod creation, if later) until every image of the pool was present.',
    TIME_TO_WARM_BUCKETS,
  );
  readonly warm = new Scalar(Metric.warm, '1 if every image of the pool is present on this node.', 'gauge');
  readonly partial = new Scalar(Metric.partial, '1 if the pool failed open at its deadline with images missing.', 'gauge');
  readonly imagesFailing = new Scalar(Metric.imagesFailing, 'Images of the pool currently failing to pull, by kubelet reason.', 'gauge');
  readonly imagesPresent = new Scalar(Metric.imagesPresent, 'Images of the pool present on this node.', 'gauge');
  readonly imagesTotal = new Scalar(Metric.imagesTotal, 'Images in the pool.', 'gauge');
  readonly pinnedBytes = new Scalar(
    Metric.pinnedBytes,
    "Bytes the pool's images pin on this node, as the node's image list states them; complete=false: some image is not listed, a lower bound.",
    'gauge',
  );
  readonly gateOpened = new Scalar(Metric.gateOpened, 'Gating taints removed by this sidecar, by outcome (ready, forced).', 'counter');
  readonly refreshChecks = new Scalar(Metric.refreshChecks, 'Registry digest checks of tagged images, by outcome.', 'counter');
  readonly apiErrors = new Scalar(Metric.apiErrors, 'Failed calls to the apiserver, by operation.', 'counter');
  readonly watchRestarts = new Scalar(
    Metric.watchRestarts,
    'Watches opened again, by watch and cause (ended, expired, short: ended at once, backed off; error).',
    'counter',
  );
  readonly watchIgnored = new Scalar(
    Metric.watchIgnored,
    'Objects a watch or list answered that the sidecar ignored, by watch and reason (invalid, other-node, over-cap).',
    'counter',
  );

  /** Text exposition of every family, in a fixed order. */
  render(): string {
    const out: string[] = [];
    for (const m of [
      this.timeToWarm,
      this.warm,
      this.partial,
      this.imagesFailing,
      this.imagesPresent,
      this.imagesTotal,
      this.pinnedBytes,
      this.gateOpened,
      this.refreshChecks,
      this.apiErrors,
      this.watchRestarts,
      this.watchIgnored,
    ])
      m.render(out);
    return `${out.join('\n')}\n`;
  }
}

/** Content type of {@link Metrics.render}'s output. */
export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
