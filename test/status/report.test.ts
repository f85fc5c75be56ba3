import { describe, expect, it } from 'vitest';
import { watch } from '../../src/cli/commands/status.js';
import { SIDECAR_IMAGE_CONTAINER } from '../../src/contract/names.js';
import type { Pod } from '../../src/contract/pod-status.js';
import { holderPod, node as clusterNode } from '../fixtures/cluster.js';
import { buildReport, renderTable, type ObservedDaemonSet, type ObservedNode, type StatusReport } from '../../src/status/report.js';

const ds = (pool: string, desired: number): ObservedDaemonSet => ({
  metadata: { name: `prewarm-${pool}`, namespace: 'ml', labels: { 'prewarm.dev/pool': pool } },
  status: { desiredNumberScheduled: desired },
});
const pod = (pool: string, node: string, waiting?: { image: string; reason: string; message?: string }): Pod =>
  holderPod({
    pool,
    node,
    namespace: 'ml',
    sidecar: false,
    helper: false,
    containers: waiting === undefined ? [] : [{ name: 'c', image: waiting.image }],
    statuses:
      waiting === undefined
        ? []
        : [
            {
              name: 'c',
              image: waiting.image,
              state: { waiting: { reason: waiting.reason, ...(waiting.message ? { message: waiting.message } : {}) } },
            },
          ],
  });
const node = (name: string, labels: Record<string, string> = {}, annotations: Record<string, string> = {}): ObservedNode =>
  clusterNode(name, { labels, annotations });
const annotation = (a: object) => JSON.stringify({ v: 1, pod: 'p', images: 2, ...a });

describe('buildReport', () => {
  it('counts warm, partial and cold nodes per pool, including nodes with no pod yet', () => {
    const report = buildReport(
      [ds('gpu', 4)],
      [pod('gpu', 'n1'), pod('gpu', 'n2'), pod('gpu', 'n3', { image: 'bad:1', reason: 'ErrImagePull', message: 'not found' })],
      [
        node('n1', { 'prewarm.dev/gpu': 'warm' }, { 'status.prewarm.dev/gpu': annotation({ state: 'warm', present: 2, ttwSeconds: 42 }) }),
        node(
          'n2',
          { 'prewarm.dev/gpu': 'partial' },
          {
            'status.prewarm.dev/gpu': annotation({ state: 'partial', present: 1, failing: [{ image: 'x:1', reason: 'ImagePullBackOff' }] }),
          },
        ),
        node('n3'),
      ],
    );
    expect(report.allWarm).toBe(false);
    expect(report.pools[0]).toMatchObject({ pool: 'gpu', desired: 4, warm: 1, partial: 1, cold: 2 });
    expect(report.pools[0]?.nodes).toEqual([
      { node: 'n1', state: 'warm', images: 2, present: 2, timeToWarmSeconds: 42, failing: [] },
      { node: 'n2', state: 'partial', images: 2, present: 1, failing: [{ image: 'x:1', reason: 'ImagePullBackOff' }] },
      { node: 'n3', state: 'cold', images: 1, failing: [{ image: 'bad:1', reason: 'ErrImagePull', message: 'not found' }] },
    ]);
  });

  it('is all warm only when every desired node of every pool is warm', () => {
    const warm = node('n1', { 'prewarm.dev/a': 'warm', 'prewarm.dev/b': 'warm' });
    expect(buildReport([ds('a', 1), ds('b', 1)], [pod('a', 'n1'), pod('b', 'n1')], [warm]).allWarm).toBe(true);
    expect(buildReport([ds('a', 2)], [pod('a', 'n1')], [warm]).allWarm).toBe(false);
  });

  it('renders a pool table, and node rows for what needs attention (all of them with wide)', () => {
    const report = buildReport(
      [ds('gpu', 2)],
      [pod('gpu', 'n1'), pod('gpu', 'n2')],
      [node('n1', { 'prewarm.dev/gpu': 'warm' }), node('n2')],
    );
    const narrow = renderTable(report, false);
    expect(narrow).toContain('NAMESPACE   POOL   DESIRED   WARM   PARTIAL   COLD');
    expect(narrow).toContain('n2');
    expect(narrow).not.toContain('n1');
    expect(renderTable(report, true)).toContain('n1');
  });

  /**
   * A burst puller pod of `pool` lane `lane` on `node`, with one container per status, and (an
   * early puller's) container of the sidecar's image, which caches no image of the pool.
   */
  const puller = (
    pool: string,
    lane: number,
    nodeName: string,
    states: ('running' | 'pulling' | { reason: string; image: string })[],
  ): Pod => {
    const containerStatuses = [
      ...states.map((s, i) =>
        s === 'running'
          ? { name: `c${i}`, image: `img${i}:1`, state: { running: {} } }
          : s === 'pulling'
            ? { name: `c${i}`, image: `img${i}:1`, state: { waiting: { reason: 'ContainerCreating' } } }
            : { name: `c${i}`, image: s.image, state: { waiting: { reason: s.reason } } },
      ),
      { name: SIDECAR_IMAGE_CONTAINER, image: 'sidecar:1', state: { running: {} } },
    ];
    return {
      metadata: { namespace: 'ml', labels: { 'prewarm.dev/puller': `${pool}-${lane}`, 'prewarm.dev/pool-member': pool } },
      spec: { nodeName, containers: containerStatuses.map(({ name, image }) => ({ name, image })) },
      status: { containerStatuses },
    };
  };

  it("shows the lanes of a warming node and folds their failures into the pool's node row", () => {
    const report = buildReport(
      [
        ds('gpu', 2),
        {
          metadata: {
            name: 'prewarm-gpu-puller-1',
            namespace: 'ml',
            labels: { 'prewarm.dev/puller': 'gpu-1', 'prewarm.dev/pool-member': 'gpu' },
          },
          status: { desiredNumberScheduled: 1 },
        },
      ],
      [
        pod('gpu', 'n1', { image: 'bad:1', reason: 'ErrImagePull' }),
        puller('gpu', 2, 'n1', ['running', { reason: 'ImagePullBackOff', image: 'worse:1' }]),
        puller('gpu', 1, 'n1', ['running', 'pulling', { reason: 'ErrImagePull', image: 'bad:1' }]),
        // An early pool's lane 0 pulls only the sidecar's image: no lane of the pool's images.
        puller('gpu', 0, 'n1', []),
        pod('gpu', 'n2'),
        // Another pool's puller on n1 is not gpu's.
        puller('cpu', 1, 'n1', ['pulling']),
      ],
      [node('n1'), node('n2', { 'prewarm.dev/gpu': 'warm' })],
    );
    // The puller DaemonSet is no pool of its own.
    expect(report.pools.map((p) => p.pool)).toEqual(['gpu']);
    expect(report.pools[0]).toMatchObject({ desired: 2, warm: 1, cold: 1 });
    expect(report.pools[0]?.nodes[0]).toEqual({
      node: 'n1',
      state: 'cold',
      images: 1,
      failing: [
        { image: 'bad:1', reason: 'ErrImagePull' },
        { image: 'worse:1', reason: 'ImagePullBackOff' },
      ],
      lanes: [
        { lane: '1', images: 3, started: 1 },
        { lane: '2', images: 2, started: 1 },
      ],
    });
    expect(report.pools[0]?.nodes[1]).not.toHaveProperty('lanes');
    expect(renderTable(report, false)).toMatch(/n1 +cold +1 +- +1:1\/3 2:1\/2 +bad:1 \(ErrImagePull\), worse:1 \(ImagePullBackOff\)/);
  });
});

describe('status --watch', () => {
  const cold: StatusReport = {
    pools: [{ pool: 'p', namespace: 'ml', daemonSet: 'd', desired: 1, warm: 0, partial: 0, cold: 1, nodes: [] }],
    allWarm: false,
  };
  const warm: StatusReport = { pools: [{ ...cold.pools[0]!, warm: 1, cold: 0 }], allWarm: true };

  it('prints plain lines only on change when stdout is not a TTY, and stops once warm', async () => {
    const reads = [cold, cold, cold, warm];
    let out = '';
    const result = await watch(
      { read: () => Promise.resolve(reads.shift() ?? warm) },
      { output: 'table', intervalMs: 10 },
      undefined,
      { stdout: (t) => (out += t), stderr: () => undefined },
      false,
    );
    expect(result.allWarm).toBe(true);
    expect(out.match(/NAMESPACE/g)).toHaveLength(2);
    expect(out).not.toContain('\u001b[');
  });

  it('redraws in place on a TTY, and gives up at the timeout', async () => {
    let out = '';
    const result = await watch(
      { read: () => Promise.resolve(cold) },
      { output: 'table', intervalMs: 10 },
      50,
      { stdout: (t) => (out += t), stderr: () => undefined },
      true,
    );
    expect(result.allWarm).toBe(false);
    expect(out.startsWith('\u001b[H\u001b[2J')).toBe(true);
  });

  it('never sleeps past the timeout: an interval longer than the timeout ends at the timeout', async () => {
    let reads = 0;
    const started = Date.now();
    await watch(
      { read: () => Promise.resolve((reads++, cold)) },
      { output: 'table', intervalMs: 60_000 },
      50,
      { stdout: () => undefined, stderr: () => undefined },
      false,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(reads).toBe(2);
  });
});
