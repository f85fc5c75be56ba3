import { describe, expect, it } from 'vitest';
import { configFromEnv } from '../../src/reconciler/config.js';
import { parseFiles } from '../../src/imagecache/parse.js';
import { ENV, LIMITS } from '../../src/contract/names.js';
import { SIDECAR_ENV } from './fixtures.js';

const base = SIDECAR_ENV;

describe('configFromEnv', () => {
  it('accepts the gate keys an invocation may allow', () => {
    for (const key of ['prewarm.dev/warming', 'startup-taint.cluster-autoscaler.kubernetes.io/prewarm', 'example.com/cold']) {
      expect(configFromEnv({ ...base, [ENV.gateTaintKey]: key }).gateTaintKey).toBe(key);
    }
  });
  it('applies the shared defaults', () => {
    expect(configFromEnv(base)).toEqual({
      nodeName: 'n1',
      podName: 'p1',
      podNamespace: 'ns',
      poolId: 'gpu',
      nodeLabelKey: 'prewarm.dev/gpu',
      nodeAnnotationKey: 'status.prewarm.dev/gpu',
      gateTaintKey: '',
      deadlineSeconds: 600,
      refreshSeconds: 0,
      metricsPort: 9464,
      metricsHost: '127.0.0.1',
    });
  });
  it('reads every variable', () => {
    const c = configFromEnv({
      ...base,
      [ENV.gateTaintKey]: 'prewarm.dev/warming',
      [ENV.deadlineSeconds]: '30',
      [ENV.refreshSeconds]: '3600',
      [ENV.metricsPort]: '0',
      [ENV.podIP]: '10.0.0.5',
    });
    expect(c).toMatchObject({
      gateTaintKey: 'prewarm.dev/warming',
      deadlineSeconds: 30,
      refreshSeconds: 3600,
      metricsPort: 0,
      metricsHost: '10.0.0.5',
    });
  });
  it('accepts every gate deadline and refresh interval the spec accepts, and the spec refuses the rest', () => {
    const spec = (deadline: string, interval: string): string =>
      `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: c, namespace: ns}\nspec:\n  cacheSpec: [{images: [redis:7]}]\n  gate: {deadline: ${deadline}}\n  refresh: {interval: ${interval}}\n`;
    for (const [deadline, interval] of [
      ['1s', '0s'],
      ['24h', '720h'],
    ] as const) {
      const r = parseFiles([{ path: 'in.yaml', text: spec(deadline, interval) }]);
      expect(r.diagnostics).toEqual([]);
      const s = r.caches[0]?.settings;
      const c = configFromEnv({
        ...base,
        [ENV.deadlineSeconds]: String(s?.gate?.deadlineSeconds),
        [ENV.refreshSeconds]: String(s?.refreshSeconds),
      });
      expect([c.deadlineSeconds, c.refreshSeconds]).toEqual([s?.gate?.deadlineSeconds, s?.refreshSeconds]);
    }
    expect(parseFiles([{ path: 'in.yaml', text: spec('0s', '0s') }]).caches).toEqual([]);
    expect(() => configFromEnv({ ...base, [ENV.deadlineSeconds]: String(LIMITS.deadlineSeconds.max + 1) })).toThrow(
      'must be an integer between 0 and 86400',
    );
    expect(() => configFromEnv({ ...base, [ENV.refreshSeconds]: String(LIMITS.refreshSeconds.max + 1) })).toThrow(
      'must be an integer between 0 and 2592000',
    );
  });
  it.each([
    [{ [ENV.nodeName]: '' }, 'environment variable PREWARM_NODE_NAME is required'],
    [{ [ENV.deadlineSeconds]: '-1' }, 'environment variable PREWARM_DEADLINE_SECONDS must be an integer between 0 and 86400, got "-1"'],
    [{ [ENV.deadlineSeconds]: '0' }, 'environment variable PREWARM_DEADLINE_SECONDS must be positive'],
    [{ [ENV.metricsPort]: '70000' }, 'environment variable PREWARM_METRICS_PORT must be an integer between 0 and 65535, got "70000"'],
    // Whatever its environment says, the sidecar never gates on (and so never removes) a taint that
    // Kubernetes itself sets and lifts.
    [
      { [ENV.gateTaintKey]: 'node-role.kubernetes.io/control-plane' },
      'environment variable PREWARM_GATE_TAINT_KEY names "node-role.kubernetes.io/control-plane", a taint Kubernetes itself sets and lifts; refusing to gate on it',
    ],
    [{ [ENV.gateTaintKey]: 'node.kubernetes.io/unschedulable' }, 'a taint Kubernetes itself sets and lifts'],
    [{ [ENV.gateTaintKey]: 'node.cloudprovider.kubernetes.io/uninitialized' }, 'a taint Kubernetes itself sets and lifts'],
    [{ [ENV.gateTaintKey]: 'a b' }, 'environment variable PREWARM_GATE_TAINT_KEY is not a valid taint key: "a b"'],
  ])('rejects %j', (over, msg) => {
    expect(() => configFromEnv({ ...base, ...over })).toThrow(msg);
  });
});
