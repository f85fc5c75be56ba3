import { describe, expect, it } from 'vitest';
import { pollUntil, secs, sleep, waitFor } from '../../harness/time.js';

describe('pollUntil', () => {
  it('returns the first truthy value, after as many polls as it took', async () => {
    let n = 0;
    const v = await pollUntil(() => (++n >= 3 ? `poll ${n}` : undefined), Date.now() + 5_000, 1);
    expect([v, n]).toEqual(['poll 3', 3]);
  });

  it('answers undefined at the deadline, having checked once more there', async () => {
    let n = 0;
    const t0 = Date.now();
    const v = await pollUntil(() => (n++, false), t0 + 50, 10);
    expect(v).toBeUndefined();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(50);
    expect(n).toBeGreaterThanOrEqual(2);
  });

  it('lets an error of the probe through', async () => {
    await expect(pollUntil(() => Promise.reject(new Error('broken probe')), Date.now() + 1_000, 1)).rejects.toThrow('broken probe');
  });
});

describe('waitFor', () => {
  it('treats a throw as not yet and returns the value that follows', async () => {
    let n = 0;
    const v = await waitFor('three polls', () => {
      if (++n < 3) throw new Error('not up');
      return n;
    }, 5_000, 1);
    expect(v).toBe(3);
  });

  it('names what it waited for and the last error when time runs out', async () => {
    await expect(waitFor('the apiserver', () => Promise.reject(new Error('connection refused')), 30, 5)).rejects.toThrow(
      'timed out after 30 ms waiting for the apiserver: connection refused',
    );
    await expect(waitFor('nothing', () => false, 20, 5)).rejects.toThrow(/^timed out after 20 ms waiting for nothing$/);
  });
});

describe('sleep', () => {
  it('waits at least the time asked', async () => {
    const t0 = Date.now();
    await sleep(20);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(19);
  });
});

describe('secs', () => {
  it.each([
    [1234, undefined, '1.2'],
    [1234, 2, '1.23'],
    [0, undefined, '0.0'],
    [Number.NaN, undefined, 'never'],
    [Number.POSITIVE_INFINITY, 2, 'never'],
  ])('%s ms with %s decimals is %s', (ms, digits, want) => {
    expect(secs(ms, digits)).toBe(want);
  });
});
