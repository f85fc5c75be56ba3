import { describe, expect, it } from 'vitest';
import { imageListPullJob, kustomize } from '../../harness/cluster/kruise.js';

describe('imageListPullJob', () => {
  it('keeps pulling onto new nodes and leaves parallelism at OpenKruise default unless set', () => {
    expect(imageListPullJob({ name: 'pool', namespace: 'ns', images: ['r/a:1', 'r/b:2'], nodeLabels: { pool: 'gpu' } })).toEqual({
      apiVersion: 'apps.kruise.io/v1alpha1',
      kind: 'ImageListPullJob',
      metadata: { name: 'pool', namespace: 'ns' },
      spec: { images: ['r/a:1', 'r/b:2'], selector: { matchLabels: { pool: 'gpu' } }, completionPolicy: { type: 'Never' } },
    });
  });

  it('carries a fleet parallelism and the pool pull secrets', () => {
    const job = imageListPullJob({
      name: 'p',
      namespace: 'n',
      images: ['r/a:1'],
      nodeLabels: {},
      parallelism: 8,
      pullSecrets: ['regcred'],
    });
    expect(job['spec']).toMatchObject({ parallelism: 8, pullSecrets: ['regcred'] });
  });
});

describe('kustomize (the module kustomization: kruise- prefix, namespace kruise-system)', () => {
  it('prefixes names, references and subjects, and moves system into kruise-system', () => {
    const binding = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'daemon-rolebinding' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'daemon-role' },
      subjects: [{ kind: 'ServiceAccount', name: 'daemon', namespace: 'system' }],
    };
    expect(kustomize(binding)).toEqual({
      ...binding,
      metadata: { name: 'kruise-daemon-rolebinding' },
      roleRef: { ...binding.roleRef, name: 'kruise-daemon-role' },
      subjects: [{ kind: 'ServiceAccount', name: 'kruise-daemon', namespace: 'kruise-system' }],
    });
  });

  it('puts namespaced objects in kruise-system and points webhooks at its Service', () => {
    const role = { kind: 'Role', metadata: { name: 'leader-election-role', namespace: 'system' } };
    expect(kustomize(role).metadata).toEqual({ name: 'kruise-leader-election-role', namespace: 'kruise-system' });
    const hooks = {
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: 'mutating-webhook-configuration' },
      webhooks: [{ name: 'mpod.kb.io', clientConfig: { service: { name: 'webhook-service', namespace: 'system', path: '/mutate-pod' } } }],
    };
    expect(kustomize(hooks)).toEqual({
      ...hooks,
      metadata: { name: 'kruise-mutating-webhook-configuration' },
      webhooks: [
        {
          name: 'mpod.kb.io',
          clientConfig: { service: { name: 'kruise-webhook-service', namespace: 'kruise-system', path: '/mutate-pod' } },
        },
      ],
    });
  });
});
