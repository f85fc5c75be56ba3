import { describe, expect, it } from 'vitest';
import { collectionPath, objectPath } from '../../harness/kube.js';

describe('the REST paths of objects', () => {
  it.each([
    [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ml' } }, '/api/v1/namespaces/ml'],
    [{ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'sa', namespace: 'ml' } }, '/api/v1/namespaces/ml/serviceaccounts/sa'],
    [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } }, '/api/v1/namespaces/default/configmaps/c'],
    [{ apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'd', namespace: 'ml' } }, '/apis/apps/v1/namespaces/ml/daemonsets/d'],
    [{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'b' } }, '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/b'],
    [{ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: 'p' } }, '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/p'],
    [{ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'n', namespace: 'ml' } }, '/apis/networking.k8s.io/v1/namespaces/ml/networkpolicies/n'],
    [{ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'i', namespace: 'ml' } }, '/apis/networking.k8s.io/v1/namespaces/ml/ingresses/i'],
    [{ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'high' } }, '/apis/scheduling.k8s.io/v1/priorityclasses/high'],
  ])('%o is at %s', (o, want) => {
    expect(objectPath(o)).toBe(want);
    expect(collectionPath(o)).toBe(want.slice(0, want.lastIndexOf('/')));
  });
});
