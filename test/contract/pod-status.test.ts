/**
 * One table of container statuses as the kubelet reports them, run through every reader: the
 * sidecar's observation, `prewarm status` (LANES and FAILING) and the timeline. Each must judge a
 * status as the contract does, so that a fix in one place is a fix everywhere.
 */
import { describe, expect, it } from 'vitest';
import {
  HELPER_CONTAINER,
  LABEL_POOL,
  LABEL_POOL_MEMBER,
  LABEL_PULLER,
  SIDECAR_CONTAINER,
  SIDECAR_IMAGE_CONTAINER,
} from '../../src/contract/names.js';
import {
  containerStarted,
  imageContainers,
  imagePresent,
  imageStatuses,
  pullFailure,
  startedAt,
  timeOf,
  type ContainerStatus,
  type Pod,
} from '../../src/contract/pod-status.js';
import { classifyContainer } from '../../src/reconciler/observe.js';
import { buildReport } from '../../src/status/report.js';
import { buildTimeline } from '../../src/status/timeline.js';

const T0 = Date.parse('2026-12-03T10:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
const IMAGE = 'reg/app:1';
const DIGEST = `sha256:${'a'.repeat(64)}`;

interface Case {
  readonly name: string;
  readonly status: Omit<ContainerStatus, 'name' | 'image'>;
  readonly started: boolean;
  readonly present: boolean;
  readonly failing?: string;
}

const CASES: readonly Case[] = [
  {
    name: 'running since a start',
    status: { imageID: `reg/app@${DIGEST}`, state: { running: { startedAt: at(5) } } },
    started: true,
    present: true,
  },
  { name: 'running, start not reported', status: { state: { running: {} } }, started: true, present: true },
  {
    name: 'terminated after running',
    status: { state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: at(5), finishedAt: at(6) } } },
    started: true,
    present: true,
  },
  {
    // A burst puller deleted at the deadline while its pull still failed.
    name: 'terminated without ever starting',
    status: { imageID: '', state: { terminated: { exitCode: 137, reason: 'ContainerStatusUnknown' } } },
    started: false,
    present: false,
  },
  {
    name: 'crash-looping after a start',
    status: {
      imageID: '',
      state: { waiting: { reason: 'CrashLoopBackOff' } },
      lastState: { terminated: { exitCode: 1, startedAt: at(5), finishedAt: at(6) } },
    },
    started: true,
    present: true,
  },
  { name: 'being created', status: { imageID: '', state: { waiting: { reason: 'ContainerCreating' } } }, started: false, present: false },
  {
    name: 'created, image reported',
    status: { imageID: `reg/app@${DIGEST}`, state: { waiting: { reason: 'ContainerCreating' } } },
    started: false,
    present: true,
  },
  {
    name: 'stopped after its pull',
    status: { imageID: '', state: { waiting: { reason: 'CreateContainerConfigError', message: 'secret "x" not found' } } },
    started: false,
    present: true,
  },
  {
    name: 'pull failed',
    status: { imageID: '', state: { waiting: { reason: 'ErrImagePull', message: 'manifest unknown' } } },
    started: false,
    present: false,
    failing: 'ErrImagePull',
  },
  {
    name: 'pull backing off',
    status: { imageID: '', state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image' } } },
    started: false,
    present: false,
    failing: 'ImagePullBackOff',
  },
];

const statusOf = (c: Case): ContainerStatus => ({ name: 'app', image: IMAGE, ...c.status });

/** A pool's holder (no images of its own here) and one puller carrying the container of `c`. */
function pods(c: Case): Pod[] {
  return [
    {
      metadata: { name: 'prewarm-gpu-abcde', namespace: 'ml', labels: { [LABEL_POOL]: 'gpu', [LABEL_POOL_MEMBER]: 'gpu' } },
      spec: { nodeName: 'n1' },
    },
    {
      metadata: {
        name: 'prewarm-gpu-puller-1-fghij',
        namespace: 'ml',
        labels: { [LABEL_PULLER]: 'gpu-1', [LABEL_POOL_MEMBER]: 'gpu' },
        creationTimestamp: at(1),
      },
      spec: { nodeName: 'n1', containers: [{ name: 'app', image: IMAGE }] },
      status: { containerStatuses: [statusOf(c)] },
    },
  ];
}

describe.each(CASES)('a container $name', (c) => {
  it('is judged so by the contract', () => {
    expect(containerStarted(statusOf(c))).toBe(c.started);
    expect(imagePresent(statusOf(c))).toBe(c.present);
    expect(pullFailure(statusOf(c))).toBe(c.failing);
  });

  it('is judged alike by the sidecar', () => {
    const o = classifyContainer(IMAGE, statusOf(c));
    expect(o.phase).toBe(c.present ? 'present' : c.failing !== undefined ? 'failing' : 'pending');
    expect(o.presentSince).toBe(startedAt(statusOf(c)));
  });

  it('is judged alike by prewarm status', () => {
    const report = buildReport(
      [{ metadata: { name: 'prewarm-gpu', namespace: 'ml', labels: { [LABEL_POOL]: 'gpu' } }, status: { desiredNumberScheduled: 1 } }],
      pods(c),
      [{ metadata: { name: 'n1' } }],
    );
    const n = report.pools[0]?.nodes[0];
    expect(n?.lanes).toEqual([{ lane: '1', images: 1, started: c.started ? 1 : 0 }]);
    expect(n?.failing.map((f) => f.reason)).toEqual(c.failing === undefined ? [] : [c.failing]);
  });

  it('is judged alike by the timeline', () => {
    const t = buildTimeline({
      node: { metadata: { name: 'n1' }, status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: at(0) }] } },
      pods: pods(c),
      events: [],
      daemonSets: [
        { metadata: { namespace: 'ml', name: 'prewarm-gpu', labels: { [LABEL_POOL]: 'gpu' } } },
        { metadata: { namespace: 'ml', name: 'prewarm-gpu-puller-1', labels: { [LABEL_PULLER]: 'gpu-1', [LABEL_POOL_MEMBER]: 'gpu' } } },
      ],
      now: new Date(T0 + 60_000),
    });
    const row = t.rows.find((r) => r.kind === 'image' && r.label === IMAGE);
    expect(row?.outcome).toBe(c.present ? 'present' : 'waiting');
    const running = row?.spans.find((s) => s.kind === 'running');
    const since = startedAt(statusOf(c));
    expect(running?.from).toBe(since === undefined ? undefined : (since - T0) / 1000);
  });
});

describe('timeOf', () => {
  it('reads RFC 3339 text and Date objects alike, and nothing else', () => {
    expect(timeOf(at(3))).toBe(T0 + 3000);
    expect(timeOf(new Date(T0 + 3000))).toBe(T0 + 3000);
    expect(timeOf('yesterday')).toBeUndefined();
    expect(timeOf(undefined)).toBeUndefined();
  });
});

describe('imageStatuses', () => {
  it("holds a pull pod's image containers, native sidecars first, without the sidecar or its image", () => {
    const pod: Pod = {
      spec: {
        initContainers: [
          { name: SIDECAR_CONTAINER, restartPolicy: 'Always' },
          { name: HELPER_CONTAINER },
          { name: 'i1', restartPolicy: 'Always' },
        ],
        containers: [{ name: 'c1' }, { name: SIDECAR_IMAGE_CONTAINER }, { name: 'c2' }],
      },
      status: {
        initContainerStatuses: [{ name: SIDECAR_CONTAINER }, { name: HELPER_CONTAINER }, { name: 'i1' }],
        containerStatuses: [{ name: 'c2' }, { name: SIDECAR_IMAGE_CONTAINER }],
      },
    };
    expect(imageContainers(pod.spec).map((c) => c.name)).toEqual(['i1', 'c1', 'c2']);
    // c1 has no status yet.
    expect(imageStatuses(pod).map((s) => s.name)).toEqual(['i1', 'c2']);
    expect(imageStatuses(undefined)).toEqual([]);
  });
});
