/**
 * ReconcilerAccess on a real kube-apiserver (Node,RBAC authorization, ValidatingAdmissionPolicy):
 * a pod-bound ServiceAccount token of a pod on node A may change prewarm keys on A and remove the
 * gate taint there, and nothing else — not on node B, not other keys, not Secrets, no lists.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeHttp } from '../../../src/http/client.js';
import type { KNode, KPod } from '../../../src/reconciler/kube-types.js';
import { KubePoolPodSource } from '../../../src/reconciler/adapters/kube.js';
import { DEFAULT_GATE_TAINT_KEY } from '../../../src/contract/names.js';
import { adminEndpoint, apply, applyAccess, INT_ACCESS, makeNode, makePod, podToken, tokenEndpoint, status, denial } from './cluster.js';
import { waitFor } from '../../../harness/time.js';

const NS = 'prewarm-int-access';
const SA = 'prewarm-reconciler';
const GATE = { key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' };
const OTHER = { key: 'dedicated', value: 'x', effect: 'NoSchedule' };

let admin: KubeHttp;
let sa: KubeHttp;

const merge = (node: string, body: object): Promise<KNode> =>
  sa.json<KNode>('PATCH', `/api/v1/nodes/${node}`, body, 'application/strategic-merge-patch+json');

beforeAll(async () => {
  admin = new KubeHttp(adminEndpoint());
  await apply(admin, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  await applyAccess(admin, INT_ACCESS);
  await makeNode(admin, 'int-node-a', [GATE, OTHER]);
  await makeNode(admin, 'int-node-b', [GATE]);
  try {
    await admin.json('DELETE', `/api/v1/namespaces/${NS}/pods/pull-a?gracePeriodSeconds=0`);
  } catch {
    // first run
  }
  await waitFor('old pod gone', async () => (await status(admin.json('GET', `/api/v1/namespaces/${NS}/pods/pull-a`))) === 404, 20_000, 200);
  const pod = await makePod(admin, NS, 'pull-a', 'int-node-a', SA, ['reg.local/a:1']);
  sa = new KubeHttp(tokenEndpoint(await podToken(admin, NS, SA, pod)));
  // The policy and its binding reach the admission plugin asynchronously: wait until a write
  // that only the policy forbids is denied.
  await waitFor(
    'the admission policy to be enforced',
    async () => (await status(merge('int-node-b', { metadata: { labels: { 'prewarm.dev/probe': 'x' } } }))) === 403,
    30_000,
    200,
  );
});

afterAll(() => {
  admin?.close();
  sa?.close();
});

describe('ReconcilerAccess on a real apiserver', () => {
  it('judges only the sidecars: other writers of nodes are untouched', async () => {
    const n = await admin.json<KNode>(
      'PATCH',
      '/api/v1/nodes/int-node-b',
      { metadata: { labels: { 'example.com/team': 'a' } } },
      'application/strategic-merge-patch+json',
    );
    expect(n.metadata.labels?.['example.com/team']).toBe('a');
  });

  it('allows our label and annotation on our own node', async () => {
    const n = await merge('int-node-a', {
      metadata: { labels: { 'prewarm.dev/pool-x': 'warm' }, annotations: { 'status.prewarm.dev/pool-x': '{"v":1}' } },
    });
    expect(n.metadata.labels?.['prewarm.dev/pool-x']).toBe('warm');
    const cleared = await merge('int-node-a', {
      metadata: { labels: { 'prewarm.dev/pool-x': null }, annotations: { 'status.prewarm.dev/pool-x': null } },
    });
    expect(cleared.metadata.labels?.['prewarm.dev/pool-x']).toBeUndefined();
  });

  it('denies a write to another node, naming both nodes', async () => {
    const e = await denial(merge('int-node-b', { metadata: { labels: { 'prewarm.dev/pool-x': 'warm' } } }));
    expect(e.code).toBe(403);
    expect(e.message).toContain('may only write the node its pod runs on (token node: int-node-a, target: int-node-b)');
  });

  it('denies labels and annotations outside our prefixes', async () => {
    expect(
      (await denial(merge('int-node-a', { metadata: { labels: { 'node-role.kubernetes.io/control-plane': '' } } }))).message,
    ).toContain('may only change node labels under prewarm.dev/');
    expect((await denial(merge('int-node-a', { metadata: { labels: { 'kubernetes.io/hostname': null } } }))).code).toBe(403);
    expect((await denial(merge('int-node-a', { metadata: { annotations: { 'prewarm.dev/not-status': 'x' } } }))).message).toContain(
      'may only change node annotations under status.prewarm.dev/',
    );
  });

  it('allows removing the gate taint, denies removing or adding any other taint and other spec changes', async () => {
    const node = await admin.json<KNode>('GET', '/api/v1/nodes/int-node-a');
    const taints = node.spec?.taints ?? [];
    const otherIdx = taints.findIndex((t) => t.key === OTHER.key);
    const gateIdx = taints.findIndex((t) => t.key === GATE.key);
    const jp = (ops: object[]) => sa.json<KNode>('PATCH', '/api/v1/nodes/int-node-a', ops, 'application/json-patch+json');
    expect((await denial(jp([{ op: 'remove', path: `/spec/taints/${otherIdx}` }]))).message).toContain(
      'may only remove the gating taints prewarm.dev/warming',
    );
    expect((await denial(jp([{ op: 'add', path: '/spec/taints/-', value: { key: 'evil', effect: 'NoSchedule' } }]))).code).toBe(403);
    expect((await denial(merge('int-node-a', { spec: { unschedulable: true } }))).message).toContain('may not change the node spec');
    const after = await jp([
      { op: 'test', path: `/spec/taints/${gateIdx}`, value: taints[gateIdx] },
      { op: 'remove', path: `/spec/taints/${gateIdx}` },
    ]);
    // The apiserver's TaintNodesByCondition admission adds node.kubernetes.io/not-ready at creation.
    expect(after.spec?.taints?.map((t) => t.key).filter((k) => !k.startsWith('node.kubernetes.io/'))).toEqual([OTHER.key]);
  });

  it("the pool pods' field selector leaves out our own pod and keeps the node's others", async () => {
    const names = async (fieldSelector: string): Promise<string[]> =>
      (
        await admin.json<{ items: KPod[] }>('GET', `/api/v1/namespaces/${NS}/pods?fieldSelector=${encodeURIComponent(fieldSelector)}`)
      ).items.map((p) => p.metadata.name ?? '');
    expect(await names('spec.nodeName=int-node-a')).toContain('pull-a');
    expect(await names('spec.nodeName=int-node-a,metadata.name!=pull-a')).not.toContain('pull-a');
    expect(await names('spec.nodeName=int-node-a,metadata.name!=pull-other')).toContain('pull-a');
  });

  it('a failed JSON-patch test is a 422 the controller treats as a conflict', async () => {
    const e = await denial(
      sa.json(
        'PATCH',
        '/api/v1/nodes/int-node-a',
        [
          { op: 'test', path: '/spec/taints/0', value: { key: 'nope', effect: 'NoSchedule' } },
          { op: 'remove', path: '/spec/taints/0' },
        ],
        'application/json-patch+json',
      ),
    );
    expect([409, 422]).toContain(e.code);
  });

  it('RBAC: no Secrets, no lists of nodes or of pods outside its namespaces, no node deletion; get/watch of its own pod, the pool pod list and Event creation work', async () => {
    expect(await status(sa.json('GET', `/api/v1/namespaces/${NS}/secrets`))).toBe(403);
    expect(await status(sa.json('GET', `/api/v1/namespaces/${NS}/secrets/any`))).toBe(403);
    expect(await status(sa.json('GET', '/api/v1/nodes'))).toBe(403);
    // The one list the sidecar makes: its pool's other pods on its node, in its own namespace only.
    await expect(new KubePoolPodSource(sa, NS, 'p', 'int-node-a', 'pull-a').list()).resolves.toMatchObject({ pods: [] });
    const poolPods = `labelSelector=${encodeURIComponent('prewarm.dev/pool-member=p')}&fieldSelector=${encodeURIComponent('spec.nodeName=int-node-a,metadata.name!=pull-a')}`;
    expect(await status(sa.json('GET', `/api/v1/namespaces/${NS}/pods?${poolPods}`))).toBe(200);
    expect(await status(sa.json('GET', `/api/v1/namespaces/default/pods?${poolPods}`))).toBe(403);
    expect(await status(sa.json('GET', `/api/v1/namespaces/kube-system/pods?${poolPods}`))).toBe(403);
    expect(await status(sa.json('GET', `/api/v1/pods?${poolPods}`))).toBe(403);
    expect(await status(sa.json('GET', '/api/v1/pods'))).toBe(403);
    expect(await status(sa.json('DELETE', '/api/v1/nodes/int-node-a'))).toBe(403);
    expect(await status(sa.json('GET', `/api/v1/namespaces/default/pods/x`))).toBe(403);
    expect(await status(sa.json('GET', `/api/v1/namespaces/${NS}/pods/pull-a`))).toBe(200);
    expect(await status(sa.json('GET', '/api/v1/nodes/int-node-a'))).toBe(200);
    const ac = new AbortController();
    const seen: string[] = [];
    const w = sa.watch(
      `/api/v1/namespaces/${NS}/pods?watch=true&fieldSelector=metadata.name%3Dpull-a&timeoutSeconds=2`,
      (o) => seen.push(o.type),
      ac.signal,
    );
    await w;
    expect(seen).toContain('ADDED');
    expect(
      await status(
        sa.json('POST', '/api/v1/namespaces/default/events', {
          metadata: { name: `int-ev-${Date.now()}` },
          involvedObject: { kind: 'Node', name: 'int-node-a' },
          reason: 'Warm',
          message: 'test',
          type: 'Normal',
        }),
      ),
    ).toBe(200);
    // Events about a Node must live in "default"; the pool namespace is not granted.
    expect(
      await status(
        sa.json('POST', `/api/v1/namespaces/${NS}/events`, {
          metadata: { name: `int-ev-${Date.now()}` },
          involvedObject: { kind: 'Pod', name: 'pull-a', namespace: NS },
          reason: 'Warm',
          message: 'test',
          type: 'Normal',
        }),
      ),
    ).toBe(403);
  });
});
