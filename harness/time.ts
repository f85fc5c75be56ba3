/**
 * The harness's time helpers, one set for tests and benchmarks: sleep, bounded polling, and
 * seconds for figures. Every wait is bounded; none reads a clock other than Date.now().
 */

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Polls `fn` every `intervalMs` until it returns a truthy value, and returns that value; at
 * `deadline` (a Date.now() time) it checks once more and then answers undefined. Errors from `fn`
 * propagate: a benchmark's probe that throws is a broken probe, not a slow cluster.
 */
export async function pollUntil<T>(fn: () => T | undefined | false | null | Promise<T | undefined | false | null>, deadline: number, intervalMs: number): Promise<T | undefined> {
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() >= deadline) return undefined;
    await sleep(Math.max(0, Math.min(intervalMs, deadline - Date.now())));
  }
}

/**
 * Polls `fn` until it returns a truthy value, and returns it; throws, naming `what` and the last
 * error `fn` threw, after `timeoutMs`. A throw of `fn` counts as not yet: the apiserver or a node
 * may not answer while it comes up.
 */
export async function waitFor<T>(
  what: string,
  fn: () => T | undefined | false | null | Promise<T | undefined | false | null>,
  timeoutMs = 60_000,
  intervalMs = 250,
): Promise<T> {
  let lastErr: unknown;
  const v = await pollUntil(
    async () => {
      try {
        return await fn();
      } catch (e) {
        lastErr = e;
        return undefined;
      }
    },
    Date.now() + timeoutMs,
    intervalMs,
  );
  if (v) return v;
  const detail = lastErr === undefined ? '' : `: ${lastErr instanceof Error ? lastErr.message : String(lastErr)}`;
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail}`);
}

/** Milliseconds as seconds with `digits` decimals, for printed figures; `never` for a time that did not come. */
export function secs(ms: number, digits = 1): string {
  return Number.isFinite(ms) ? (ms / 1000).toFixed(digits) : 'never';
}
