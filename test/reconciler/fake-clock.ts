/**
 * A manual {@link Clock} for the reconciler's tests: time moves only when the test says so, and
 * sleeps end exactly at their due time, in due-time order. Between two timers every promise chain
 * the previous one started runs to its end, so a test observes the loop exactly as it is after
 * each wake-up, with no real time passing and nothing to poll.
 *
 * It assumes the code under test waits only on this clock and on promises (in-memory fakes of the
 * other ports): then one macrotask turn drains every pending continuation ({@link settle}).
 */
import type { Clock } from '../../src/reconciler/ports.js';

interface Timer {
  readonly at: number;
  readonly seq: number;
  readonly fire: () => void;
}

/** The fake clock; `random` defaults to 0.5, the middle of every jitter range. */
export class FakeClock implements Clock {
  private t: number;
  private seq = 0;
  private timers: Timer[] = [];
  /** Every duration passed to {@link sleep}, in call order (including sleeps aborted early). */
  readonly sleeps: number[] = [];

  constructor(
    start: number,
    private readonly rnd: () => number = () => 0.5,
  ) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  random(): number {
    return this.rnd();
  }

  sleep(ms: number, signal: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    if (signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        this.timers = this.timers.filter((x) => x !== timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer: Timer = { at: this.t + ms, seq: this.seq++, fire: done };
      this.timers.push(timer);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** Due times (ms since epoch) of the sleeps still pending, earliest first. */
  get pending(): number[] {
    return this.ordered().map((x) => x.at);
  }

  /** Lets every continuation that is ready run: one macrotask turn drains all microtasks. */
  async settle(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /**
   * Moves time forward by `ms`, firing each timer due on the way at its own due time, in order,
   * and settling after each, so a timer armed by a woken continuation fires too if it falls due
   * within the window.
   */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    await this.settle();
    for (let next = this.ordered()[0]; next !== undefined && next.at <= end; next = this.ordered()[0]) await this.fire(next);
    this.t = end;
  }

  /** Moves time to `at` (ms since epoch); see {@link advance}. */
  async advanceTo(at: number): Promise<void> {
    await this.advance(Math.max(0, at - this.t));
  }

  /**
   * Fires timers one by one, each at its due time, until `p` settles; returns what `p` gives.
   * Fails if `p` still waits when no timer is left (it waits on something other than time) or
   * after `maxTimers` timers.
   */
  async runUntil<T>(p: Promise<T>, maxTimers = 1000): Promise<T> {
    let settled = false;
    const watched = p.finally(() => {
      settled = true;
    });
    watched.catch(() => {});
    await this.settle();
    for (let i = 0; !settled; i++) {
      const next = this.ordered()[0];
      if (next === undefined) throw new Error('runUntil: the promise waits on something other than the clock');
      if (i >= maxTimers) throw new Error(`runUntil: still waiting after ${maxTimers} timers`);
      await this.fire(next);
    }
    return watched;
  }

  private async fire(timer: Timer): Promise<void> {
    this.t = Math.max(this.t, timer.at);
    timer.fire();
    await this.settle();
  }

  private ordered(): Timer[] {
    return [...this.timers].sort((a, b) => a.at - b.at || a.seq - b.seq);
  }
}
