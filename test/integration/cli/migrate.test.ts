/** `prewarm migrate --from-cluster` against a real kube-apiserver holding kube-fledged ImageCaches. */
import * as k8s from '@kubernetes/client-node';
import { readFile } from 'node:fs/promises';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { ExitCode } from '../../../src/cli/exit-codes.js';
import { run } from '../../../src/cli/main.js';
import { waitFor } from '../../../harness/time.js';

const kubeconfig = inject('kubeconfig');

async function waitForCrd(api: k8s.ApiextensionsV1Api, name: string): Promise<void> {
  await waitFor(`CRD ${name} Established`, async () => (await api.readCustomResourceDefinition({ name })).status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'), 10_000, 100);
}

describe('migrate --from-cluster', () => {
  beforeAll(async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(kubeconfig);
    const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
    // loadYaml maps `x-kubernetes-*` keys onto client-node's typed model; a plain parse would
    // have them dropped by the serializer, and the apiserver would prune every spec.
    const crd = k8s.loadYaml<k8s.V1CustomResourceDefinition>(await readFile('test/fixtures/kubefledged-crd.yaml', 'utf8'));
    await ext.createCustomResourceDefinition({ body: crd }).catch((e: unknown) => {
      if ((e as { code?: number }).code !== 409) throw e;
    });
    await waitForCrd(ext, 'imagecaches.kubefledged.io');
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'kube-fledged' } } }).catch((e: unknown) => {
      if ((e as { code?: number }).code !== 409) throw e;
    });
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const sample = parse(await readFile('examples/kube-fledged/imagecache.yaml', 'utf8')) as object;
    await custom.createNamespacedCustomObject({ group: 'kubefledged.io', version: 'v1alpha2', namespace: 'kube-fledged', plural: 'imagecaches', body: sample });
  });

  it('exports what the cluster runs as prewarm.dev specs that place images the same way', async () => {
    let stdout = '';
    let stderr = '';
    const previous = process.env['KUBECONFIG'];
    process.env['KUBECONFIG'] = kubeconfig;
    try {
      const code = await run(['migrate', '--from-cluster'], { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
      expect(code, stderr).toBe(ExitCode.Success);
    } finally {
      if (previous === undefined) delete process.env['KUBECONFIG'];
      else process.env['KUBECONFIG'] = previous;
    }
    const docs = parseAllDocuments(stdout).map((d) => d.toJS());
    expect(docs).toHaveLength(1);
    expect(docs[0]).toMatchObject({
      apiVersion: 'prewarm.dev/v1alpha1',
      metadata: { name: 'imagecache1', namespace: 'kube-fledged', labels: { app: 'kubefledged' } },
      spec: {
        imagePullSecrets: [{ name: 'myregistrykey' }],
        cacheSpec: [
          { images: ['ghcr.io/jitesoft/nginx:1.23.1'], tolerations: [{ operator: 'Exists' }] },
          { images: ['us.gcr.io/k8s-artifacts-prod/cassandra:v7', 'us.gcr.io/k8s-artifacts-prod/etcd:3.5.4-0'], nodeSelector: { tier: 'backend' } },
        ],
      },
    });
    expect(docs[0].metadata).not.toHaveProperty('uid');
  });
});
