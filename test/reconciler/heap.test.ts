import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { collectAfterGrowth } from '../../src/reconciler/adapters/heap.js';

const MiB = 1 << 20;

describe('collectAfterGrowth', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  /** A heap of `size` bytes whose collection brings it back to `floor`. */
  function heap(size: number, floor: number) {
    const h = { size, gcs: 0 };
    return {
      h,
      access: {
        gc: () => {
          h.gcs++;
          h.size = floor;
        },
        size: () => h.size,
      },
    };
  }

  it('collects at the start, then once the heap has grown by the threshold, measuring growth from after the last collection', () => {
    const { h, access } = heap(6 * MiB, 6 * MiB);
    const c = collectAfterGrowth(10_000, MiB, access);
    expect(h.gcs).toBe(1);
    vi.advanceTimersByTime(10_000);
    expect(h.gcs).toBe(1);
    h.size = 7 * MiB - 1;
    vi.advanceTimersByTime(10_000);
    expect(h.gcs).toBe(1);
    h.size = 11 * MiB;
    vi.advanceTimersByTime(10_000);
    expect(h.gcs).toBe(2);
    expect(h.size).toBe(6 * MiB);
    vi.advanceTimersByTime(60_000);
    expect(h.gcs).toBe(2);
    c.stop();
  });

  it('does not collect again when the live heap itself grew: the size after a collection is the new base', () => {
    const { h, access } = heap(6 * MiB, 9 * MiB);
    const c = collectAfterGrowth(10_000, MiB, access);
    h.size = 12 * MiB;
    vi.advanceTimersByTime(10_000);
    vi.advanceTimersByTime(60_000);
    expect(h.gcs).toBe(2);
    c.stop();
  });

  it('does nothing without --expose-gc, and nothing after stop()', () => {
    const none = collectAfterGrowth(10_000, MiB, { gc: undefined, size: () => 100 * MiB });
    expect(vi.getTimerCount()).toBe(0);
    none.stop();
    const { h, access } = heap(6 * MiB, 6 * MiB);
    collectAfterGrowth(10_000, MiB, access).stop();
    h.size = 20 * MiB;
    vi.advanceTimersByTime(60_000);
    expect(h.gcs).toBe(1);
  });
});
