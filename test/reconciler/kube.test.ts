/** The pod projection of the sidecar's Kubernetes adapter: it keeps exactly the fields KPod declares. */
import { describe, expect, it } from 'vitest';
import { podOf } from '../../src/reconciler/adapters/kube.js';

const running = { running: { startedAt: '2026-12-03T10:00:00Z' } };

describe('podOf', () => {
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
        containers: [{ name: 'c0', image: 'redis:7', imagePullPolicy: 'IfNotPresent', command: ['/prewarm/busybox', 'sleep', 'infinity'], resources: { limits: { cpu: '10m' } } }],
        initContainers: [{ name: 'helper', image: 'busybox:1.36.1-musl', restartPolicy: 'Always', volumeMounts: [] }],
      },
      status: {
        phase: 'Running',
        startTime: '2026-12-03T09:59:01Z',
        conditions: [{ type: 'Ready', status: 'True' }],
        hostIP: '10.250.0.2',
        containerStatuses: [{ name: 'c0', image: 'docker.io/library/redis:7', imageID: 'docker.io/library/redis@sha256:ab', containerID: 'containerd://1', restartCount: 0, started: true, ready: true, state: running, lastState: {}, volumeMounts: [] }],
        initContainerStatuses: [{ name: 'helper', image: 'busybox', imageID: '', restartCount: 1, state: { terminated: { exitCode: 0, reason: 'Completed' } }, allocatedResources: {} }],
      },
    };
    expect(podOf(raw)).toStrictEqual({
      metadata: { name: 'pull-a', namespace: 'prewarm', uid: 'u1', resourceVersion: '42', creationTimestamp: '2026-12-03T09:59:00Z', labels: { app: 'prewarm' }, annotations: { a: 'b' } },
      spec: {
        nodeName: 'n1',
        containers: [{ name: 'c0', image: 'redis:7', imagePullPolicy: 'IfNotPresent' }],
        initContainers: [{ name: 'helper', image: 'busybox:1.36.1-musl', restartPolicy: 'Always' }],
      },
      status: {
        phase: 'Running',
        startTime: '2026-12-03T09:59:01Z',
        containerStatuses: [{ name: 'c0', image: 'docker.io/library/redis:7', imageID: 'docker.io/library/redis@sha256:ab', containerID: 'containerd://1', restartCount: 0, started: true, state: running, lastState: {} }],
        initContainerStatuses: [{ name: 'helper', image: 'busybox', imageID: '', restartCount: 1, state: { terminated: { exitCode: 0, reason: 'Completed' } } }],
      },
    });
  });

  it('keeps a watch BOOKMARK (metadata only) and a pod without spec or status as they are', () => {
    expect(podOf({ kind: 'Pod', metadata: { resourceVersion: '7' } })).toStrictEqual({ metadata: { resourceVersion: '7' } });
    expect(podOf({ metadata: { name: 'p' }, spec: {}, status: {} })).toStrictEqual({ metadata: { name: 'p' }, spec: {}, status: {} });
  });

  it('turns what is not an object into an empty pod rather than throwing', () => {
    expect(podOf(null)).toStrictEqual({ metadata: {} });
    expect(podOf({ metadata: [], spec: { containers: 'x' } })).toStrictEqual({ metadata: {}, spec: {} });
  });
});
