import { describe, expect, it } from 'vitest';
import { imageListPullJob } from '../../harness/cluster/kruise.js';

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
