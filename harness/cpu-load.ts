/**
 * The machine's CPU load over a window, from /proc/stat. A join timed on a machine whose CPUs are
 * saturated measures the CPUs, not the pulls: benchmarks print this beside their figures so that a
 * reader can tell which it was, and compare runs only at like load.
 */
import { readFileSync } from 'node:fs';

/** The aggregate CPU counters at one moment: busy and all jiffies, summed over every CPU. */
export interface CpuTick {
  /** Epoch ms. */
  readonly at: number;
  readonly busy: number;
  readonly total: number;
}

/**
 * The aggregate `cpu` line of /proc/stat at `at`. Idle and iowait are not busy; guest time is
 * already inside user and nice, so it is not added again.
 */
export function parseProcStat(text: string, at: number): CpuTick {
  const line = text.split('\n').find((l) => l.startsWith('cpu '));
  if (line === undefined) throw new Error('/proc/stat: no aggregate cpu line');
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const busy = user + nice + system + irq + softirq + steal;
  return { at, busy, total: busy + idle + iowait };
}

/**
 * The share of all CPUs (0..1) busy from `from` to `to` (epoch ms), between the last tick at or
 * before `from` and the first at or after `to`; undefined when the ticks do not cover the window.
 */
export function busyShare(ticks: readonly CpuTick[], from: number, to: number): number | undefined {
  const a = ticks.findLast((t) => t.at <= from);
  const b = ticks.find((t) => t.at >= to);
  if (a === undefined || b === undefined || b.total <= a.total) return undefined;
  return (b.busy - a.busy) / (b.total - a.total);
}

/** Ticks kept: at the default period, the last hour. */
const MAX_TICKS = 36_000;

/** Samples /proc/stat every `periodMs` until stopped; never keeps the process alive. */
export class CpuSampler {
  private readonly ticks: CpuTick[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(
    periodMs = 100,
    private readonly read: () => string = () => readFileSync('/proc/stat', 'utf8'),
    private readonly now: () => number = Date.now,
  ) {
    this.sample();
    this.timer = setInterval(() => this.sample(), periodMs);
    this.timer.unref();
  }

  private sample(): void {
    this.ticks.push(parseProcStat(this.read(), this.now()));
    if (this.ticks.length > MAX_TICKS) this.ticks.splice(0, this.ticks.length - MAX_TICKS);
  }

  /** {@link busyShare} over what was sampled; call once `to` has passed. */
  share(from: number, to: number): number | undefined {
    this.sample();
    return busyShare(this.ticks, from, to);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
