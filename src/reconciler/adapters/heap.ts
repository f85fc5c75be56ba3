/**
 * Hands the garbage of a burst of watch events back to the system: V8's memory reducer rarely runs
 * again on a small capped heap, so the warm-up burst would otherwise stay resident for the pod's life.
 */
import v8 from 'node:v8';

/** What {@link collectAfterGrowth} reads and calls; the defaults are V8's. */
export interface HeapAccess {
  /** A full, synchronous collection; `globalThis.gc`, present only under `node --expose-gc`. */
  readonly gc: (() => void) | undefined;
  /** Bytes the heap holds from the system now. */
  readonly size: () => number;
}

const V8_HEAP: HeapAccess = {
  gc: globalThis.gc ? () => globalThis.gc?.() : undefined,
  size: () => v8.getHeapStatistics().total_heap_size,
};

/**
 * One full collection now, then every `periodMs` one more if the heap has grown by `growthBytes`;
 * an idle sidecar never collects. Does nothing without `--expose-gc`.
 */
export function collectAfterGrowth(periodMs = 10_000, growthBytes = 1 << 20, heap: HeapAccess = V8_HEAP): { stop(): void } {
  const gc = heap.gc;
  if (gc === undefined) return { stop: () => undefined };
  gc();
  let after = heap.size();
  const timer = setInterval(() => {
    if (heap.size() < after + growthBytes) return;
    gc();
    after = heap.size();
  }, periodMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
