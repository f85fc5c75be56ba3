import { describe, expect, it } from 'vitest';
import {
  DEV_ENV,
  devEnv,
  configFromEnv,
  parseSidecarGate,
  renderSidecarEnv,
  resolveSidecarEnv,
  type SidecarSettings,
} from '../../src/contract/sidecar-env.js';
import { nodeAnnotationKey, nodeLabelKey } from '../../src/contract/identity.js';
import { parseFiles } from '../../src/imagecache/parse.js';
import { ENV, LIMITS } from '../../src/contract/names.js';
import { SIDECAR_ENV } from '../reconciler/fixtures.js';

const base = SIDECAR_ENV;
/** The variables with a shared default; without them only what the sidecar requires is left. */
const OPTIONAL: readonly string[] = [ENV.gateTaintKey, ENV.deadlineSeconds, ENV.refreshSeconds, ENV.metricsPort];
const required = Object.fromEntries(Object.entries(SIDECAR_ENV).filter(([k]) => !OPTIONAL.includes(k)));

const SETTINGS: readonly SidecarSettings[] = [
  {
    poolId: 'gpu-a1b2c3',
    nodeLabelKey: nodeLabelKey('gpu-a1b2c3'),
    nodeAnnotationKey: nodeAnnotationKey('gpu-a1b2c3'),
    gateTaintKey: 'prewarm.dev/warming',
    deadlineSeconds: 900,
    refreshSeconds: 21_600,
    metricsPort: 9464,
  },
  {
    poolId: 'web',
    nodeLabelKey: nodeLabelKey('web'),
    nodeAnnotationKey: nodeAnnotationKey('web'),
    gateTaintKey: '',
    deadlineSeconds: LIMITS.deadlineSeconds.min,
    refreshSeconds: 0,
    metricsPort: 0,
  },
  {
    poolId: 'x',
    nodeLabelKey: nodeLabelKey('x'),
    nodeAnnotationKey: nodeAnnotationKey('x'),
    gateTaintKey: 'startup-taint.cluster-autoscaler.kubernetes.io/prewarm',
    deadlineSeconds: LIMITS.deadlineSeconds.max,
    refreshSeconds: LIMITS.refreshSeconds.max,
    metricsPort: 65_535,
  },
];

describe('renderSidecarEnv and configFromEnv', () => {
  it.each(SETTINGS)('round-trip: the sidecar reads back what synthesis rendered for $poolId', (s) => {
    const fields = { 'spec.nodeName': 'n1', 'metadata.name': 'p1', 'metadata.namespace': 'ns', 'status.podIP': '10.0.0.5' };
    expect(configFromEnv(resolveSidecarEnv(renderSidecarEnv(s), fields))).toStrictEqual({
      ...s,
      nodeName: 'n1',
      podName: 'p1',
      podNamespace: 'ns',
      metricsHost: '10.0.0.5',
    });
    expect(parseSidecarGate(resolveSidecarEnv(renderSidecarEnv(s), {}))).toStrictEqual({
      gateTaintKey: s.gateTaintKey,
      deadlineSeconds: s.deadlineSeconds,
    });
  });
  it('renders every variable once: the downward API fields first, then each setting as a literal', () => {
    const vars = renderSidecarEnv(SETTINGS[0] as SidecarSettings);
    expect(vars.map((v) => v.name)).toEqual([
      ENV.nodeName,
      ENV.podName,
      ENV.podNamespace,
      ENV.podIP,
      ENV.pool,
      ENV.nodeLabelKey,
      ENV.nodeAnnotationKey,
      ENV.gateTaintKey,
      ENV.deadlineSeconds,
      ENV.refreshSeconds,
      ENV.metricsPort,
    ]);
    expect(vars.filter((v) => 'fieldPath' in v)).toEqual([
      { name: ENV.nodeName, fieldPath: 'spec.nodeName' },
      { name: ENV.podName, fieldPath: 'metadata.name' },
      { name: ENV.podNamespace, fieldPath: 'metadata.namespace' },
      { name: ENV.podIP, fieldPath: 'status.podIP' },
    ]);
  });
  it('leaves a downward API field the kubelet has not filled unset, so /metrics binds to loopback', () => {
    const env = resolveSidecarEnv(renderSidecarEnv(SETTINGS[0] as SidecarSettings), { 'spec.nodeName': 'n1' });
    expect(Object.keys(env)).not.toContain(ENV.podIP);
    expect(() => configFromEnv(env)).toThrow('environment variable PREWARM_POD_NAME is required');
  });
});

describe('configFromEnv', () => {
  it('accepts the gate keys an invocation may allow', () => {
    for (const key of ['prewarm.dev/warming', 'startup-taint.cluster-autoscaler.kubernetes.io/prewarm', 'example.com/cold']) {
      expect(configFromEnv({ ...base, [ENV.gateTaintKey]: key }).gateTaintKey).toBe(key);
    }
  });
  it('applies the shared defaults', () => {
    expect(configFromEnv(required)).toEqual({
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

describe('DEV_ENV', () => {
  it('names PREWARM_ variables synthesis never renders, each read as its default when unset', () => {
    const rendered = new Set<string>(Object.values(ENV));
    for (const v of Object.values(DEV_ENV)) {
      expect(v.name).toMatch(/^PREWARM_[A-Z_]+$/);
      expect(rendered.has(v.name)).toBe(false);
      expect(devEnv({}, v)).toBe(v.default);
      expect(devEnv({ [v.name]: 'x' }, v)).toBe('x');
    }
    expect(devEnv({}, DEV_ENV.poolsPath)).toBe('/etc/prewarm/pools.json');
  });
});
