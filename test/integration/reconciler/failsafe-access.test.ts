/**
 * The fail-safe's access on a real kube-apiserver (RBAC, and the sidecars' ValidatingAdmissionPolicy,
 * which judges it too): with its ServiceAccount's pod-bound token, one look of the fail-safe's own
 * loop (real adapters) removes the gate taint from another node and posts its Event. Nothing else
 * on a node is allowed: no taint added, no other taint removed, no label, annotation, status or
 * other spec change; and no pod write.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAILSAFE_NAME } from '../../../src/contract/access-names.js';
import { EVENT_COMPONENT, EventReason } from '../../../src/contract/events.js';
import { DEFAULT_GATE_TAINT_KEY, EVENTS_NAMESPACE } from '../../../src/contract/names.js';
import { KubeHttp } from '../../../src/http/client.js';
import { KubeEventSink, KubeFailsafe } from '../../../src/reconciler/adapters/kube.js';
import { systemClock } from '../../../src/reconciler/adapters/system.js';
import { look } from '../../../src/reconciler/failsafe-loop.js';
import type { KNode } from '../../../src/reconciler/kube-types.js';
import type { Logger } from '../../../src/reconciler/ports.js';
import { waitFor } from '../../../harness/time.js';
import { pool, pools } from '../../reconciler/fixtures.js';
import { adminEndpoint, applyAccess, INT_ACCESS, makeNode, makePod, podToken, tokenEndpoint, status, denial } from './cluster.js';

const NS = INT_ACCESS.failsafeNamespace as string;
const GATE = { key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' } as const;
const OTHER = { key: 'dedicated', value: 'x', effect: 'NoSchedule' } as const;
/** The node the fail-safe's pod runs on, and the nodes it acts on (no sidecar runs on either). */
const HOME = 'int-fs-home';
const TARGET = 'int-fs-target';
const KEPT = 'int-fs-kept';
const SELECTOR = { 'int.prewarm.dev/failsafe': 'yes' };
/** One pool gating TARGET and KEPT (it tolerates OTHER), with the shortest deadline and grace: both are overdue seconds after their creation. */
const POOLS = pools(
  pool('int-fs', { namespace: NS, nodeSelector: SELECTOR, tolerations: [{ ...OTHER, operator: 'Equal' }], deadlineSeconds: 1 }),
);
const GRACE_SECONDS = 1;

let admin: KubeHttp;
let fs: KubeHttp;

const merge = (node: string, body: object): Promise<KNode> =>
  fs.json<KNode>('PATCH', `/api/v1/nodes/${node}`, body, 'application/strategic-merge-patch+json');
const jsonPatch = (node: string, ops: object[]): Promise<KNode> =>
  fs.json<KNode>('PATCH', `/api/v1/nodes/${node}`, ops, 'application/json-patch+json');
const taintKeys = (n: KNode): string[] => (n.spec?.taints ?? []).map((t) => t.key).filter((k) => !k.startsWith('node.kubernetes.io/'));

async function labelled(name: string, taints: { key: string; effect: string; value?: string }[]): Promise<void> {
  await makeNode(admin, name, taints);
  await admin.json('PATCH', `/api/v1/nodes/${name}`, { metadata: { labels: SELECTOR } }, 'application/strategic-merge-patch+json');
}

beforeAll(async () => {
  admin = new KubeHttp(adminEndpoint());
  await applyAccess(admin, INT_ACCESS);
  await makeNode(admin, HOME, []);
  await labelled(TARGET, [GATE, OTHER]);
  await labelled(KEPT, [GATE, OTHER]);
  try {
    await admin.json('DELETE', `/api/v1/namespaces/${NS}/pods/failsafe?gracePeriodSeconds=0`);
  } catch {
    // first run
  }
  await waitFor(
    'old pod gone',
    async () => (await status(admin.json('GET', `/api/v1/namespaces/${NS}/pods/failsafe`))) === 404,
    20_000,
    200,
  );
  const pod = await makePod(admin, NS, 'failsafe', HOME, FAILSAFE_NAME, []);
  fs = new KubeHttp(tokenEndpoint(await podToken(admin, NS, FAILSAFE_NAME, pod)));
  // The policy and its binding reach the admission plugin asynchronously: wait until a write
  // that only the policy forbids (RBAC grants node patches) is denied. Each probe writes a new
  // value: a write that changes nothing is one the policy allows.
  await waitFor(
    'the admission policy to be enforced',
    async () => (await status(merge(HOME, { metadata: { labels: { 'prewarm.dev/probe': String(Date.now()) } } }))) === 403,
    30_000,
    200,
  );
});

afterAll(() => {
  admin?.close();
  fs?.close();
});

describe("the fail-safe's access on a real apiserver", () => {
  it('one look removes the gate taint from a node it does not run on, with its Event, and leaves every other taint', async () => {
    const created = Date.parse(String((await admin.json<KNode>('GET', `/api/v1/nodes/${TARGET}`)).metadata.creationTimestamp));
    await new Promise((r) => setTimeout(r, Math.max(0, created + (1 + GRACE_SECONDS + 1) * 1000 - Date.now())));
    const logged: string[] = [];
    const log: Logger = { info: () => undefined, warn: (m) => logged.push(m), error: (m) => logged.push(m) };
    const ports = {
      kube: new KubeFailsafe(fs, () => [NS]),
      events: new KubeEventSink(fs, { podName: 'failsafe', nodeName: HOME }, () => Date.now()),
      clock: systemClock,
      log,
    };
    // KEPT is overdue too, so one look takes both; the look releases at most one gate per node.
    const result = await look(ports, POOLS, GRACE_SECONDS);
    // Each removal is logged as a warning; nothing failed.
    expect(logged).toEqual(result.released.map(() => 'gate taint removed: no sidecar runs on the node past its bound'));
    expect([...result.released].sort()).toEqual([KEPT, TARGET].sort());
    const after = await admin.json<KNode>('GET', `/api/v1/nodes/${TARGET}`);
    expect(taintKeys(after)).toEqual([OTHER.key]);
    expect(after.metadata.labels).toMatchObject(SELECTOR);
    const events = await admin.json<{ items: { reason: string; source?: { component?: string }; involvedObject: { uid?: string } }[] }>(
      'GET',
      `/api/v1/namespaces/${EVENTS_NAMESPACE}/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${TARGET}`)}`,
    );
    const ours = events.items.filter((e) => e.involvedObject.uid === after.metadata.uid && e.source?.component === EVENT_COMPONENT);
    expect(ours.map((e) => e.reason)).toEqual([EventReason.GateFailsafeOpened]);
  });

  it('denies adding a taint and removing any taint but the gate', async () => {
    // The gate back on KEPT (as admin), so that removing OTHER is the only change asked.
    await admin.json('PATCH', `/api/v1/nodes/${KEPT}`, { spec: { taints: [GATE, OTHER] } }, 'application/merge-patch+json');
    const node = await admin.json<KNode>('GET', `/api/v1/nodes/${KEPT}`);
    const taints = node.spec?.taints ?? [];
    const otherIdx = taints.findIndex((t) => t.key === OTHER.key);
    expect(otherIdx).toBeGreaterThanOrEqual(0);
    expect((await denial(jsonPatch(KEPT, [{ op: 'remove', path: `/spec/taints/${otherIdx}` }]))).message).toContain(
      `may only remove the gating taints ${DEFAULT_GATE_TAINT_KEY}`,
    );
    expect(
      (await denial(jsonPatch(KEPT, [{ op: 'add', path: '/spec/taints/-', value: { key: 'evil', effect: 'NoSchedule' } }]))).code,
    ).toBe(403);
    // Not even the gate taint, back on a node it was removed from.
    expect((await denial(jsonPatch(TARGET, [{ op: 'add', path: '/spec/taints/-', value: GATE }]))).code).toBe(403);
    expect(taintKeys(await admin.json<KNode>('GET', `/api/v1/nodes/${KEPT}`)).sort()).toEqual([GATE.key, OTHER.key].sort());
  });

  it("denies any label or annotation change, prewarm's own keys included", async () => {
    const message = 'the prewarm fail-safe may only remove the gating taints: no node label or annotation';
    expect((await denial(merge(KEPT, { metadata: { labels: { 'prewarm.dev/int-fs': 'warm' } } }))).message).toContain(message);
    expect((await denial(merge(KEPT, { metadata: { labels: { 'int.prewarm.dev/failsafe': null } } }))).code).toBe(403);
    expect((await denial(merge(KEPT, { metadata: { labels: { 'example.com/team': 'a' } } }))).code).toBe(403);
    expect((await denial(merge(KEPT, { metadata: { annotations: { 'status.prewarm.dev/int-fs': '{"v":1}' } } }))).message).toContain(
      message,
    );
    expect((await denial(merge(KEPT, { metadata: { annotations: { 'example.com/note': 'x' } } }))).code).toBe(403);
  });

  it('denies other spec changes, the node status, finalizers and deletion', async () => {
    expect((await denial(merge(KEPT, { spec: { unschedulable: true } }))).message).toContain('may not change the node spec');
    expect((await denial(merge(KEPT, { metadata: { finalizers: ['example.com/hold'] } }))).code).toBe(403);
    expect(
      await status(
        fs.json('PATCH', `/api/v1/nodes/${KEPT}/status`, { status: { conditions: [] } }, 'application/strategic-merge-patch+json'),
      ),
    ).toBe(403);
    expect(await status(fs.json('DELETE', `/api/v1/nodes/${KEPT}`))).toBe(403);
    expect(await status(fs.json('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'int-fs-new' } }))).toBe(403);
  });

  it('RBAC: lists nodes and pool pods, creates Events in default; no pod writes, no Secrets, no Events elsewhere', async () => {
    expect(await status(fs.json('GET', '/api/v1/nodes?limit=1'))).toBe(200);
    expect(await status(fs.json('GET', `/api/v1/namespaces/${NS}/pods?labelSelector=prewarm.dev%2Fpool`))).toBe(200);
    expect(await status(fs.json('GET', '/api/v1/namespaces/kube-system/pods'))).toBe(403);
    expect(await status(fs.json('GET', '/api/v1/pods'))).toBe(403);
    const podPath = `/api/v1/namespaces/${NS}/pods/failsafe`;
    expect(await status(fs.json('PATCH', podPath, { metadata: { labels: { x: 'y' } } }, 'application/strategic-merge-patch+json'))).toBe(
      403,
    );
    expect(
      await status(fs.json('PATCH', `${podPath}/status`, { status: { phase: 'Running' } }, 'application/strategic-merge-patch+json')),
    ).toBe(403);
    expect(await status(fs.json('DELETE', podPath))).toBe(403);
    expect(await status(fs.json('POST', `/api/v1/namespaces/${NS}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' } }))).toBe(
      403,
    );
    expect(await status(fs.json('GET', `/api/v1/namespaces/${NS}/secrets`))).toBe(403);
    const event = (ns: string) =>
      fs.json('POST', `/api/v1/namespaces/${ns}/events`, {
        metadata: { name: `int-fs-ev-${Date.now()}` },
        involvedObject: { kind: 'Node', name: KEPT },
        reason: EventReason.GateFailsafeOpened,
        message: 'test',
        type: 'Warning',
      });
    expect(await status(event(EVENTS_NAMESPACE))).toBe(200);
    expect(await status(event(NS))).toBe(403);
  });
});
