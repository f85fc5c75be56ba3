/**
 * The sidecar's Kubernetes adapters: the pod projection keeps exactly the fields the sidecar reads, and
 * over HTTP (the loopback fake apiserver) the ports name only our own pod and node, with the patch
 * types and error codes the controller relies on.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { EVENTS_NAMESPACE, LABEL_POOL_MEMBER } from '../../src/contract/names.js';
import { KubeHttp } from '../../src/http/client.js';
import { KubeEventSink, KubeNodePort, KubePodSource, KubePoolPodSource, projectPod } from '../../src/reconciler/adapters/kube.js';
import { taintRemovalPatch } from '../../src/reconciler/patches.js';
import type { KPod } from '../../src/reconciler/kube-types.js';
import type { PodWatchEvent } from '../../src/reconciler/ports.js';
import { EventReason } from '../../src/contract/events.js';
import { FakeApiserver } from '../../harness/fake-apiserver.js';
import { IMAGES, T0, config, gate, node, pod, st } from './fixtures.js';

const running = { running: { startedAt: '2026-12-03T10:00:00Z' } };

describe('projectPod', () => {
  it('keeps what the sidecar reads and drops the rest (managedFields, container specs, conditions)', () => {
    const raw = {
      kind: 'Pod',
      apiVersion: 'v1',
      metadata: {
        name: 'pull-a',
        namespace: 'prewarm',
        uid: 'u1',
        resourceVersion: '42',
        creationTimestamp: '2026-12-03T09:59:00Z',
        labels: { app: 'prewarm' },
        annotations: { a: 'b' },
        ownerReferences: [{ kind: 'DaemonSet', name: 'prewarm-a' }],
        managedFields: [{ manager: 'kube-controller-manager', fieldsV1: { 'f:spec': {} } }],
      },
      spec: {
        nodeName: 'n1',
        serviceAccountName: 'prewarm-reconciler',
        containers: [
          {
            name: 'c0',
            image: 'redis:7',
            imagePullPolicy: 'IfNotPresent',
            command: ['/prewarm/busybox', 'sleep', 'infinity'],
            resources: { limits: { cpu: '10m' } },
          },
        ],
        initContainers: [{ name: 'helper', image: 'busybox:1.36.1-musl', restartPolicy: 'Always', volumeMounts: [] }],
      },
      status: {
        phase: 'Running',
        startTime: '2026-12-03T09:59:01Z',
        conditions: [{ type: 'Ready', status: 'True' }],
        hostIP: '10.250.0.2',
        containerStatuses: [
          {
            name: 'c0',
            image: 'docker.io/library/redis:7',
            imageID: 'docker.io/library/redis@sha256:ab',
            containerID: 'containerd://1',
            restartCount: 0,
            started: true,
            ready: true,
            state: running,
            lastState: {},
            volumeMounts: [],
          },
        ],
        initContainerStatuses: [
          {
            name: 'helper',
            image: 'busybox',
            imageID: '',
            restartCount: 1,
            state: { terminated: { exitCode: 0, reason: 'Completed' } },
            allocatedResources: {},
          },
        ],
      },
    };
    expect(projectPod(raw)).toStrictEqual({
      metadata: {
        name: 'pull-a',
        namespace: 'prewarm',
        uid: 'u1',
        resourceVersion: '42',
        creationTimestamp: '2026-12-03T09:59:00Z',
        labels: { app: 'prewarm' },
        annotations: { a: 'b' },
      },
      spec: {
        nodeName: 'n1',
        containers: [{ name: 'c0', image: 'redis:7', imagePullPolicy: 'IfNotPresent' }],
        initContainers: [{ name: 'helper', image: 'busybox:1.36.1-musl', restartPolicy: 'Always' }],
      },
      status: {
        phase: 'Running',
        startTime: '2026-12-03T09:59:01Z',
        containerStatuses: [
          {
            name: 'c0',
            image: 'docker.io/library/redis:7',
            imageID: 'docker.io/library/redis@sha256:ab',
            containerID: 'containerd://1',
            restartCount: 0,
            started: true,
            state: running,
            lastState: {},
          },
        ],
        initContainerStatuses: [
          { name: 'helper', image: 'busybox', imageID: '', restartCount: 1, state: { terminated: { exitCode: 0, reason: 'Completed' } } },
        ],
      },
    });
  });

  it('keeps a watch BOOKMARK (metadata only) and a pod without spec or status as they are', () => {
    expect(projectPod({ kind: 'Pod', metadata: { resourceVersion: '7' } })).toStrictEqual({ metadata: { resourceVersion: '7' } });
    expect(projectPod({ metadata: { name: 'p' }, spec: {}, status: {} })).toStrictEqual({ metadata: { name: 'p' }, spec: {}, status: {} });
  });

  it('turns what is not an object into an empty pod rather than throwing', () => {
    expect(projectPod(null)).toStrictEqual({ metadata: {} });
    expect(projectPod({ metadata: [], spec: { containers: 'x' } })).toStrictEqual({ metadata: {}, spec: {} });
  });
});

describe('the apiserver adapters over HTTP', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  async function serve() {
    const api = await new FakeApiserver(
      pod(IMAGES, [st.creating('c1'), st.creating('c2')]),
      node({ taints: [gate, { key: 'other', effect: 'NoSchedule' }] }),
    ).start();
    const http = new KubeHttp({ server: api.url });
    close = async () => {
      http.close();
      await api.stop();
    };
    return {
      api,
      pods: new KubePodSource(http, 'prewarm', 'pull-a-xyz'),
      poolPods: new KubePoolPodSource(http, 'prewarm', 'gpu', 'node-a', 'pull-a-xyz'),
      nodes: new KubeNodePort(http, 'node-a'),
      events: new KubeEventSink(http, config(), () => T0),
    };
  }

  it('name only our pod and node, never an unnarrowed list, with an explicit patch type per write', async () => {
    const { api, pods, nodes, events } = await serve();
    expect((await pods.list()).pod?.metadata.name).toBe('pull-a-xyz');
    const n = await nodes.patchMerge({ metadata: { labels: { 'prewarm.dev/gpu': 'warm' } } });
    expect(n.metadata.labels).toEqual({ 'prewarm.dev/gpu': 'warm' });
    const after = await nodes.patchJson(taintRemovalPatch(await nodes.get(), gate.key) ?? []);
    expect(after.spec?.taints).toEqual([{ key: 'other', effect: 'NoSchedule' }]);
    await events.emit(after, { reason: EventReason.Warm, message: 'pool gpu: warm' });
    expect(api.requests.map((r) => `${r.method} ${r.path} ${r.contentType ?? ''}`.trim())).toEqual([
      'GET /api/v1/namespaces/prewarm/pods?fieldSelector=metadata.name%3Dpull-a-xyz',
      'PATCH /api/v1/nodes/node-a application/strategic-merge-patch+json',
      'GET /api/v1/nodes/node-a',
      'PATCH /api/v1/nodes/node-a application/json-patch+json',
      `POST /api/v1/namespaces/${EVENTS_NAMESPACE}/events application/json`,
    ]);
    expect(api.events[0]).toMatchObject({
      metadata: { namespace: EVENTS_NAMESPACE },
      involvedObject: { kind: 'Node', name: 'node-a', uid: 'uid-node-a' },
      reason: EventReason.Warm,
      type: 'Normal',
      firstTimestamp: new Date(T0).toISOString(),
    });
  });

  it('a failed JSON-patch test is ApiError 422 and an outage is ApiError 503', async () => {
    const { api, nodes } = await serve();
    const stale = taintRemovalPatch(node({ taints: [{ key: 'x', effect: 'NoSchedule' }, gate] }), gate.key) ?? [];
    await expect(nodes.patchJson(stale)).rejects.toMatchObject({ name: 'ApiError', code: 422 });
    api.failNext = 1;
    await expect(nodes.get()).rejects.toMatchObject({ name: 'ApiError', code: 503 });
  });

  it('watches our pod by name, and rejects with 410 when the version expired', async () => {
    const { api, pods } = await serve();
    const got: PodWatchEvent[] = [];
    let delivered: () => void = () => {};
    const stop = new AbortController();
    const { resourceVersion: rv } = await pods.list();
    const watch = pods.watch(rv, (e) => (got.push(e), delivered()), stop.signal);
    await api.watching();
    expect(api.requests.at(-1)?.path).toBe(
      `/api/v1/namespaces/prewarm/pods?fieldSelector=metadata.name%3Dpull-a-xyz&watch=true&resourceVersion=${rv}&allowWatchBookmarks=true&timeoutSeconds=290`,
    );
    const arrived = new Promise<void>((resolve) => (delivered = resolve));
    api.setPod(pod(IMAGES, [st.running('c1', 'reg/a:1'), st.creating('c2')]));
    await arrived;
    expect(got.map((e) => [e.type, e.pod.status?.containerStatuses?.[0]?.state?.running !== undefined])).toEqual([['MODIFIED', true]]);
    api.expireWatches();
    await expect(watch).rejects.toMatchObject({ name: 'ApiError', code: 410, reason: 'Expired' });
  });

  it('lists our pod at a version the watch window holds, though the pod is older than the window', async () => {
    const { api, pods } = await serve();
    // The window moves past the pod's own version (a GET answers that one: a watch from it is 410).
    api.expireWatches();
    const listed = await pods.list();
    expect(Number(listed.resourceVersion)).toBeGreaterThan(Number(listed.pod?.metadata.resourceVersion));
    const watch = pods.watch(listed.resourceVersion, () => undefined, new AbortController().signal);
    await api.watching();
    api.endWatches();
    await expect(watch).resolves.toBeUndefined();
  });

  it('answers no pod when the list of our pod is empty', async () => {
    const { api } = await serve();
    const http = new KubeHttp({ server: api.url });
    try {
      expect((await new KubePodSource(http, 'prewarm', 'gone').list()).pod).toBeUndefined();
    } finally {
      http.close();
    }
  });

  it('lists and watches the pool members on our node only, in our namespace, by label and spec.nodeName, but our own pod', async () => {
    const { api, poolPods } = await serve();
    const member = (name: string, nodeName: string, namespace = 'prewarm'): KPod => {
      const p = pod(IMAGES, [st.creating('c1'), st.creating('c2')]);
      return {
        ...p,
        metadata: { ...p.metadata, name, namespace, labels: { [LABEL_POOL_MEMBER]: 'gpu' } },
        spec: { ...p.spec, nodeName },
      };
    };
    api.setPod(member('pull-a-xyz', 'node-a'));
    api.setPod(member('puller-1', 'node-a'));
    api.setPod(member('puller-elsewhere', 'node-b'));
    api.setPod(member('puller-other-ns', 'node-a', 'team'));
    const listed = await poolPods.list();
    expect(listed.pods.map((p) => p.metadata.name)).toEqual(['puller-1']);
    const query = 'labelSelector=prewarm.dev%2Fpool-member%3Dgpu&fieldSelector=spec.nodeName%3Dnode-a%2Cmetadata.name%21%3Dpull-a-xyz';
    expect(api.requests.at(-1)?.path).toBe(`/api/v1/namespaces/prewarm/pods?${query}`);
    const got: string[] = [];
    let delivered: () => void = () => {};
    const stop = new AbortController();
    const watch = poolPods.watch(listed.resourceVersion, (e) => (got.push(`${e.type} ${e.pod.metadata.name}`), delivered()), stop.signal);
    await api.watching();
    expect(api.requests.at(-1)?.path).toBe(
      `/api/v1/namespaces/prewarm/pods?${query}&watch=true&resourceVersion=${listed.resourceVersion}&allowWatchBookmarks=true&timeoutSeconds=290`,
    );
    const twoArrived = new Promise<void>((resolve) => (delivered = () => got.length === 2 && resolve()));
    // Our own pod's changes (every container start of the holder, the whole pod each time) come
    // only through its own watch: this one would parse each of them a second time.
    api.setPod(member('pull-a-xyz', 'node-a'));
    api.setPod(member('puller-elsewhere', 'node-b'));
    api.setPod(member('puller-1', 'node-a'), 'DELETED');
    api.setPod(member('pull-a-xyz', 'node-a'));
    api.setPod(member('puller-2', 'node-a'));
    await twoArrived;
    expect(got).toEqual(['DELETED puller-1', 'ADDED puller-2']);
    stop.abort();
    await expect(watch).rejects.toMatchObject({ name: 'ApiError' });
  });
});
