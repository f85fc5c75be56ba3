import { Testing } from 'cdk8s';
import { describe, expect, it } from 'vitest';
import type { Pool } from '../../src/imagecache/model.js';
import { PullDaemonSet, type PullDaemonSetProps } from '../../src/synth/pull-daemonset.js';
import { only, poolOf } from '../helpers.js';
import { STARTUP_PATH } from '../../src/contract/names.js';

function synth(pool: Pool, withSidecar = false, extra: Partial<PullDaemonSetProps> = {}) {
  const chart = Testing.chart();
  new PullDaemonSet(chart, 'pool', {
    pool,
    ...(withSidecar ? { reconciler: { image: 'ghcr.io/prewarm-dev/reconciler:0.1.0' } } : {}),
    ...extra,
  });
  return only(Testing.synth(chart), 'DaemonSet');
}

const defaults = poolOf('  cacheSpec:\n  - images: [python:3.12-slim, redis:7]\n');
const custom = poolOf(
  [
    '  cacheSpec:',
    '  - pool: gpu',
    '    images: [nvcr.io/nvidia/pytorch:24.05-py3, "redis@sha256:' + 'a'.repeat(64) + '"]',
    '    nodeSelector: {node.kubernetes.io/instance-type: g5.2xlarge}',
    '    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}, {key: spot, operator: Equal, value: "true", effect: NoExecute, tolerationSeconds: 30}]',
    '  imagePullSecrets: [{name: ngc}, {name: mirror}]',
    '  priorityClassName: warm-images',
    '  rollout: {maxUnavailable: 3}',
    '  gate: {taintKey: example.com/cold, deadline: 15m}',
    '  refresh: {interval: 6h}',
    '',
  ].join('\n'),
);

describe('PullDaemonSet', () => {
  it('defaults', () => {
    expect(synth(defaults)).toMatchSnapshot();
  });

  it('custom', () => {
    expect(synth(custom, true, { helperImage: 'ghcr.io/me/busybox:1.36' })).toMatchSnapshot();
  });

  it('runs one sleeping container per image, each with the copied static busybox', () => {
    const ds = synth(defaults);
    const spec = ds.spec.template.spec;
    expect(spec.initContainers).toHaveLength(1);
    expect(spec.initContainers[0].command).toEqual(['/bin/busybox', 'cp', '/bin/busybox', '/prewarm/busybox']);
    expect(spec.containers.map((c: { image: string }) => c.image)).toEqual([
      'docker.io/library/python:3.12-slim',
      'docker.io/library/redis:7',
    ]);
    for (const c of spec.containers) {
      expect(c.command).toEqual(['/prewarm/busybox', 'sleep', '2147483647']);
      expect(c.imagePullPolicy).toBe('IfNotPresent');
    }
    expect(new Set(spec.containers.map((c: { name: string }) => c.name)).size).toBe(spec.containers.length);
  });

  it('starts the sidecar first, as a native sidecar ahead of the helper; without it, the helper alone', () => {
    const spec = synth(custom, true).spec.template.spec;
    expect(spec.initContainers.map((c: { name: string; restartPolicy?: string }) => [c.name, c.restartPolicy])).toEqual([
      ['prewarm-reconciler', 'Always'],
      ['prewarm-helper', undefined],
    ]);
    expect(spec.initContainers[0].ports).toEqual([{ containerPort: 9464, name: 'metrics' }]);
    expect(spec.containers.map((c: { name: string }) => c.name)).not.toContain('prewarm-reconciler');
    expect(synth(custom).spec.template.spec.initContainers.map((c: { name: string }) => c.name)).toEqual(['prewarm-helper']);
  });

  it('meets Pod Security restricted in every container', () => {
    const spec = synth(custom, true).spec.template.spec;
    expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } });
    expect(spec.hostNetwork).toBe(false);
    for (const c of [...spec.initContainers, ...spec.containers]) {
      expect(c.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        runAsUser: 65532,
      });
      expect(c.securityContext.capabilities.add).toBeUndefined();
    }
    for (const v of spec.volumes) expect(Object.keys(v).filter((k) => k !== 'name')[0]).toMatch(/^(emptyDir|configMap|projected|secret)$/);
  });

  it('sets small explicit resources, never the cdk8s-plus defaults', () => {
    const spec = synth(custom, true).spec.template.spec;
    for (const c of [...spec.initContainers, ...spec.containers]) {
      expect(c.resources.requests.cpu).not.toBe('1000m');
      expect(c.resources.requests.memory).not.toBe('512Mi');
      expect(c.resources.limits).toBeDefined();
    }
    expect(spec.containers[1].resources).toEqual({ requests: { cpu: '1m', memory: '4Mi' }, limits: { cpu: '1000m', memory: '16Mi' } });
  });

  it('selects on the stable pool label only, never on construct paths', () => {
    const ds = synth(custom);
    expect(ds.metadata.name).toBe('prewarm-gpu');
    expect(ds.spec.selector).toEqual({ matchLabels: { 'prewarm.dev/pool': 'gpu' } });
    expect(JSON.stringify(ds)).not.toContain('cdk8s.io/metadata.addr');
  });

  it('carries every pull secret, the priority class and the rollout strategy', () => {
    const ds = synth(custom);
    expect(ds.spec.template.spec.imagePullSecrets).toEqual([{ name: 'mirror' }, { name: 'ngc' }]);
    expect(ds.spec.template.spec.priorityClassName).toBe('warm-images');
    expect(ds.spec.updateStrategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 3 } });
    expect(synth(defaults).spec.updateStrategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '10%' } });
  });

  it('tolerates the pool tolerations and the gating taint, and requires the selector labels', () => {
    const spec = synth(custom).spec.template.spec;
    expect(spec.tolerations).toEqual([
      { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'spot', operator: 'Equal', value: 'true', effect: 'NoExecute', tolerationSeconds: 30 },
      { key: 'example.com/cold', operator: 'Exists' },
    ]);
    expect(spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms).toEqual([
      { matchExpressions: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['g5.2xlarge'] }] },
    ]);
  });

  it('gives no container an API token unless it is the sidecar', () => {
    const without = synth(defaults).spec.template.spec;
    expect(without.automountServiceAccountToken).toBe(false);
    expect(without.volumes.map((v: { name: string }) => v.name)).toEqual(['prewarm-bin']);
    const spec = synth(custom, true).spec.template.spec;
    expect(spec.automountServiceAccountToken).toBe(false);
    const withToken = [...spec.initContainers, ...spec.containers].filter((c: { volumeMounts: { name: string }[] }) =>
      c.volumeMounts.some((m) => m.name === 'prewarm-token'),
    );
    expect(withToken.map((c: { name: string }) => c.name)).toEqual(['prewarm-reconciler']);
  });

  it('configures the sidecar from the pool', () => {
    const sidecar = synth(custom, true).spec.template.spec.initContainers[0];
    const env = Object.fromEntries(sidecar.env.map((e: { name: string; value?: string }) => [e.name, e.value ?? 'fieldRef']));
    expect(env).toEqual({
      PREWARM_NODE_NAME: 'fieldRef',
      PREWARM_POD_NAME: 'fieldRef',
      PREWARM_POD_NAMESPACE: 'fieldRef',
      PREWARM_POD_IP: 'fieldRef',
      PREWARM_POOL: 'gpu',
      PREWARM_NODE_LABEL_KEY: 'prewarm.dev/gpu',
      PREWARM_NODE_ANNOTATION_KEY: 'status.prewarm.dev/gpu',
      PREWARM_GATE_TAINT_KEY: 'example.com/cold',
      PREWARM_DEADLINE_SECONDS: '900',
      PREWARM_REFRESH_SECONDS: '21600',
      PREWARM_METRICS_PORT: '9464',
    });
  });

  it("holds the holder's image containers behind the sidecar's startup probe, for the pool's deadline and a slack", () => {
    const sidecar = synth(custom, true).spec.template.spec.initContainers[0];
    expect(sidecar.startupProbe).toEqual({
      httpGet: { path: STARTUP_PATH, port: 'metrics' },
      periodSeconds: 1,
      timeoutSeconds: 1,
      failureThreshold: 900 + 30,
    });
    expect(synth(custom).spec.template.spec.initContainers.every((c: { startupProbe?: unknown }) => c.startupProbe === undefined)).toBe(
      true,
    );
  });

  it('prepares refreshing pools: Always for tags, pull secrets mounted into the sidecar alone, no shared PID namespace', () => {
    const spec = synth(custom, true).spec.template.spec;
    // An image container that shared the sidecar's PID namespace and uid could read its token and
    // secrets through /proc: refresh sets images through the API instead (src/reconciler/refresh.ts).
    expect(spec.shareProcessNamespace).toBeUndefined();
    const images = spec.containers;
    expect(
      images.map((c: { image: string; imagePullPolicy: string }) => [c.image.includes('@') ? 'digest' : 'tag', c.imagePullPolicy]),
    ).toEqual([
      ['digest', 'IfNotPresent'],
      ['tag', 'Always'],
    ]);
    for (const c of images) {
      expect(c.env).toBeUndefined();
      expect(c.volumeMounts.map((m: { mountPath: string }) => m.mountPath)).toEqual(['/prewarm']);
    }
    const sidecar = spec.initContainers[0];
    expect(sidecar.name).toBe('prewarm-reconciler');
    expect(sidecar.volumeMounts.map((m: { mountPath: string }) => m.mountPath)).toEqual([
      '/etc/prewarm',
      '/etc/prewarm-pull-secrets/mirror',
      '/etc/prewarm-pull-secrets/ngc',
      '/var/run/secrets/kubernetes.io/serviceaccount',
    ]);
    const secretVolumes = spec.volumes.filter((v: { secret?: unknown }) => v.secret !== undefined);
    expect(
      secretVolumes.map((v: { secret: { secretName: string; optional: boolean } }) => [v.secret.secretName, v.secret.optional]),
    ).toEqual([
      ['mirror', true],
      ['ngc', true],
    ]);
  });

  it('mounts no pull secret and refreshes nothing where every image is a digest, refresh on or not', () => {
    const digests = poolOf(
      `  cacheSpec:\n  - images: ["redis@sha256:${'a'.repeat(64)}"]\n  imagePullSecrets: [{name: ngc}]\n  refresh: {interval: 6h}\n`,
    );
    const spec = synth(digests, true).spec.template.spec;
    expect(spec.volumes.filter((v: { secret?: unknown }) => v.secret !== undefined)).toEqual([]);
    const sidecar = spec.initContainers[0];
    expect(sidecar.env).toContainEqual({ name: 'PREWARM_REFRESH_SECONDS', value: '0' });
    expect(spec.imagePullSecrets).toEqual([{ name: 'ngc' }]);
  });

  it('leaves pools that do not refresh on IfNotPresent, with no shared PID namespace', () => {
    const spec = synth(defaults, true).spec.template.spec;
    expect(spec.shareProcessNamespace).toBeUndefined();
    for (const c of spec.containers) {
      expect(c.imagePullPolicy).toBe('IfNotPresent');
      expect(c.env).toBeUndefined();
    }
  });

  it('refuses a pool without images', () => {
    const empty: Pool = { ...defaults, images: [] };
    expect(() => synth(empty)).toThrow(`pool ml/${defaults.id} has no images`);
  });
});

describe('PullDaemonSet as a burst puller', () => {
  function puller(pool: Pool, key = '1', images = pool.images.slice(0, 1)) {
    const chart = Testing.chart();
    new PullDaemonSet(chart, 'puller', { pool, reconciler: { image: 'ghcr.io/prewarm-dev/reconciler:0.1.0' }, puller: { key, images } });
    return only(Testing.synth(chart), 'DaemonSet');
  }

  it('defaults', () => {
    expect(puller(defaults)).toMatchSnapshot();
  });

  it('custom', () => {
    expect(puller(custom, '3')).toMatchSnapshot();
  });

  it('holds only its lane, without the sidecar or a token, and leaves quickly', () => {
    const ds = puller(custom, '2', custom.images.slice(1));
    const spec = ds.spec.template.spec;
    expect(ds.metadata.name).toBe('prewarm-gpu-puller-2');
    expect(spec.containers.map((c: { image: string }) => c.image)).toEqual([custom.images[1]?.canonical]);
    expect(spec.containers.map((c: { name: string }) => c.name)).not.toContain('prewarm-reconciler');
    expect(spec.serviceAccountName).toBeUndefined();
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.shareProcessNamespace).toBeUndefined();
    expect(spec.terminationGracePeriodSeconds).toBeLessThanOrEqual(2);
    for (const c of spec.containers) expect(c.imagePullPolicy).toBe('IfNotPresent');
  });

  it('runs only on nodes of the pool not yet warm or partial: one term, ANDed with the selector', () => {
    const terms = puller(custom).spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
    expect(terms).toEqual([
      {
        matchExpressions: [
          { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['g5.2xlarge'] },
          { key: 'prewarm.dev/gpu', operator: 'NotIn', values: ['warm', 'partial'] },
        ],
      },
    ]);
    // A pool of every node still gets the one NotIn term.
    const all = puller(defaults).spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
    expect(all).toEqual([{ matchExpressions: [{ key: `prewarm.dev/${defaults.id}`, operator: 'NotIn', values: ['warm', 'partial'] }] }]);
  });

  it('selects on its own puller label, never the pool label, and carries the member label', () => {
    const ds = puller(custom, '2');
    expect(ds.spec.selector).toEqual({ matchLabels: { 'prewarm.dev/puller': 'gpu-2' } });
    const labels = ds.spec.template.metadata.labels;
    expect(labels).not.toHaveProperty('prewarm.dev/pool');
    expect(labels).toMatchObject({
      'prewarm.dev/puller': 'gpu-2',
      'prewarm.dev/pool-member': 'gpu',
      'app.kubernetes.io/component': 'burst-puller',
    });
    const holder = synth(custom, true);
    expect(holder.spec.template.metadata.labels).toMatchObject({ 'prewarm.dev/pool': 'gpu', 'prewarm.dev/pool-member': 'gpu' });
    expect(holder.spec.template.metadata.labels).not.toHaveProperty('prewarm.dev/puller');
  });

  it('refuses an empty lane', () => {
    expect(() => puller(defaults, '1', [])).toThrow(/has no images in lane 1/);
  });
});
