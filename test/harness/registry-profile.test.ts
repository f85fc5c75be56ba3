import { describe, expect, it } from 'vitest';
import {
  describeProfile,
  leastTransferMs,
  parseRate,
  parseRegistryProfile,
  REMOTE_DEFAULTS,
  shareLinks,
  waterFill,
} from '../../harness/cluster/registry-profile.js';

const MIB = 1 << 20;

describe('parseRegistryProfile', () => {
  it('reads the two profiles by name, remote with its default values', () => {
    expect(parseRegistryProfile('loopback')).toEqual({ name: 'loopback' });
    expect(parseRegistryProfile(' remote ')).toEqual({ name: 'remote', ...REMOTE_DEFAULTS });
  });

  it('takes settings after the name, each replacing one default', () => {
    expect(parseRegistryProfile('remote:conn=8MiB, node=1GB,rtt=0.1s,connect-rtts=1')).toEqual({
      name: 'remote',
      perConnectionBps: 8 * MIB,
      perNodeBps: 1e9,
      rttMs: 100,
      connectRtts: 1,
    });
    expect(parseRegistryProfile('remote:rtt=20ms')).toEqual({ name: 'remote', ...REMOTE_DEFAULTS, rttMs: 20 });
  });

  it.each([
    ['lan', /unknown profile "lan"; known: loopback, remote/],
    ['loopback:rtt=5ms', /loopback takes no settings/],
    ['remote:speed=5MiB', /unknown setting speed/],
    ['remote:conn', /conn: want key=value/],
    ['remote:conn=fast', /conn=fast: want a rate/],
    ['remote:node=0MiB', /node=0MiB: must be above 0/],
    ['remote:rtt=50', /rtt=50: want a duration/],
    ['remote:connect-rtts=1.5', /connect-rtts=1.5: want a whole number/],
  ])('refuses %s', (text, error) => {
    expect(() => parseRegistryProfile(text)).toThrow(error);
  });

  it('takes an upstream link shared by all nodes, absent by default', () => {
    expect(REMOTE_DEFAULTS.perUpstreamBps).toBeUndefined();
    expect(parseRegistryProfile('remote:upstream=96MiB')).toEqual({ name: 'remote', ...REMOTE_DEFAULTS, perUpstreamBps: 96 * MIB });
    expect(describeProfile(parseRegistryProfile('remote:upstream=96MiB'))).toBe(
      'remote (24 MiB/s per connection, 96 MiB/s per node, 96 MiB/s upstream shared by all nodes, RTT 50 ms, 2 RTT per new connection)',
    );
    expect(() => parseRegistryProfile('remote:upstream=0B')).toThrow(/upstream=0B: must be above 0/);
  });

  it('round-trips through its own description of the values', () => {
    expect(describeProfile(parseRegistryProfile('remote:conn=24MiB,node=96MiB,rtt=50ms'))).toBe(
      'remote (24 MiB/s per connection, 96 MiB/s per node, RTT 50 ms, 2 RTT per new connection)',
    );
  });
});

describe('parseRate', () => {
  it('reads binary and decimal units, bytes without one', () => {
    expect([parseRate('1KiB', 'x'), parseRate('2MB', 'x'), parseRate('1.5GiB', 'x'), parseRate('300', 'x')]).toEqual([
      1024,
      2e6,
      1.5 * 2 ** 30,
      300,
    ]);
  });
});

describe('waterFill: one tick of a node link shared by its connections', () => {
  it('gives every connection what it wants when the link has room', () => {
    expect(waterFill(100, [10, 20, 30])).toEqual([10, 20, 30]);
  });

  it('shares a full link equally', () => {
    expect(waterFill(90, [50, 50, 50])).toEqual([30, 30, 30]);
  });

  it('hands what a connection cannot use to the others (max-min fair), never above the total', () => {
    const g = waterFill(100, [70, 10, 70]);
    expect(g).toEqual([45, 10, 45]);
    expect(g.reduce((a, b) => a + b, 0)).toBe(100);
  });

  it('gives nothing to a connection that wants nothing, and nothing from an empty link', () => {
    expect(waterFill(10, [0, 5])).toEqual([0, 5]);
    expect(waterFill(0, [5, 5])).toEqual([0, 0]);
    expect(waterFill(10, [])).toEqual([]);
  });

  it('over many ticks, 4 streams at 1 MiB/s each through a 2 MiB/s node move 8 MiB in 4 s', () => {
    const perConnTick = MIB / 1000;
    const perNodeTick = (2 * MIB) / 1000;
    const left = [2, 2, 2, 2].map((m) => m * MIB);
    let ms = 0;
    while (left.some((b) => b > 1e-6)) {
      const g = waterFill(
        perNodeTick,
        left.map((b) => Math.min(b, perConnTick)),
      );
      g.forEach((x, i) => (left[i] = (left[i] as number) - x));
      ms++;
    }
    expect(ms).toBe(4000);
  });
});

describe('shareLinks: one tick of the node links and the upstream link they share', () => {
  it('without an upstream cap, is each node on its own', () => {
    const wants = [
      [50, 50, 50],
      [10, 20],
    ];
    expect(shareLinks(90, Number.POSITIVE_INFINITY, wants)).toEqual([waterFill(90, [50, 50, 50]), [10, 20]]);
  });

  it('shares the upstream equally among the nodes that want it, then each node among its connections', () => {
    expect(shareLinks(100, 100, [[60, 60], [100], [20]])).toEqual([[20, 20], [40], [20]]);
  });

  it('never gives a node more than its own link, nor all nodes more than the upstream', () => {
    const wants = [[30, 30, 30, 30], [100], [5, 5], []];
    for (const [node, upstream] of [
      [50, 70],
      [100, 1000],
      [10, 25],
    ] as const) {
      const g = shareLinks(node, upstream, wants);
      const perNode = g.map((x) => x.reduce((a, b) => a + b, 0));
      for (const t of perNode) expect(t).toBeLessThanOrEqual(node + 1e-9);
      expect(perNode.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(upstream + 1e-9);
      g.forEach((x, n) => x.forEach((b, i) => expect(b).toBeLessThanOrEqual((wants[n] as number[])[i] as number)));
    }
  });

  it('over many ticks, 4 nodes of 128 MiB through a 96 MiB/s upstream take 512/96 s', () => {
    const perConnTick = (24 * MIB) / 1000;
    const left = [0, 1, 2, 3].map(() => [32, 32, 32, 32].map((m) => m * MIB));
    let ms = 0;
    while (left.some((n) => n.some((b) => b > 1e-3))) {
      const g = shareLinks(
        (96 * MIB) / 1000,
        (96 * MIB) / 1000,
        left.map((n) => n.map((b) => Math.min(b, perConnTick))),
      );
      g.forEach((x, n) => x.forEach((b, i) => ((left[n] as number[])[i] = ((left[n] as number[])[i] as number) - b)));
      ms++;
    }
    expect(ms).toBe(Math.ceil((4 * 128 * 1000) / 96));
  });
});

describe('leastTransferMs', () => {
  it('is the slowest stream at its cap, or all bytes through the node link', () => {
    const p = { ...REMOTE_DEFAULTS, perConnectionBps: MIB, perNodeBps: 4 * MIB };
    expect(leastTransferMs(p, [3 * MIB, MIB])).toBe(3000);
    expect(leastTransferMs(p, [2 * MIB, 2 * MIB, 2 * MIB, 2 * MIB, 2 * MIB])).toBe(2500);
    expect(leastTransferMs(p, [])).toBe(0);
  });
});
