/**
 * `prewarm status` against a real kube-apiserver: nodes, a pull DaemonSet and its pods are created
 * as the DaemonSet controller and the sidecars would leave them, then read back through the CLI.
 */
import * as k8s from '@kubernetes/client-node';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { ExitCode } from '../../../src/cli/exit-codes.js';
import { run } from '../../../src/cli/main.js';
import type { StatusReport } from '../../../src/status/report.js';
import { sleep } from '../../../harness/time.js';

const kubeconfig = inject('kubeconfig');
const ns = 'status-it';
let core: k8s.CoreV1Api;

async function status(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const previous = process.env['KUBECONFIG'];
  process.env['KUBECONFIG'] = kubeconfig;
  try {
    const code = await run(['status', ...args], { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
    return { code, stdout, stderr };
  } finally {
    if (previous === undefined) delete process.env['KUBECONFIG'];
    else process.env['KUBECONFIG'] = previous;
  }
}

describe('prewarm status', () => {
  beforeAll(async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(kubeconfig);
    core = kc.makeApiClient(k8s.CoreV1Api);
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    await core.createNamespace({ body: { metadata: { name: ns } } });
    // This apiserver runs without controllers: create what the service-account controller would.
    await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'default' } } });
    for (const name of ['st-n1', 'st-n2']) await core.createNode({ body: { metadata: { name, labels: { pool: 'gpu' } } } });
    const labels = { 'app.kubernetes.io/managed-by': 'prewarm', 'prewarm.dev/pool': 'gpu-it' };
    await apps.createNamespacedDaemonSet({
      namespace: ns,
      body: {
        metadata: { name: 'prewarm-gpu-it', labels },
        spec: {
          selector: { matchLabels: { 'prewarm.dev/pool': 'gpu-it' } },
          template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'redis:7' }] } },
        },
      },
    });
    // Read-modify-write: a status PUT takes metadata from the body, so it must carry the labels.
    const current = await apps.readNamespacedDaemonSet({ name: 'prewarm-gpu-it', namespace: ns });
    current.status = { desiredNumberScheduled: 2, currentNumberScheduled: 2, numberMisscheduled: 0, numberReady: 1 };
    await apps.replaceNamespacedDaemonSetStatus({ name: 'prewarm-gpu-it', namespace: ns, body: current });
    for (const node of ['st-n1', 'st-n2']) {
      await core.createNamespacedPod({
        namespace: ns,
        body: { metadata: { name: `p-${node}`, labels }, spec: { nodeName: node, containers: [{ name: 'c', image: 'redis:7' }] } },
      });
    }
    await core.patchNode(
      {
        name: 'st-n1',
        body: {
          metadata: {
            labels: { 'prewarm.dev/gpu-it': 'warm' },
            annotations: { 'status.prewarm.dev/gpu-it': JSON.stringify({ v: 1, pod: 'p-st-n1', state: 'warm', images: 1, present: 1, ttwSeconds: 12 }) },
          },
        },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
    );
  });

  it('reports desired and warm counts, and exits 3 while a node is cold', async () => {
    const r = await status('-n', ns, '-o', 'json');
    expect(r.code, r.stderr + r.stdout).toBe(ExitCode.NotReady);
    const report = JSON.parse(r.stdout) as StatusReport;
    expect(report.pools).toEqual([
      {
        pool: 'gpu-it',
        namespace: ns,
        daemonSet: 'prewarm-gpu-it',
        desired: 2,
        warm: 1,
        partial: 0,
        cold: 1,
        nodes: [
          { node: 'st-n1', state: 'warm', images: 1, present: 1, timeToWarmSeconds: 12, failing: [] },
          { node: 'st-n2', state: 'cold', images: 0, failing: [] },
        ],
      },
    ]);
  });

  it('exits 0 once every node is warm, and --watch returns then', async () => {
    const watching = status('-n', ns, '--watch', '--interval', '0.2', '--timeout', '60s');
    await sleep(500);
    await core.patchNode(
      { name: 'st-n2', body: { metadata: { labels: { 'prewarm.dev/gpu-it': 'warm' } } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
    );
    const r = await watching;
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    expect(r.stdout).toContain('gpu-it');
    expect((await status('-n', ns)).code).toBe(ExitCode.Success);
  });
});
