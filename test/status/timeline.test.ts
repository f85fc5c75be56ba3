import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/contract/pod-status.js';
import { buildTimeline, parseGoDuration, pullSecondsOf, type TimelineEvent } from '../../src/status/timeline.js';
import { renderTimelineSvg, renderTimelineText } from '../../src/status/timeline-render.js';
import {
  HELPER_CONTAINER,
  LABEL_COMPONENT,
  LABEL_POOL,
  LABEL_POOL_MEMBER,
  LABEL_PULLER,
  SIDECAR_CONTAINER,
} from '../../src/contract/names.js';
import { holderPod as clusterHolderPod, node as clusterNode } from '../fixtures/cluster.js';

const T0 = Date.parse('2026-12-03T10:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
const NODE = 'gpu-1';
const NS = 'ml';
const HOLDER = 'prewarm-gpu-0a1b2c3d';
const PULLER = `${HOLDER}-puller-1`;

const node = clusterNode(NODE, { readyAt: at(0) });

function holderPod(): Pod {
  return clusterHolderPod({
    pool: 'gpu',
    name: `${HOLDER}-abcde`,
    namespace: NS,
    node: NODE,
    labels: { [LABEL_COMPONENT]: 'image-puller', [LABEL_POOL]: 'gpu', [LABEL_POOL_MEMBER]: 'gpu' },
    createdAt: at(0.5),
    sidecarImage: 'reconciler:1',
    helperImage: 'busybox:1',
    containers: [
      { name: 'app-a', image: 'reg/app-a:1' },
      { name: 'app-b', image: 'reg/app-b:1' },
    ],
    conditions: [
      { type: 'PodScheduled', status: 'True', lastTransitionTime: at(0.5) },
      { type: 'PodReadyToStartContainers', status: 'True', lastTransitionTime: at(1.5) },
      { type: 'Initialized', status: 'True', lastTransitionTime: at(2) },
    ],
    initStatuses: [
      { name: SIDECAR_CONTAINER, image: 'reconciler:1', state: { running: { startedAt: at(1.8) } } },
      { name: HELPER_CONTAINER, image: 'busybox:1', state: { terminated: { exitCode: 0, startedAt: at(1.9), finishedAt: at(1.95) } } },
    ],
    statuses: [
      { name: 'app-a', image: 'reg/app-a:1', state: { running: { startedAt: at(7) } } },
      { name: 'app-b', image: 'reg/app-b:1', state: { running: { startedAt: at(8) } } },
    ],
  });
}

function ev(over: Partial<TimelineEvent> & { involvedObject: TimelineEvent['involvedObject'] }, t: number): TimelineEvent {
  return { source: { host: NODE }, eventTime: at(t), ...over };
}
const podEv = (pod: string, container: string, reason: string, message: string, t: number, list = 'containers') =>
  ev({ involvedObject: { kind: 'Pod', name: pod, namespace: NS, fieldPath: `spec.${list}{${container}}` }, reason, message }, t);

const events: TimelineEvent[] = [
  podEv(
    `${HOLDER}-abcde`,
    'prewarm-reconciler',
    'Pulled',
    'Successfully pulled image "reconciler:1" in 0.25s (0.25s including waiting). Image size: 10 bytes.',
    1.75,
    'initContainers',
  ),
  podEv(`${HOLDER}-abcde`, 'prewarm-helper', 'Pulled', 'Container image "busybox:1" already present on machine', 1.85, 'initContainers'),
  podEv(`${HOLDER}-abcde`, 'app-a', 'Pulling', 'Pulling image "reg/app-a:1"', 4.1),
  podEv(
    `${HOLDER}-abcde`,
    'app-a',
    'Pulled',
    'Successfully pulled image "reg/app-a:1" in 2.75s (2.75s including waiting). Image size: 10 bytes.',
    6.9,
  ),
  podEv(
    `${HOLDER}-abcde`,
    'app-b',
    'Pulled',
    'Container image "reg/app-b:1" already present on machine and can be accessed by the pod',
    7.9,
  ),
  // A puller that is gone: known from its Events only.
  ev(
    {
      involvedObject: { kind: 'Pod', name: `${PULLER}-xyz12`, namespace: NS },
      reason: 'Scheduled',
      message: `Successfully assigned ${NS}/${PULLER}-xyz12 to ${NODE}`,
      source: {},
    },
    0.6,
  ),
  podEv(`${PULLER}-xyz12`, 'app-b', 'Pulling', 'Pulling image "reg/app-b:1"', 2.2),
  podEv(
    `${PULLER}-xyz12`,
    'app-b',
    'Pulled',
    'Successfully pulled image "reg/app-b:1" in 1.2s (1.2s including waiting). Image size: 10 bytes.',
    3.4,
  ),
  podEv(`${PULLER}-xyz12`, 'app-b', 'Started', 'Started container app-b', 3.6),
  podEv(`${PULLER}-xyz12`, 'app-b', 'Killing', 'Stopping container app-b', 9.2),
  // Another node's pod and a foreign pod on this node: ignored.
  { ...podEv(`${HOLDER}-other`, 'app-a', 'Pulled', 'x', 1), source: { host: 'gpu-2' } },
  podEv('someone-else-1', 'web', 'Pulled', 'Successfully pulled image "nginx" in 1s (1s including waiting)', 1),
  // The sidecar: warm and the taint removed in one Event.
  ev(
    {
      involvedObject: { kind: 'Node', name: NODE },
      reason: 'Warm',
      message:
        'pool gpu: all 2 images present, time to warm 8s; removed gate taint prewarm.dev/warming: every pool selecting the node is warm or partial',
    },
    9,
  ),
];

const DAEMONSETS = [
  { metadata: { namespace: NS, name: HOLDER, labels: { [LABEL_POOL]: 'gpu', [LABEL_POOL_MEMBER]: 'gpu' } } },
  { metadata: { namespace: NS, name: PULLER, labels: { [LABEL_PULLER]: 'gpu-1', [LABEL_POOL_MEMBER]: 'gpu' } } },
];

describe('buildTimeline', () => {
  const t = buildTimeline({ node, pods: [holderPod()], events, daemonSets: DAEMONSETS, now: new Date(T0 + 60_000) });

  it('puts 0 s at the node Ready transition and marks warm and the removed taint from the sidecar Event', () => {
    expect(t.origin).toBe(at(0));
    expect(t.originLabel).toBe('Ready');
    expect(t.marks).toEqual([
      { at: 0, label: 'Ready' },
      { at: 9, label: 'warm gpu' },
      { at: 9, label: 'taint removed' },
    ]);
  });

  it('shows the holder phases from its conditions and each image with the kubelet pull time', () => {
    const holder = t.rows.filter((r) => r.pod === `${HOLDER}-abcde`);
    expect(holder[0]).toMatchObject({ kind: 'pod', label: 'holder' });
    expect(holder[0]?.spans).toEqual([
      { kind: 'pending', from: 0.5, to: 0.5 },
      { kind: 'sandbox', from: 0.5, to: 1.5 },
      { kind: 'init', from: 1.5, to: 2 },
      { kind: 'containers', from: 2, to: 8 },
    ]);
    const a = holder.find((r) => r.label === 'reg/app-a:1');
    expect(a).toMatchObject({ outcome: 'pulled', pullSeconds: 2.75 });
    expect(a?.spans[0]).toEqual({ kind: 'pulling', from: 4.15, to: 6.9, note: '2.75s' });
    expect(holder.find((r) => r.label === 'reg/app-b:1')).toMatchObject({ outcome: 'present' });
  });

  it('draws the native sidecar as a row of the holder, and the helper only as its init phase', () => {
    const holder = t.rows.filter((r) => r.pod === `${HOLDER}-abcde`);
    expect(holder.map((r) => r.label)).toEqual(['holder', 'reconciler:1', 'reg/app-a:1', 'reg/app-b:1']);
    const sidecar = holder[1];
    expect(sidecar).toMatchObject({ outcome: 'pulled', pullSeconds: 0.25 });
    expect(sidecar?.spans).toEqual([
      { kind: 'pulling', from: 1.5, to: 1.75, note: '0.25s' },
      { kind: 'running', from: 1.8 },
    ]);
  });

  it('rebuilds a puller that is gone from its Events, and ignores other nodes and foreign pods', () => {
    const puller = t.rows.filter((r) => r.pod === `${PULLER}-xyz12`);
    expect(puller[0]).toMatchObject({ kind: 'pod', label: 'puller 1' });
    expect(puller[0]?.spans.find((s) => s.kind === 'sandbox')).toEqual({ kind: 'sandbox', from: 0.6, to: 2.2 });
    expect(puller[1]).toMatchObject({ kind: 'image', label: 'reg/app-b:1', outcome: 'pulled', pullSeconds: 1.2 });
    expect(puller[1]?.spans).toContainEqual({ kind: 'running', from: 3.6, to: 9.2 });
    expect(t.rows.map((r) => r.pod)).not.toContain(`${HOLDER}-other`);
    expect(t.rows.map((r) => r.pod)).not.toContain('someone-else-1');
    expect(t.notes).toEqual([]);
  });

  it('leaves out the Events of an earlier pod or node of the same name', () => {
    const uid = 'holder-uid-now';
    const pod = { ...holderPod(), metadata: { ...holderPod().metadata, uid } };
    const reborn = { ...node, metadata: { name: NODE, uid: 'node-uid-now', creationTimestamp: at(-5) } };
    const gonePuller = ev(
      {
        involvedObject: { kind: 'Pod', name: `${PULLER}-old12`, namespace: NS },
        reason: 'Scheduled',
        message: `Successfully assigned ${NS}/${PULLER}-old12 to ${NODE}`,
        source: {},
      },
      -600,
    );
    const nodeEvent = (nodeUid: string | undefined, reason: string, t: number) =>
      ev(
        {
          involvedObject: { kind: 'Node', name: NODE, ...(nodeUid ? { uid: nodeUid } : {}) },
          reason,
          message: 'pool gpu: all 2 images present',
        },
        t,
      );
    const build = (extra: TimelineEvent[]) =>
      buildTimeline({ node: reborn, pods: [pod], events: [...events, ...extra], daemonSets: DAEMONSETS, now: new Date(T0 + 60_000) });
    // The holder's Events, stamped with a uid: the pod's own, or an earlier pod's of the same name.
    const stamped = (podUid: string) =>
      buildTimeline({
        node: reborn,
        pods: [pod],
        events: events.map((e) =>
          e.involvedObject.name === pod.metadata?.name ? { ...e, involvedObject: { ...e.involvedObject, uid: podUid } } : e,
        ),
        daemonSets: DAEMONSETS,
        now: new Date(T0 + 60_000),
      });
    const pulledA = (tl: ReturnType<typeof build>) =>
      tl.rows.some((r) => r.pod === pod.metadata?.name && r.label === 'reg/app-a:1' && r.spans.some((x) => x.kind === 'pulling'));
    expect(pulledA(stamped(uid))).toBe(true);
    expect(pulledA(stamped('holder-uid-before'))).toBe(false);
    // A puller known only from an Event from before the node existed: an earlier node's.
    expect(build([gonePuller]).rows.some((r) => r.pod === `${PULLER}-old12`)).toBe(false);
    expect(build([]).rows.some((r) => r.pod === `${PULLER}-xyz12`)).toBe(true);
    // Node Events: another node's uid is left out; the kubelet's, which carry the name as uid, are kept.
    expect(build([nodeEvent('node-uid-before', 'Warm', 30)]).marks.filter((m) => m.label === 'warm gpu')).toHaveLength(1);
    expect(build([nodeEvent(NODE, 'Warm', 30)]).marks.filter((m) => m.label === 'warm gpu')).toHaveLength(2);
  });

  it('says when a pod has no Events left (expired), and when the node is not Ready', () => {
    const old = buildTimeline({
      node: { metadata: { name: NODE } },
      pods: [holderPod()],
      events: [],
      daemonSets: DAEMONSETS,
      now: new Date(T0 + 2 * 3600_000),
    });
    expect(old.notes.join('\n')).toMatch(/no Events left for pod prewarm-gpu-0a1b2c3d-abcde/);
    expect(old.notes.join('\n')).toMatch(/not Ready/);
    expect(old.originLabel).toBe('first seen');
    const none = buildTimeline({ node, pods: [], events: [], daemonSets: DAEMONSETS, now: new Date(T0 + 7200_000) });
    expect(none.rows).toEqual([]);
    expect(none.notes.join('\n')).toMatch(/nothing to show .*expire/);
  });

  it('ends a pull whose Pulled Event the kubelet dropped (spam filter) at the container start, and says so', () => {
    const pod = holderPod();
    const t = buildTimeline({
      node,
      pods: [pod],
      events: [podEv(`${HOLDER}-abcde`, 'app-a', 'Pulling', 'Pulling image "reg/app-a:1"', 4)],
      daemonSets: DAEMONSETS,
      now: new Date(T0 + 60_000),
    });
    const a = t.rows.find((r) => r.pod === `${HOLDER}-abcde` && r.label === 'reg/app-a:1');
    expect(a?.outcome).toBe('pulled');
    expect(a?.spans[0]).toEqual({ kind: 'pulling', from: 4, to: 7, note: 'end not reported' });
    expect(t.notes.join('\n')).toMatch(/at most 25 Events per pod/);
  });

  it('keeps a pull that has not ended open until now', () => {
    const live = buildTimeline({
      node,
      pods: [],
      events: [podEv(`${PULLER}-xyz12`, 'app-b', 'Pulling', 'Pulling image "reg/app-b:1"', 2)],
      daemonSets: DAEMONSETS,
      now: new Date(T0 + 5000),
    });
    expect(live.rows.find((r) => r.kind === 'image')?.spans).toEqual([{ kind: 'pulling', from: 2 }]);
    expect(live.end).toBe(5);
  });
});

describe('renderers', () => {
  const t = buildTimeline({ node, pods: [holderPod()], events, daemonSets: DAEMONSETS, now: new Date(T0 + 60_000) });

  it('draws text bars scaled to time, with the marks and a legend', () => {
    const text = renderTimelineText(t, 40);
    expect(text).toMatch(/^node gpu-1: 0s = Ready/);
    expect(text).toMatch(/holder prewarm-gpu-0a1b2c3d-abcde +\|[.:+-]+/);
    expect(text).toMatch(/reg\/app-a:1 +\| +#+> *\| pulled in 2\.8s/);
    expect(text).toMatch(/\^ 9\.0s taint removed/);
    expect(text).toMatch(/legend: .*# pulling/);
  });

  it('draws an SVG with a bar per span and escapes what it prints', () => {
    const svg = renderTimelineSvg(t, 'a <b> & "c"');
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('a &lt;b&gt; &amp; &quot;c&quot;');
    expect(svg.match(/<rect [^>]*fill="#31a354"/g)?.length).toBe(3 + 1); // 3 pulls + the legend swatch
    expect(svg).toContain('taint removed 9.0s');
  });
});

describe('kubelet message parsing', () => {
  it.each([
    ['1.5s', 1.5],
    ['850ms', 0.85],
    ['1m2.5s', 62.5],
    ['1h0m3s', 3603],
    ['12µs', 12e-6],
    ['', undefined],
    ['5 s', undefined],
  ])('parseGoDuration(%j) = %j', (text, want) => {
    const got = parseGoDuration(text);
    if (want === undefined) expect(got).toBeUndefined();
    else expect(got).toBeCloseTo(want, 9);
  });

  it('reads the pull time of a Pulled message and nothing from "already present"', () => {
    expect(pullSecondsOf('Successfully pulled image "a:1" in 3.2s (3.4s including waiting). Image size: 1 bytes.')).toBe(3.2);
    expect(pullSecondsOf('Container image "a:1" already present on machine')).toBeUndefined();
  });
});
