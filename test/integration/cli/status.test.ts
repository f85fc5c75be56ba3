/**
 * `prewarm status` against a real kube-apiserver: nodes, a pull DaemonSet and its pods are created
 * as the DaemonSet controller and the sidecars would leave them, then read back through the CLI.
 */
import * as k8s from '@kubernetes/client-node';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { ExitCode } from '../../../src/cli/exit-codes.js';
import { run } from '../../../src/cli/main.js';
import type { StatusReport } from '../../../src/status/report.js';
import type { Timeline } from '../../../src/status/timeline.js';
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
            annotations: {
              'status.prewarm.dev/gpu-it': JSON.stringify({ v: 1, pod: 'p-st-n1', state: 'warm', images: 1, present: 1, ttwSeconds: 12 }),
            },
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
    const watching = status('-n', ns, '--watch', '--interval', '1s', '--timeout', '60s');
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

describe('prewarm status --node', () => {
  // Set from the node's creation: nothing of a node happens before it exists, and the timeline
  // leaves out an Event of a pod known only from its Events that comes before (an earlier node's).
  let t0 = 0;
  const at = (s: number) => new Date(t0 + s * 1000);

  beforeAll(async () => {
    // st-n1 Ready at t0, a second after it was created; a puller that is gone is known from its
    // Events only. The Events are dated up to t0 + 7 s: wait until then has passed.
    const node = await core.readNode({ name: 'st-n1' });
    t0 = new Date(node.metadata?.creationTimestamp ?? 0).getTime() + 1000;
    await new Promise((r) => setTimeout(r, Math.max(0, t0 + 8000 - Date.now())));
    node.status = { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: at(0), reason: 'KubeletReady' }] };
    await core.replaceNodeStatus({ name: 'st-n1', body: node });
    const puller = 'prewarm-gpu-it-puller-1-abcde';
    const event = (name: string, s: number, reason: string, message: string, fieldPath?: string) =>
      core.createNamespacedEvent({
        namespace: ns,
        body: {
          metadata: { name: `${puller}.${name}` },
          involvedObject: { kind: 'Pod', namespace: ns, name: puller, ...(fieldPath === undefined ? {} : { fieldPath }) },
          reason,
          message,
          source: { component: 'kubelet', host: 'st-n1' },
          firstTimestamp: at(s),
          lastTimestamp: at(s),
          count: 1,
        },
      });
    const apps = (() => {
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(kubeconfig);
      return kc.makeApiClient(k8s.AppsV1Api);
    })();
    const labels = { 'app.kubernetes.io/managed-by': 'prewarm', 'prewarm.dev/puller': 'gpu-it-1', 'prewarm.dev/pool-member': 'gpu-it' };
    await apps.createNamespacedDaemonSet({
      namespace: ns,
      body: {
        metadata: { name: 'prewarm-gpu-it-puller-1', labels },
        spec: {
          selector: { matchLabels: { 'prewarm.dev/puller': 'gpu-it-1' } },
          template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'redis:7' }] } },
        },
      },
    });
    await event('a', 2, 'Pulling', 'Pulling image "redis:7"', 'spec.containers{c}');
    await event(
      'b',
      5,
      'Pulled',
      'Successfully pulled image "redis:7" in 2.5s (2.5s including waiting). Image size: 1 bytes.',
      'spec.containers{c}',
    );
    await event('c', 6, 'Started', 'Started container c', 'spec.containers{c}');
    await core.createNamespacedEvent({
      namespace: 'default',
      body: {
        metadata: { name: 'p-st-n1.warm' },
        involvedObject: { kind: 'Node', name: 'st-n1' },
        reason: 'Warm',
        message:
          'pool gpu-it: all 1 images present, time to warm 7s; removed gate taint prewarm.dev/warming: every pool selecting the node is warm or partial',
        source: { component: 'prewarm-reconciler', host: 'st-n1' },
        firstTimestamp: at(7),
        lastTimestamp: at(7),
        count: 1,
      },
    });
  });

  it('shows the node warm-up from its pods and Events, a gone puller included, as JSON, text and SVG', async () => {
    const r = await status('--node', 'st-n1', '-o', 'json');
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    const t = JSON.parse(r.stdout) as Timeline;
    expect(t.originLabel).toBe('Ready');
    expect(t.marks.map((m) => [m.label, Math.round(m.at)])).toEqual([
      ['Ready', 0],
      ['warm gpu-it', 7],
      ['taint removed', 7],
    ]);
    const puller = t.rows.filter((x) => x.pod === 'prewarm-gpu-it-puller-1-abcde');
    expect(puller.map((x) => x.label)).toEqual(['puller 1', 'redis:7']);
    expect(puller[1]).toMatchObject({ outcome: 'pulled', pullSeconds: 2.5 });
    expect(t.rows.some((x) => x.pod === 'p-st-n1' && x.label === 'holder')).toBe(true);

    const text = await status('--node', 'st-n1');
    expect(text.stdout).toMatch(/puller 1 prewarm-gpu-it-puller-1-abcde/);
    expect(text.stdout).toMatch(/\^ 7\.0s taint removed/);
    const svg = await status('--node', 'st-n1', '-o', 'svg');
    expect(svg.stdout.startsWith('<svg')).toBe(true);
  });

  it('says what is wrong: an unknown node exits 3, --watch and -o svg without --node are usage errors', async () => {
    expect((await status('--node', 'no-such-node')).code).toBe(ExitCode.NotReady);
    expect((await status('--node', 'st-n1', '--watch')).code).toBe(ExitCode.Usage);
    expect((await status('-o', 'svg')).code).toBe(ExitCode.Usage);
  });
});
