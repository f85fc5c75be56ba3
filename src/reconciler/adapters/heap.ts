/**
 * Hands the garbage of a burst of watch events back to the system.
 *
 * V8's memory reducer shrinks the heap once, a few seconds after the first full collection, and
 * after that only once committed memory has grown by 10 MB, which a heap capped at 16 MiB never
 * does. The sidecar starts before the pool's images are pulled, so that one run is spent on the
 * start-up heap, and the warm-up burst that follows (one watch event per container start, each a
 * whole pod with its managedFields, several per second) leaves several MiB of heap resident for the
 * life of the pod. A full collection once the heap has grown returns it.
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
 * One full collection now, so growth is measured from a settled heap rather than from start-up's
 * garbage; then, every `periodMs`, one more if the heap has grown by `growthBytes` since the last.
 * An idle sidecar's heap does not grow, so an idle sidecar does not collect. Without `--expose-gc`
 * this does nothing. The timer never keeps the process alive; `stop()` ends it.
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
