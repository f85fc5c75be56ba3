/** One test per patch in src/synth/escape-hatches.ts: each must still land where it should. */
import { Testing } from 'cdk8s';
import * as kplus from 'cdk8s-plus-27';
import { describe, expect, it } from 'vitest';
import { placementOf } from '../../src/contract/placement.js';
import { SERVICE_ACCOUNT_MOUNT, TOKEN_VOLUME } from '../../src/contract/names.js';
import { patchPullDaemonSet } from '../../src/synth/escape-hatches.js';
import { only } from '../helpers.js';

function daemonSet(patches: Partial<Parameters<typeof patchPullDaemonSet>[1]> = {}) {
  const chart = Testing.chart();
  const scratch = kplus.Volume.fromEmptyDir(chart, 'v', 'scratch');
  const ds = new kplus.DaemonSet(chart, 'ds', {
    initContainers: [
      // Like the real sidecar, b already mounts something: the patch appends to its mounts.
      { name: 'b', image: 'b:1', resources: {}, volumeMounts: [{ path: '/scratch', volume: scratch }] },
      { name: 'init', image: 'busybox:1', resources: {} },
    ],
    containers: [{ name: 'a', image: 'a:1', resources: {} }],
  });
  patchPullDaemonSet(ds, { placement: placementOf({}, []), imagePullSecrets: [], maxUnavailable: 1, ...patches });
  return only(Testing.synth(chart), 'DaemonSet');
}

describe('escape hatches', () => {
  it('places pods exactly: every selector label in ONE term (ANDed), tolerations whole', () => {
    const placement = placementOf(
      { tier: 'backend', 'topology.kubernetes.io/zone': 'eu-west-1a' },
      [
        { operator: 'Exists', effect: 'NoExecute' },
        { key: 'gpu', operator: 'Equal', value: 'a100', effect: 'NoExecute', tolerationSeconds: 30 },
      ],
      'prewarm.dev/warming',
    );
    const spec = daemonSet({ placement }).spec.template.spec;
    expect(spec.affinity).toEqual({
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            {
              matchExpressions: [
                { key: 'tier', operator: 'In', values: ['backend'] },
                { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['eu-west-1a'] },
              ],
            },
          ],
        },
      },
    });
    expect(spec.tolerations).toEqual([
      { operator: 'Exists', effect: 'NoExecute' },
      { key: 'gpu', operator: 'Equal', value: 'a100', effect: 'NoExecute', tolerationSeconds: 30 },
      { key: 'prewarm.dev/warming', operator: 'Exists' },
    ]);
  });

  it('emits no affinity and no tolerations for a placement on every untainted node', () => {
    const spec = daemonSet().spec.template.spec;
    expect(spec.affinity).toBeUndefined();
    expect(spec.tolerations).toBeUndefined();
  });

  it('adds seccompProfile RuntimeDefault at pod level', () => {
    expect(daemonSet().spec.template.spec.securityContext.seccompProfile).toEqual({ type: 'RuntimeDefault' });
  });

  it('drops ALL capabilities in every init container and container', () => {
    const spec = daemonSet().spec.template.spec;
    for (const c of [...spec.initContainers, ...spec.containers]) expect(c.securityContext.capabilities).toEqual({ drop: ['ALL'] });
  });

  it('lists every pull secret, and emits none when there are none', () => {
    expect(daemonSet({ imagePullSecrets: ['a', 'b'] }).spec.template.spec.imagePullSecrets).toEqual([{ name: 'a' }, { name: 'b' }]);
    expect(daemonSet().spec.template.spec.imagePullSecrets).toBeUndefined();
  });

  it('sets priorityClassName only when given', () => {
    expect(daemonSet({ priorityClassName: 'p' }).spec.template.spec.priorityClassName).toBe('p');
    expect(daemonSet().spec.template.spec.priorityClassName).toBeUndefined();
  });

  it('disables service links', () => {
    expect(daemonSet().spec.template.spec.enableServiceLinks).toBe(false);
  });

  it('sets a RollingUpdate strategy with a count or a percentage', () => {
    expect(daemonSet({ maxUnavailable: 2 }).spec.updateStrategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 2 } });
    expect(daemonSet({ maxUnavailable: '25%' }).spec.updateStrategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: '25%' },
    });
  });

  it('removes the construct-path label cdk8s-plus adds to the pod template', () => {
    expect(daemonSet().spec.template.metadata.labels ?? {}).not.toHaveProperty('cdk8s.io/metadata.addr');
  });

  it('mounts a projected token into the sidecar only, found by its name', () => {
    const spec = daemonSet({ sidecar: 'b' }).spec.template.spec;
    expect(spec.volumes.find((v: { name: string }) => v.name === TOKEN_VOLUME).projected.sources[0]).toEqual({
      serviceAccountToken: { path: 'token', expirationSeconds: 3607 },
    });
    expect(spec.initContainers[0].volumeMounts.at(-1)).toEqual({ name: TOKEN_VOLUME, mountPath: SERVICE_ACCOUNT_MOUNT, readOnly: true });
    expect(spec.initContainers[1].volumeMounts).toBeUndefined();
    expect(spec.containers[0].volumeMounts).toBeUndefined();
  });

  it('makes the sidecar a native sidecar, and no other init container', () => {
    const spec = daemonSet({ sidecar: 'b' }).spec.template.spec;
    expect(spec.initContainers.map((c: { restartPolicy?: string }) => c.restartPolicy)).toEqual(['Always', undefined]);
    expect(spec.containers[0].restartPolicy).toBeUndefined();
    expect(daemonSet().spec.template.spec.initContainers[0].restartPolicy).toBeUndefined();
  });

  it("shows the sidecar's last log line as its termination message when it fails, and only the sidecar's", () => {
    const spec = daemonSet({ sidecar: 'b' }).spec.template.spec;
    expect(spec.initContainers[0].terminationMessagePolicy).toBe('FallbackToLogsOnError');
    expect(spec.initContainers[1].terminationMessagePolicy).toBeUndefined();
    expect(spec.containers[0].terminationMessagePolicy).toBeUndefined();
    expect(daemonSet().spec.template.spec.initContainers[0].terminationMessagePolicy).toBeUndefined();
  });

  it('gives the sidecar its startup probe as written, the port by name, and no other container one', () => {
    const probe = { httpGet: { path: '/startupz', port: 'metrics' }, periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 630 };
    const spec = daemonSet({ sidecar: 'b', sidecarStartupProbe: probe }).spec.template.spec;
    expect(spec.initContainers[0].startupProbe).toEqual(probe);
    expect(spec.initContainers[1].startupProbe).toBeUndefined();
    expect(spec.containers[0].startupProbe).toBeUndefined();
    expect(daemonSet({ sidecar: 'b' }).spec.template.spec.initContainers[0].startupProbe).toBeUndefined();
  });

  it('refuses to patch a sidecar the pod template does not have', () => {
    expect(() => daemonSet({ sidecar: 'prewarm-reconciler' })).toThrow('the pod template has no init container named "prewarm-reconciler"');
    // A container of that name is not the sidecar: the sidecar is an init container.
    expect(() => daemonSet({ sidecar: 'a' })).toThrow('the pod template has no init container named "a"');
  });
});
