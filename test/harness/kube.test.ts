import { describe, expect, it } from 'vitest';
import { collectionPath, MAX_429_RETRIES, MAX_RETRY_WAIT_MS, objectPath, retryDelayMs } from '../../harness/kube.js';

describe('the REST paths of objects', () => {
  it.each([
    [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ml' } }, '/api/v1/namespaces/ml'],
    [{ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'sa', namespace: 'ml' } }, '/api/v1/namespaces/ml/serviceaccounts/sa'],
    [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } }, '/api/v1/namespaces/default/configmaps/c'],
    [{ apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'd', namespace: 'ml' } }, '/apis/apps/v1/namespaces/ml/daemonsets/d'],
    [
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'b' } },
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/b',
    ],
    [
      { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: 'p' } },
      '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/p',
    ],
    [
      { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'n', namespace: 'ml' } },
      '/apis/networking.k8s.io/v1/namespaces/ml/networkpolicies/n',
    ],
    [
      { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'i', namespace: 'ml' } },
      '/apis/networking.k8s.io/v1/namespaces/ml/ingresses/i',
    ],
    [
      { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'high' } },
      '/apis/scheduling.k8s.io/v1/priorityclasses/high',
    ],
  ])('%o is at %s', (o, want) => {
    expect(objectPath(o)).toBe(want);
    expect(collectionPath(o)).toBe(want.slice(0, want.lastIndexOf('/')));
  });
});

describe('retrying a 429', () => {
  it('waits as Retry-After says, in seconds', () => {
    expect(retryDelayMs(429, '1', 0)).toBe(1000);
    expect(retryDelayMs(429, ' 3 ', 2)).toBe(3000);
    expect(retryDelayMs(429, '0', 0)).toBe(0);
  });

  it('waits until the date Retry-After gives, never less than nothing', () => {
    const now = Date.parse('2026-12-07T08:00:00Z');
    expect(retryDelayMs(429, 'Mon, 07 Dec 2026 08:00:04 GMT', 0, now)).toBe(4000);
    expect(retryDelayMs(429, 'Mon, 07 Dec 2026 07:59:00 GMT', 0, now)).toBe(0);
  });

  it('backs off, doubling, without a readable Retry-After', () => {
    expect([0, 1, 2, 3].map((a) => retryDelayMs(429, undefined, a))).toEqual([500, 1000, 2000, 4000]);
    expect(retryDelayMs(429, 'soon', 1)).toBe(1000);
  });

  it('never waits longer than its bound, whatever the server asks', () => {
    expect(retryDelayMs(429, '3600', 0)).toBe(MAX_RETRY_WAIT_MS);
    expect(retryDelayMs(429, 'Fri, 31 Dec 2100 23:59:59 GMT', 0)).toBe(MAX_RETRY_WAIT_MS);
    expect(retryDelayMs(429, undefined, MAX_429_RETRIES - 1)).toBeLessThanOrEqual(MAX_RETRY_WAIT_MS);
  });

  it('stops after its bound of retries, and retries nothing but a 429', () => {
    expect(retryDelayMs(429, '1', MAX_429_RETRIES - 1)).toBe(1000);
    expect(retryDelayMs(429, '1', MAX_429_RETRIES)).toBeUndefined();
    for (const status of [200, 201, 404, 409, 500, 503]) expect(retryDelayMs(status, '1', 0)).toBeUndefined();
  });
});
