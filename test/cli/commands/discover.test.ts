/**
 * `prewarm discover --from-cluster` against a scripted loopback apiserver: the same plan as from
 * files, objects a controller owns read through their owner, and an apiserver failure in one line.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { run } from '../../../src/cli/main.js';
import { ExitCode } from '../../../src/cli/exit-codes.js';
import { startScriptedApiserver, withKubeconfig } from '../../../harness/scripted-apiserver.js';
import type { Plan } from '../../../src/discover/plan.js';

const SPECS = join(resolve(dirname(fileURLToPath(import.meta.url)), '../../fixtures/discover'), 'specs');

async function cli(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await run(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

const template = (spec: Record<string, unknown>) => ({ template: { spec } });
const LISTS: Record<string, unknown[]> = {
  '/apis/apps/v1/deployments': [
    {
      metadata: { name: 'vllm', namespace: 'llm' },
      spec: template({
        nodeSelector: { 'node.kubernetes.io/pool': 'gpu' },
        tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
        containers: [{ name: 'vllm', image: 'vllm/vllm-openai:v0.8.5' }],
      }),
    },
    {
      metadata: { name: 'dns', namespace: 'kube-system' },
      spec: template({ containers: [{ name: 'c', image: 'coredns/coredns:1.11.3' }] }),
    },
  ],
  '/apis/apps/v1/replicasets': [
    {
      metadata: { name: 'vllm-1', namespace: 'llm', ownerReferences: [{ kind: 'Deployment', name: 'vllm', controller: true }] },
      spec: template({ containers: [{ name: 'vllm', image: 'vllm/vllm-openai:v0.8.5' }] }),
    },
  ],
  '/api/v1/pods': [
    {
      metadata: { name: 'vllm-1-x', namespace: 'llm', ownerReferences: [{ kind: 'ReplicaSet', name: 'vllm-1', controller: true }] },
      spec: { nodeName: 'n1', containers: [{ name: 'vllm', image: 'vllm/vllm-openai:v0.8.5' }] },
    },
  ],
};

describe('discover --from-cluster', () => {
  it('plans from the cluster as from files, reading owned objects through their owner', async () => {
    const server = await startScriptedApiserver((path) => ({
      status: 200,
      body: { kind: 'List', metadata: {}, items: LISTS[path.split('?')[0] ?? ''] ?? [] },
    }));
    try {
      const r = await withKubeconfig(server.url, () => cli('discover', '--from-cluster', '--specs', SPECS, '-o', 'json'));
      expect(r.code, r.stderr).toBe(ExitCode.Success);
      const plan = JSON.parse(r.stdout) as Plan;
      expect(plan.pools.find((p) => p.pool === 'gpu')?.add).toEqual([
        { canonical: 'docker.io/vllm/vllm-openai:v0.8.5', text: 'vllm/vllm-openai:v0.8.5', workloads: ['Deployment/llm/vllm'] },
      ]);
      expect(plan.skipped).toEqual([{ workload: 'Deployment/kube-system/dns', reason: 'in kube-system (--include-system-namespaces)' }]);
      expect(plan.others).toEqual({ 'Pod owned by a ReplicaSet': 1, 'ReplicaSet owned by a Deployment': 1 });
      expect(server.requests.every((p) => !p.includes('watch'))).toBe(true);
    } finally {
      await server.stop();
    }
  });

  it('an apiserver refusal is one line, exit 70, and nothing is written', async () => {
    const server = await startScriptedApiserver(() => ({
      status: 403,
      body: { kind: 'Status', code: 403, reason: 'Forbidden', message: 'deployments.apps is forbidden' },
    }));
    try {
      const r = await withKubeconfig(server.url, () => cli('discover', '--from-cluster', '--specs', SPECS, '--write'));
      expect(r.code).toBe(ExitCode.Internal);
      expect(r.stderr).toContain('prewarm: cannot read the cluster: HTTP 403: ');
      expect(r.stdout).toBe('');
    } finally {
      await server.stop();
    }
  });
});
