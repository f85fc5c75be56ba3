/**
 * `workloadFitsPool` against the real kube-scheduler: for each case of the table, a pool and a
 * workload's pod spec, Node objects shaped like the pool's nodes (its selector labels, the taints
 * its keyed NoSchedule/NoExecute tolerations name, and each node's own extra labels, taint values
 * and name) are created, and one pod of the workload per node, pinned to that node by a label no
 * case uses. The scheduler binds it or reports it Unschedulable; "fits" is every node binding its
 * pod, "none" no node, "partial" some. The placement discover reads comes from the pod spec as a
 * manifest, through the same reader (`readWorkloads`), so the reader is checked too.
 *
 * The table's nodes must show what the model claims: a "partial" case needs a node that binds and
 * one that does not. A pool's gate taint is not on its nodes (the model asks about a warm node,
 * which has lost it). `spec.nodeName` is not here: such a pod never meets the scheduler.
 *
 * Its own etcd + apiserver + kube-scheduler (no controller manager, so no node lifecycle controller
 * changes the table's taints), all nodes created once, every pod at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { workloadFitsPool, type PoolPlacement, type Taint, type Toleration } from '../../../src/contract/placement.js';
import { readWorkloads } from '../../../src/discover/manifests.js';
import { KubeHttp } from '../../../src/http/client.js';
import { startLoopbackControlPlane, type LoopbackControlPlane } from '../../../harness/cluster/loopback.js';
import { waitFor } from '../../../harness/time.js';
import { apply, endpointOf, makeSchedulableNode } from '../reconciler/cluster.js';

const NS = 'wfit';
/** The label that pins each pod to its one node; no case names it. */
const PIN = 'placement.test.prewarm.dev/node';
const GATE = 'prewarm.dev/warming';

interface NodeShape {
  /** Labels beyond the pool's selector. */
  readonly labels?: Record<string, string>;
  /** Replaces the case's taints. */
  readonly taints?: readonly Taint[];
  /** The node's name, for cases that select by name. */
  readonly name?: string;
}

interface Case {
  readonly name: string;
  readonly pool: { readonly nodeSelector?: Record<string, string>; readonly tolerations?: readonly Toleration[]; readonly gate?: boolean };
  /** The taints every node of the pool carries, unless a node says otherwise. */
  readonly taints?: readonly Taint[];
  /** The workload's pod spec fields that decide placement. */
  readonly pod: Record<string, unknown>;
  readonly nodes: readonly NodeShape[];
}

const aff = (...terms: Record<string, unknown>[]) => ({
  affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } },
});
const expr = (key: string, operator: string, values?: string[]) => ({ key, operator, ...(values ? { values } : {}) });
const gpuTaint = (value: string, effect = 'NoSchedule'): Taint => ({ key: 'gpu', value, effect });

/** A pool whose nodes carry a gpu taint of each effect, of any value. */
const GPU_BOTH_EFFECTS: Pick<Case, 'pool' | 'taints'> = {
  pool: {
    tolerations: [
      { key: 'gpu', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'gpu', operator: 'Exists', effect: 'NoExecute' },
    ],
  },
  taints: [gpuTaint('a100'), gpuTaint('a100', 'NoExecute')],
};

/** A pool whose nodes carry spot=true:NoExecute and a gpu:NoSchedule taint of any value. */
const SPOT_AND_GPU: Pick<Case, 'pool' | 'taints'> = {
  pool: {
    tolerations: [
      { key: 'spot', operator: 'Equal', value: 'true', effect: 'NoExecute' },
      { key: 'gpu', operator: 'Exists', effect: 'NoSchedule' },
    ],
  },
  taints: [{ key: 'spot', value: 'true', effect: 'NoExecute' }, gpuTaint('a100')],
};

const CASES: readonly Case[] = [
  { name: 'no-requirement', pool: { nodeSelector: { tier: 'web' } }, pod: {}, nodes: [{}, { labels: { zone: 'a' } }] },
  {
    name: 'selector-match',
    pool: { nodeSelector: { tier: 'web' } },
    pod: { nodeSelector: { tier: 'web' } },
    nodes: [{}, { labels: { zone: 'a' } }],
  },
  {
    name: 'selector-other',
    pool: { nodeSelector: { tier: 'web' } },
    pod: { nodeSelector: { tier: 'db' } },
    nodes: [{}, { labels: { zone: 'a' } }],
  },
  {
    name: 'selector-unfixed',
    pool: { nodeSelector: { tier: 'web' } },
    pod: { nodeSelector: { zone: 'a' } },
    nodes: [{ labels: { zone: 'a' } }, { labels: { zone: 'b' } }, {}],
  },
  {
    name: 'in',
    pool: { nodeSelector: { tier: 'web' } },
    pod: aff({ matchExpressions: [expr('tier', 'In', ['web', 'api'])] }),
    nodes: [{}],
  },
  {
    name: 'in-unfixed',
    pool: { nodeSelector: { tier: 'web' } },
    pod: aff({ matchExpressions: [expr('zone', 'In', ['a', 'b'])] }),
    nodes: [{ labels: { zone: 'a' } }, { labels: { zone: 'c' } }, {}],
  },
  {
    name: 'notin-fixed',
    pool: { nodeSelector: { tier: 'web' } },
    pod: aff({ matchExpressions: [expr('tier', 'NotIn', ['web'])] }),
    nodes: [{}],
  },
  {
    name: 'notin-unfixed',
    pool: { nodeSelector: { tier: 'web' } },
    pod: aff({ matchExpressions: [expr('spot', 'NotIn', ['true'])] }),
    nodes: [{}, { labels: { spot: 'false' } }, { labels: { spot: 'true' } }],
  },
  { name: 'exists', pool: { nodeSelector: { tier: 'web' } }, pod: aff({ matchExpressions: [expr('tier', 'Exists')] }), nodes: [{}] },
  {
    name: 'exists-unfixed',
    pool: { nodeSelector: { tier: 'web' } },
    pod: aff({ matchExpressions: [expr('gpu', 'Exists')] }),
    nodes: [{}, { labels: { gpu: 'a100' } }],
  },
  {
    name: 'doesnotexist',
    pool: { nodeSelector: { tier: 'web' } },
    pod: aff({ matchExpressions: [expr('tier', 'DoesNotExist')] }),
    nodes: [{}],
  },
  {
    name: 'doesnotexist-unfixed',
    pool: {},
    pod: aff({ matchExpressions: [expr('gpu', 'DoesNotExist')] }),
    nodes: [{}, { labels: { gpu: 'a100' } }],
  },
  { name: 'gt', pool: { nodeSelector: { cores: '16' } }, pod: aff({ matchExpressions: [expr('cores', 'Gt', ['8'])] }), nodes: [{}] },
  { name: 'gt-equal', pool: { nodeSelector: { cores: '8' } }, pod: aff({ matchExpressions: [expr('cores', 'Gt', ['8'])] }), nodes: [{}] },
  { name: 'gt-zeros', pool: { nodeSelector: { cores: '016' } }, pod: aff({ matchExpressions: [expr('cores', 'Gt', ['8'])] }), nodes: [{}] },
  {
    name: 'gt-no-integer',
    pool: { nodeSelector: { cores: 'many' } },
    pod: aff({ matchExpressions: [expr('cores', 'Gt', ['8'])] }),
    nodes: [{}],
  },
  { name: 'lt', pool: { nodeSelector: { cores: '4' } }, pod: aff({ matchExpressions: [expr('cores', 'Lt', ['8'])] }), nodes: [{}] },
  {
    name: 'lt-unfixed',
    pool: {},
    pod: aff({ matchExpressions: [expr('cores', 'Lt', ['8'])] }),
    nodes: [{ labels: { cores: '7' } }, { labels: { cores: '8' } }, {}],
  },
  {
    name: 'gt-lt-range',
    pool: { nodeSelector: { cores: '5' } },
    pod: aff({ matchExpressions: [expr('cores', 'Gt', ['4']), expr('cores', 'Lt', ['6'])] }),
    nodes: [{}],
  },
  {
    name: 'terms-or',
    pool: { nodeSelector: { tier: 'web' } },
    pod: aff({ matchExpressions: [expr('tier', 'In', ['db'])] }, { matchExpressions: [expr('tier', 'In', ['web'])] }),
    nodes: [{}, { labels: { zone: 'a' } }],
  },
  {
    // Together the terms cover every value of zone: a, and not a.
    name: 'terms-cover',
    pool: {},
    pod: aff({ matchExpressions: [expr('zone', 'In', ['a'])] }, { matchExpressions: [expr('zone', 'NotIn', ['a'])] }),
    nodes: [{}, { labels: { zone: 'a' } }, { labels: { zone: 'b' } }],
  },
  {
    name: 'terms-gap',
    pool: {},
    pod: aff({ matchExpressions: [expr('zone', 'In', ['a'])] }, { matchExpressions: [expr('zone', 'DoesNotExist')] }),
    nodes: [{}, { labels: { zone: 'a' } }, { labels: { zone: 'b' } }],
  },
  {
    name: 'term-and',
    pool: { nodeSelector: { tier: 'web', zone: 'a' } },
    pod: aff({ matchExpressions: [expr('tier', 'In', ['web']), expr('zone', 'NotIn', ['a'])] }),
    nodes: [{}],
  },
  {
    name: 'fields-in',
    pool: { nodeSelector: { tier: 'web' } },
    pod: aff({ matchFields: [expr('metadata.name', 'In', ['wfit-named-a'])] }),
    nodes: [{ name: 'wfit-named-a' }, { name: 'wfit-named-b' }],
  },
  {
    name: 'fields-notin',
    pool: {},
    pod: aff({ matchFields: [expr('metadata.name', 'NotIn', ['wfit-named-c'])] }),
    nodes: [{ name: 'wfit-named-c' }, { name: 'wfit-named-d' }],
  },
  {
    name: 'fields-and-label',
    pool: { nodeSelector: { tier: 'web' } },
    pod: aff({ matchExpressions: [expr('tier', 'In', ['db'])], matchFields: [expr('metadata.name', 'In', ['wfit-named-e'])] }),
    nodes: [{ name: 'wfit-named-e' }, { name: 'wfit-named-f' }],
  },
  {
    name: 'preferred-only',
    pool: { nodeSelector: { tier: 'web' } },
    pod: {
      affinity: {
        nodeAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 100, preference: { matchExpressions: [expr('tier', 'In', ['db'])] } },
          ],
        },
      },
    },
    nodes: [{}, { labels: { zone: 'a' } }],
  },
  {
    name: 'taint-untolerated',
    pool: { nodeSelector: { gpu: 'a100' }, tolerations: [{ key: 'gpu', operator: 'Equal', value: 'a100', effect: 'NoSchedule' }] },
    taints: [gpuTaint('a100')],
    pod: { nodeSelector: { gpu: 'a100' } },
    nodes: [{}],
  },
  {
    name: 'taint-equal',
    pool: { nodeSelector: { gpu: 'a100' }, tolerations: [{ key: 'gpu', operator: 'Equal', value: 'a100', effect: 'NoSchedule' }] },
    taints: [gpuTaint('a100')],
    pod: { tolerations: [{ key: 'gpu', operator: 'Equal', value: 'a100', effect: 'NoSchedule' }] },
    nodes: [{}],
  },
  {
    name: 'taint-equal-other-value',
    pool: { tolerations: [{ key: 'gpu', operator: 'Equal', value: 'a100', effect: 'NoSchedule' }] },
    taints: [gpuTaint('a100')],
    pod: { tolerations: [{ key: 'gpu', operator: 'Equal', value: 'h100', effect: 'NoSchedule' }] },
    nodes: [{}],
  },
  {
    name: 'taint-any-value-equal',
    pool: { tolerations: [{ key: 'gpu', operator: 'Exists', effect: 'NoSchedule' }] },
    taints: [gpuTaint('a100')],
    pod: { tolerations: [{ key: 'gpu', value: 'a100', effect: 'NoSchedule' }] },
    nodes: [{}, { taints: [gpuTaint('h100')] }, { taints: [gpuTaint('')] }],
  },
  {
    name: 'taint-any-value-exists',
    pool: { tolerations: [{ key: 'gpu', operator: 'Exists', effect: 'NoSchedule' }] },
    taints: [gpuTaint('a100')],
    pod: { tolerations: [{ key: 'gpu', operator: 'Exists', effect: 'NoSchedule' }] },
    nodes: [{}, { taints: [gpuTaint('h100')] }, { taints: [gpuTaint('')] }],
  },
  {
    name: 'taint-two-values',
    pool: {
      tolerations: [
        { key: 'gpu', operator: 'Equal', value: 'a100', effect: 'NoSchedule' },
        { key: 'gpu', operator: 'Equal', value: 'h100', effect: 'NoSchedule' },
      ],
    },
    taints: [gpuTaint('a100')],
    pod: { tolerations: [{ key: 'gpu', operator: 'Equal', value: 'a100', effect: 'NoSchedule' }] },
    nodes: [{}, { taints: [gpuTaint('h100')] }],
  },
  {
    name: 'toleration-effectless',
    ...GPU_BOTH_EFFECTS,
    pod: { tolerations: [{ key: 'gpu', operator: 'Exists' }] },
    nodes: [{}, { taints: [gpuTaint('x'), gpuTaint('y', 'NoExecute')] }],
  },
  {
    name: 'toleration-wrong-effect',
    ...GPU_BOTH_EFFECTS,
    pod: { tolerations: [{ key: 'gpu', operator: 'Exists', effect: 'NoSchedule' }] },
    nodes: [{}],
  },
  {
    name: 'toleration-keyless',
    ...SPOT_AND_GPU,
    pod: { tolerations: [{ operator: 'Exists' }] },
    nodes: [{}, { taints: [{ key: 'spot', value: 'true', effect: 'NoExecute' }, gpuTaint('other')] }],
  },
  {
    name: 'toleration-keyless-effect',
    ...SPOT_AND_GPU,
    pod: { tolerations: [{ operator: 'Exists', effect: 'NoSchedule' }] },
    nodes: [{}],
  },
  {
    name: 'noexecute-tolerated',
    pool: { tolerations: [{ key: 'spot', operator: 'Equal', value: 'true', effect: 'NoExecute', tolerationSeconds: 30 }] },
    taints: [{ key: 'spot', value: 'true', effect: 'NoExecute' }],
    pod: { tolerations: [{ key: 'spot', operator: 'Equal', value: 'true', effect: 'NoExecute', tolerationSeconds: 60 }] },
    nodes: [{}],
  },
  {
    name: 'prefer-no-schedule',
    pool: { tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'PreferNoSchedule' }] },
    taints: [{ key: 'dedicated', value: 'x', effect: 'PreferNoSchedule' }],
    pod: {},
    nodes: [{}],
  },
  {
    name: 'gate-taint',
    pool: { nodeSelector: { tier: 'web' }, tolerations: [{ key: GATE, operator: 'Exists', effect: 'NoSchedule' }], gate: true },
    pod: { nodeSelector: { tier: 'web' } },
    nodes: [{}],
  },
  {
    name: 'labels-and-taints',
    pool: { nodeSelector: { gpu: 'a100' }, tolerations: [{ key: 'gpu', operator: 'Exists', effect: 'NoSchedule' }] },
    taints: [gpuTaint('true')],
    pod: { ...aff({ matchExpressions: [expr('gpu', 'In', ['a100', 'h100'])] }), tolerations: [{ key: 'gpu', operator: 'Exists' }] },
    nodes: [{}, { labels: { zone: 'b' }, taints: [gpuTaint('')] }],
  },
];

interface Placed {
  readonly caseName: string;
  readonly node: string;
  readonly pod: string;
}

const nodeOf = (c: Case, i: number): string => c.nodes[i]?.name ?? `wfit-${c.name}-${i}`;

let cp: LoopbackControlPlane;
let http: KubeHttp;
const placed: Placed[] = [];

/** The workload's pod spec, pinned to one node by {@link PIN}, ANDed with what it asks. */
function pinnedPod(c: Case, node: string, pod: string): Record<string, unknown> {
  const spec = c.pod as { nodeSelector?: Record<string, string> };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: pod, namespace: NS },
    spec: {
      ...c.pod,
      nodeSelector: { ...spec.nodeSelector, [PIN]: node },
      containers: [{ name: 'app', image: 'reg.invalid/app:1' }],
    },
  };
}

beforeAll(async () => {
  cp = await startLoopbackControlPlane('wfit', (m) => console.log(`[workload-placement] ${m}`), { controllers: [], scheduler: true });
  http = new KubeHttp(endpointOf(cp.kubeconfig));
  await apply(http, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  await apply(http, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: NS } });
  const made: Promise<void>[] = [];
  for (const c of CASES) {
    c.nodes.forEach((shape, i) => {
      const node = nodeOf(c, i);
      made.push(
        makeSchedulableNode(http, node, {
          labels: { [PIN]: node, ...c.pool.nodeSelector, ...shape.labels },
          taints: shape.taints ?? c.taints ?? [],
        }),
      );
      placed.push({ caseName: c.name, node, pod: `${c.name}-${i}` });
    });
  }
  await Promise.all(made);
  await Promise.all(
    placed.map((p) =>
      http.json('POST', `/api/v1/namespaces/${NS}/pods`, pinnedPod(CASES.find((c) => c.name === p.caseName) as Case, p.node, p.pod)),
    ),
  );
}, 180_000);

afterAll(async () => {
  await cp?.stop();
});

interface PodState {
  metadata: { name: string };
  spec: { nodeName?: string };
  status?: { conditions?: { type: string; status: string; reason?: string }[] };
}

/** pod name → whether the scheduler bound it, once every pod is bound or reported Unschedulable. */
async function verdicts(): Promise<Map<string, boolean>> {
  return waitFor(
    'every pod bound or Unschedulable',
    async () => {
      const pods = await http.json<{ items: PodState[] }>('GET', `/api/v1/namespaces/${NS}/pods`);
      const out = new Map<string, boolean>();
      for (const p of pods.items) {
        const unschedulable = (p.status?.conditions ?? []).some(
          (c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable',
        );
        if (p.spec.nodeName === undefined && !unschedulable) return undefined;
        out.set(p.metadata.name, p.spec.nodeName !== undefined);
      }
      return out.size === placed.length ? out : undefined;
    },
    120_000,
    500,
  );
}

/** The placement discover reads from the case's pod spec, through the manifest reader. */
function workloadOf(c: Case) {
  const text = stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: c.name, namespace: NS },
    spec: { ...c.pod, containers: [{ name: 'app', image: 'reg.invalid/app:1' }] },
  });
  const read = readWorkloads([{ path: `${c.name}.yaml`, text }]);
  expect(read.diagnostics, c.name).toEqual([]);
  expect(read.workloads, c.name).toHaveLength(1);
  return read.workloads[0]?.placement ?? {};
}

function poolOf(c: Case): PoolPlacement {
  return {
    nodeSelector: c.pool.nodeSelector ?? {},
    tolerations: c.pool.tolerations ?? [],
    ...(c.pool.gate === true ? { gateTaintKey: GATE } : {}),
  };
}

describe('workloadFitsPool on the real scheduler', () => {
  it('says "fits" when every pool node binds the pod, "none" when none does, "partial" otherwise', async () => {
    const bound = await verdicts();
    const got: Record<string, string> = {};
    const want: Record<string, string> = {};
    for (const c of CASES) {
      const mine = placed.filter((p) => p.caseName === c.name).map((p) => bound.get(p.pod) === true);
      got[c.name] = mine.every(Boolean) ? 'fits' : mine.some(Boolean) ? 'partial' : 'none';
      const fit = workloadFitsPool(poolOf(c), workloadOf(c));
      want[c.name] = fit.fit;
      if (fit.fit !== got[c.name]) console.log(`${c.name}: model ${JSON.stringify(fit)}, scheduler bound ${JSON.stringify(mine)}`);
    }
    expect(want).toEqual(got);
    // The table exercises each answer.
    const answers = Object.values(got);
    for (const fit of ['fits', 'partial', 'none']) expect(answers.filter((a) => a === fit).length, fit).toBeGreaterThanOrEqual(5);
    console.log(`workload placement: ${CASES.length} cases on ${placed.length} nodes agree with kube-scheduler`);
  }, 180_000);
});
