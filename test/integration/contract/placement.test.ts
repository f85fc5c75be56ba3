/**
 * Placement against the real control plane: the nodes where Kubernetes' own DaemonSet controller
 * and scheduler place a pool's pull pod must be exactly the nodes where the sidecar's predicate
 * (pools.json as synthesized, parsed as the sidecar parses it) says the pool selects the node.
 *
 * Pools of both dialects (selectors of 0, 1 and 2 labels; Exists and Equal tolerations with and
 * without key, effect and tolerationSeconds; gating and not) are synthesized by the real synth and
 * applied, then crossed with kubelet-less Node objects carrying label and taint combinations:
 * NoSchedule, PreferNoSchedule and NoExecute taints, the pool's gate taint, and the
 * `node.kubernetes.io/*` taints that daemon pods tolerate by themselves (or, by effect, do not).
 * One pool pulls early: its pullers must land, in addition, on the nodes that only its start-up
 * tolerations admit (a registered, not yet Ready node among them), and every pod the controller
 * makes in its owned namespace must pass the synthesized early-pull admission policy.
 *
 * This file runs its own etcd + apiserver with kube-controller-manager (daemonset and
 * serviceaccount controllers only) and kube-scheduler: the shared integration apiserver hosts
 * tests that fake DaemonSet status and pods by hand, which a running DaemonSet controller would
 * overwrite. No node lifecycle controller runs, so nobody adds or removes taints behind the table
 * once it is set.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { placementSelectsNode, withStartupTolerations, type Taint } from '../../../src/contract/placement.js';
import { isEarlyPuller } from '../../../src/contract/roles.js';
import { parsePoolsFile, type PoolEntry } from '../../../src/contract/pools-file.js';
import { buildBundle } from '../../../src/imagecache/bundle.js';
import { parseFiles } from '../../../src/imagecache/parse.js';
import { KubeHttp } from '../../../src/http/client.js';
import { synthYaml } from '../../../src/synth/app.js';
import { LABEL_POOL, LABEL_POOL_MEMBER, LABEL_PULLER, POOLS_FILE } from '../../../src/contract/names.js';
import { startLoopbackControlPlane, type LoopbackControlPlane } from '../../../harness/cluster/loopback.js';
import { waitFor } from '../../../harness/time.js';
import { apply, endpointOf, makeSchedulableNode } from '../reconciler/cluster.js';

const GATE = 'prewarm.dev/warming';

/** ImageCaches crossing selector and toleration shapes; every entry becomes its own pool. */
const SPECS = [
  `apiVersion: prewarm.dev/v1alpha1
kind: ImageCache
metadata: {name: shapes, namespace: place}
spec:
  cacheSpec:
  - pool: everywhere
    images: [reg.invalid/a:1]
  - pool: backend-a
    images: [reg.invalid/b:1]
    nodeSelector: {tier: backend, zone: a}
  - pool: zone-a
    images: [reg.invalid/c:1]
    nodeSelector: {zone: a}
  - pool: keyless-noexecute
    images: [reg.invalid/d:1]
    tolerations: [{operator: Exists, effect: NoExecute}]
  - pool: gpu-equal
    images: [reg.invalid/e:1]
    nodeSelector: {gpu: a100}
    tolerations: [{key: gpu, operator: Equal, value: a100, effect: NoSchedule}]
  - pool: gpu-exists
    images: [reg.invalid/f:1]
    tolerations: [{key: gpu, operator: Exists}]
  - pool: spot-seconds
    images: [reg.invalid/g:1]
    tolerations: [{key: spot, operator: Equal, value: "true", effect: NoExecute, tolerationSeconds: 30}]
  - pool: notready-noschedule
    images: [reg.invalid/h:1]
    tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoSchedule}]
`,
  `apiVersion: prewarm.dev/v1alpha1
kind: ImageCache
metadata: {name: ungated, namespace: place}
spec:
  gate: {enabled: false}
  cacheSpec:
  - pool: ungated
    images: [reg.invalid/i:1]
    tolerations: [{key: dedicated, operator: Exists, effect: NoSchedule}]
`,
  // kube-fledged's own format, unchanged: a two-label selector; its Jobs tolerate every taint.
  `apiVersion: kubefledged.io/v1alpha2
kind: ImageCache
metadata: {name: imagecache1, namespace: place-kf}
spec:
  cacheSpec:
  - images: [reg.invalid/j:1]
    nodeSelector: {tier: backend, zone: a}
  - images: [reg.invalid/k:1]
`,
  // Early pullers: on the host network, tolerating a starting node's taints; their namespace is
  // owned, so the pods the controller makes also pass the synthesized early-pull admission policy.
  `apiVersion: prewarm.dev/v1alpha1
kind: ImageCache
metadata: {name: early, namespace: place-early}
spec:
  lanes: 2
  earlyPull: true
  cacheSpec:
  - pool: early
    images: [reg.invalid/l:1, reg.invalid/m:1]
`,
];

/** The namespace synth owns: the early-pull pool's. */
const OWNED = 'place-early';

interface NodeCase {
  readonly name: string;
  readonly labels?: Record<string, string>;
  readonly taints?: Taint[];
  readonly unschedulable?: boolean;
}

const NODES: readonly NodeCase[] = [
  { name: 'plain' },
  { name: 'backend-a', labels: { tier: 'backend', zone: 'a' } },
  { name: 'backend-b', labels: { tier: 'backend', zone: 'b' } },
  { name: 'zone-a', labels: { zone: 'a' } },
  { name: 'gpu-a100', labels: { gpu: 'a100' }, taints: [{ key: 'gpu', value: 'a100', effect: 'NoSchedule' }] },
  { name: 'gpu-h100', labels: { gpu: 'a100' }, taints: [{ key: 'gpu', value: 'h100', effect: 'NoSchedule' }] },
  { name: 'spot', taints: [{ key: 'spot', value: 'true', effect: 'NoExecute' }] },
  { name: 'spot-false', taints: [{ key: 'spot', value: 'false', effect: 'NoExecute' }] },
  { name: 'dedicated', taints: [{ key: 'dedicated', effect: 'NoSchedule' }] },
  { name: 'prefer', taints: [{ key: 'dedicated', effect: 'PreferNoSchedule' }] },
  { name: 'gated', labels: { tier: 'backend', zone: 'a' }, taints: [{ key: GATE, effect: 'NoSchedule' }] },
  { name: 'gated-noexecute', taints: [{ key: GATE, effect: 'NoExecute' }] },
  { name: 'not-ready', taints: [{ key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' }] },
  { name: 'not-ready-noschedule', taints: [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }] },
  { name: 'unschedulable', unschedulable: true, taints: [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }] },
  { name: 'disk-pressure-noexecute', taints: [{ key: 'node.kubernetes.io/disk-pressure', effect: 'NoExecute' }] },
  { name: 'memory-pressure', taints: [{ key: 'node.kubernetes.io/memory-pressure', effect: 'NoSchedule' }] },
  { name: 'network-unavailable', taints: [{ key: 'node.kubernetes.io/network-unavailable', effect: 'NoSchedule' }] },
  { name: 'noexecute-other', taints: [{ key: 'maintenance', effect: 'NoExecute' }] },
  // Registered, not yet Ready: the start-up taints of a cloud node that Karpenter made, and the gate.
  {
    name: 'starting',
    taints: [
      { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/network-unavailable', effect: 'NoSchedule' },
      { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' },
      { key: 'karpenter.sh/unregistered', effect: 'NoExecute' },
      { key: GATE, effect: 'NoSchedule' },
    ],
  },
];

const nodeName = (c: NodeCase): string => `place-${c.name}`;

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
}

interface PodList {
  items: {
    metadata: { name: string; labels?: Record<string, string> };
    spec: { nodeName?: string; affinity?: unknown };
    status?: { phase?: string };
  }[];
}

let cp: LoopbackControlPlane;
let http: KubeHttp;
let pools: PoolEntry[];
/** Pool ids whose pullers pull early, read from the synthesized puller DaemonSets. */
let early: Set<string>;
/** DaemonSets synth emitted: every pool's holder and its burst pullers (default lanes). */
let daemonSetCount = 0;

beforeAll(async () => {
  cp = await startLoopbackControlPlane('place', (m) => console.log(`[placement] ${m}`), {
    controllers: ['daemonset', 'serviceaccount'],
    scheduler: true,
  });
  http = new KubeHttp(endpointOf(cp.kubeconfig));
  for (const c of NODES) {
    await makeSchedulableNode(http, nodeName(c), {
      ...(c.labels === undefined ? {} : { labels: c.labels }),
      ...(c.taints === undefined ? {} : { taints: c.taints }),
      ...(c.unschedulable === undefined ? {} : { unschedulable: c.unschedulable }),
    });
  }
  const parsed = parseFiles(SPECS.map((text, i) => ({ path: `placement-${i}.yaml`, text })));
  const errors = parsed.diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) throw new Error(`bad placement specs: ${JSON.stringify(errors)}`);
  const bundle = buildBundle(parsed.caches);
  if (bundle.diagnostics.length > 0) throw new Error(`bad placement bundle: ${JSON.stringify(bundle.diagnostics)}`);
  const docs = parseAllDocuments(
    synthYaml(bundle.bundle, { reconciler: { image: 'reg.invalid/prewarm-reconciler:test' }, ownedNamespaces: [OWNED] }),
  )
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null);
  // Namespaces first, so the objects in them can be created; the sidecar's ServiceAccount exists
  // in each namespace through the synthesized objects, the `default` one through its controller.
  const order = (o: Obj): number => (o.kind === 'Namespace' ? 0 : o.kind === 'DaemonSet' ? 2 : 1);
  for (const o of [...docs].sort((a, b) => order(a) - order(b))) await apply(http, o);
  const poolsFile = docs.find((o) => o.kind === 'ConfigMap' && o.data?.[POOLS_FILE] !== undefined)?.data?.[POOLS_FILE];
  if (poolsFile === undefined) throw new Error('synth emitted no pools.json');
  pools = [...parsePoolsFile(poolsFile).pools];
  daemonSetCount = docs.filter((o) => o.kind === 'DaemonSet').length;
  early = new Set(
    docs.flatMap((o) => {
      const ds = o as Obj & { spec?: { template?: { metadata?: { labels?: Record<string, string> }; spec?: { hostNetwork?: boolean } } } };
      const labels = ds.spec?.template?.metadata?.labels;
      return o.kind === 'DaemonSet' && isEarlyPuller(labels, ds.spec?.template?.spec) ? [labels?.[LABEL_POOL_MEMBER] ?? ''] : [];
    }),
  );
}, 180_000);

afterAll(async () => {
  await cp?.stop();
});

/**
 * pool id → sorted node names, where the sidecar's predicate says the pool selects the node; with
 * `pullers`, where its burst pullers run (with the start-up tolerations, for a pool that pulls early).
 */
function predicted(pullers = false): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const pool of pools) {
    const placement = pullers && early.has(pool.id) ? withStartupTolerations(pool.placement) : pool.placement;
    out[pool.id] = NODES.filter((c) =>
      placementSelectsNode(placement, {
        metadata: { labels: { 'kubernetes.io/hostname': nodeName(c), ...c.labels } },
        spec: { taints: c.taints ?? [] },
      }),
    )
      .map(nodeName)
      .sort();
  }
  return out;
}

/**
 * Where the pods landed, once every pod is bound and the counts settled: pool id → sorted node
 * names of its holder's pods, and puller selector value → its pool id and sorted node names.
 */
async function placed(): Promise<{ holders: Record<string, string[]>; pullers: Record<string, { pool: string; nodes: string[] }> }> {
  let previous = '';
  return waitFor(
    'every pull pod bound, and DaemonSet counts settled',
    async () => {
      const dss = await http.json<{
        items: {
          metadata: { name: string; namespace: string; generation: number };
          status?: { observedGeneration?: number; desiredNumberScheduled?: number };
        }[];
      }>('GET', '/apis/apps/v1/daemonsets');
      if (dss.items.length !== daemonSetCount) return undefined;
      if (dss.items.some((d) => d.status?.observedGeneration !== d.metadata.generation)) return undefined;
      const pods = await http.json<PodList>('GET', '/api/v1/pods');
      const holders: Record<string, string[]> = Object.fromEntries(pools.map((p) => [p.id, [] as string[]]));
      const pullers: Record<string, { pool: string; nodes: string[] }> = {};
      let ours = 0;
      for (const pod of pods.items) {
        const id = pod.metadata.labels?.[LABEL_POOL];
        const lane = pod.metadata.labels?.[LABEL_PULLER];
        if (id === undefined && lane === undefined) continue;
        ours++;
        // Every pod the controller made must be bound by the scheduler: an unbound one means the
        // two disagree, and the table below would count it nowhere.
        if (pod.spec.nodeName === undefined) return undefined;
        if (id !== undefined) holders[id]?.push(pod.spec.nodeName);
        else if (lane !== undefined) {
          const entry = (pullers[lane] ??= { pool: pod.metadata.labels?.[LABEL_POOL_MEMBER] ?? '', nodes: [] });
          entry.nodes.push(pod.spec.nodeName);
        }
      }
      const desired = dss.items.reduce((n, d) => n + (d.status?.desiredNumberScheduled ?? -1), 0);
      if (desired !== ours) return undefined;
      for (const id of Object.keys(holders)) holders[id]?.sort();
      for (const p of Object.values(pullers)) p.nodes.sort();
      // Settled: the same answer twice in a row.
      const got = { holders, pullers };
      const text = JSON.stringify(got);
      const settled = text === previous;
      previous = text;
      return settled ? got : undefined;
    },
    180_000,
    500,
  );
}

describe('placement on the real DaemonSet controller and scheduler', () => {
  it('puts each pool exactly on the nodes the sidecar predicate selects', async () => {
    const want = predicted();
    const { holders: got, pullers } = await placed();
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      // What the apiserver holds, to tell a wrong prediction from a node that is not what the table says.
      const nodes = await http.json<{ items: { metadata: { name: string }; spec?: { taints?: unknown } }[] }>('GET', '/api/v1/nodes');
      for (const n of nodes.items) console.log(`node ${n.metadata.name} taints ${JSON.stringify(n.spec?.taints ?? [])}`);
      const pods = await http.json<{ items: { metadata: { name: string }; spec: { nodeName?: string; tolerations?: unknown } }[] }>(
        'GET',
        '/api/v1/pods',
      );
      for (const p of pods.items.slice(0, 3))
        console.log(`pod ${p.metadata.name} on ${p.spec.nodeName} tolerations ${JSON.stringify(p.spec.tolerations)}`);
    }
    expect(got).toEqual(want);
    // Burst pullers (no node here is warm yet) land exactly where their pool's holder does.
    expect(Object.keys(pullers).length).toBeGreaterThan(0);
    // Burst pullers land where their pool's holder does, and early pullers on starting nodes too.
    const wantPullers = predicted(true);
    for (const [lane, p] of Object.entries(pullers)) expect(p.nodes, `puller ${lane}`).toEqual(wantPullers[p.pool]);
    expect([...early]).toEqual(['early']);
    expect(wantPullers['early']).toContain('place-starting');
    expect(wantPullers['early']).toContain('place-not-ready-noschedule');
    expect(wantPullers['early']).toContain('place-network-unavailable');
    expect(want['early']).not.toContain('place-starting');
    // Its two lanes and lane 0, the sidecar's image.
    expect(Object.values(pullers).filter((p) => p.pool === 'early')).toHaveLength(3);
    // The table must exercise both answers for the shapes the contract is about.
    const backend = pools.find((p) => p.id.startsWith('backend-a'));
    expect(backend && want[backend.id]).toEqual(['place-backend-a', 'place-gated']);
    const keyless = pools.find((p) => p.id.startsWith('keyless-noexecute'));
    expect(keyless && want[keyless.id]).not.toContain('place-dedicated');
    expect(keyless && want[keyless.id]).toContain('place-spot');
    console.log(
      `placement: ${pools.length} pools x ${NODES.length} nodes, ${Object.values(got).reduce((n, v) => n + v.length, 0)} pull pods and ${Object.values(pullers).reduce((n, v) => n + v.nodes.length, 0)} burst pullers placed as predicted`,
    );
  }, 240_000);
});
