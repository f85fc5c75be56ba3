import { describe, expect, it } from 'vitest';
import { busyShare, CpuSampler, parseProcStat, type CpuTick } from '../../harness/cpu-load.js';

const stat = (user: number, system: number, idle: number, iowait = 0) =>
  `cpu  ${user} 0 ${system} ${idle} ${iowait} 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 1 2 3\n`;

describe('parseProcStat', () => {
  it('counts user, system, irq and steal as busy, idle and iowait only in the total', () => {
    expect(parseProcStat('cpu  10 1 5 100 7 2 3 4 9 9\n', 42)).toEqual({ at: 42, busy: 25, total: 132 });
  });

  it('fails on a file without the aggregate line', () => {
    expect(() => parseProcStat('cpu0 1 2 3 4\n', 0)).toThrow(/no aggregate cpu line/);
  });
});

describe('busyShare', () => {
  const ticks: CpuTick[] = [
    { at: 0, busy: 0, total: 0 },
    { at: 100, busy: 10, total: 20 },
    { at: 200, busy: 30, total: 40 },
    { at: 300, busy: 31, total: 60 },
  ];

  it('takes the ticks around the window', () => {
    expect(busyShare(ticks, 100, 200)).toBe(1);
    expect(busyShare(ticks, 150, 250)).toBeCloseTo(21 / 40);
    expect(busyShare(ticks, 0, 300)).toBeCloseTo(31 / 60);
  });

  it('is undefined for a window the ticks do not cover', () => {
    expect(busyShare(ticks, -1, 100)).toBeUndefined();
    expect(busyShare(ticks, 200, 301)).toBeUndefined();
    expect(busyShare([{ at: 0, busy: 5, total: 5 }], 0, 0)).toBeUndefined();
  });
});

describe('CpuSampler', () => {
  it('reports the share between two reads of the file it is given', () => {
    const reads = [stat(0, 0, 0), stat(30, 10, 60)];
    const clock = [1000, 2000];
    const sampler = new CpuSampler(
      60_000,
      () => reads.shift() ?? stat(30, 10, 60),
      () => clock.shift() ?? 3000,
    );
    try {
      expect(sampler.share(1000, 2000)).toBeCloseTo(0.4);
    } finally {
      sampler.stop();
    }
  });
});
