/**
 * `npm run bench:workload-start`: the number users care about, node Ready → a workload pod
 * Running on a new node, for a workload that runs two of a pool's images, in one run, three ways:
 *
 *   none      no prewarm: the workload pulls its images itself
 *   prewarm   prewarm without a gate: the pool's pod and the workload pull side by side
 *   gated     prewarm with the gating taint: the workload is scheduled once the pool is warm
 *
 * The workload pod is created before its node joins (pinned to it by hostname, no toleration), as
 * a pending pod waits for an autoscaled node. Each way joins BENCH_REPS fresh real nodes, one at a
 * time; prints one line per node, then medians and ratios to `none`; writes
 * bench/results/workload-start.json. Bounded (every wait has a limit), stops by itself; reuses a
 * running harness cluster or starts one (stopped at the end unless BENCH_KEEP_CLUSTER=1).
 *
 * Env: BENCH_REPS=3  BENCH_MODES=none,prewarm,gated  BENCH_IMAGE_MIB=48
 */
import { REGISTRY } from '../harness/cluster/config.js';
import { ensureStandIn } from '../harness/cluster/images.js';
import { DEFAULT_GATE_TAINT_KEY } from '../src/contract/names.js';
import { addNode, kubectl } from '../harness/cluster/cluster.js';
import { loadSpec } from '../harness/cluster/node.js';
import { Kube } from '../harness/kube.js';
import { applyAll, poolsOf, prepareImages, synthObjects } from '../harness/manifests.js';
import { NodeWatch, until } from '../harness/nodes.js';
import { secs, sleep, waitFor } from '../harness/time.js';
import { workloadPod } from '../harness/workloads.js';
import { specDir } from '../harness/specs.js';
import { ensureCluster, leave, releaseCluster } from './support/cluster.js';
import { log, median, saveResults } from './support/stats.js';

const MODES = (process.env['BENCH_MODES'] ?? 'none,prewarm,gated').split(',');
const REPS = Number(process.env['BENCH_REPS'] ?? 3);
const MIB = Number(process.env['BENCH_IMAGE_MIB'] ?? 48);
const NS = 'bench-ws';
const WL_NS = 'bench-ws-wl';
const SEL = 'bench.prewarm.dev/ws';
/** The pool's images; the workload runs the first two. */
const IMAGES = [1, 2, 3].map((i) => `${REGISTRY.plain}/bench/ws-${i}-${MIB}m:v1`);
const WORKLOAD_IMAGES = IMAGES.slice(0, 2);

interface Sample {
  mode: string;
  node: string;
  /** Node Ready (first seen) → workload pod Running (first seen), ms. */
  startMs: number;
}

async function runningAt(kube: Kube, name: string, deadlineMs: number): Promise<number> {
  return waitFor(
    `${WL_NS}/${name} Running`,
    async () => ((await kube.get(`/api/v1/namespaces/${WL_NS}/pods/${name}`)).status?.phase === 'Running' ? Date.now() : undefined),
    deadlineMs,
    100,
  );
}

async function main(): Promise<void> {
  const started = await ensureCluster();
  const kube = new Kube();
  const watch = new NodeWatch(kube, SEL);
  const samples: Sample[] = [];
  try {
    kubectl(['delete', 'namespace', NS, WL_NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
    for (const ref of IMAGES) ensureStandIn(ref, { sizeBytes: MIB << 20 });
    const dir = specDir('workload-start', [
      ...['prewarm', 'gated'].map((mode) => ({
        apiVersion: 'prewarm.dev/v1alpha1',
        kind: 'ImageCache',
        metadata: { name: mode, namespace: NS },
        spec: {
          cacheSpec: [{ pool: mode, nodeSelector: { [SEL]: mode }, images: IMAGES }],
          gate: { enabled: mode === 'gated' },
        },
      })),
    ]);
    const objects = await synthObjects(dir);
    prepareImages(objects);
    const helper = poolsOf(objects)[0]?.helper[0];
    if (!helper) throw new Error('synth output has no helper image');
    await applyAll(kube, [...objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: WL_NS } }]);
    await watch.start();
    for (const mode of MODES) {
      for (let i = 1; i <= REPS; i++) {
        const node = `ws-${mode}-${i}`;
        const pod = `wl-${mode}-${i}`;
        await kube.apply(workloadPod({ name: pod, namespace: WL_NS, node, helper, images: WORKLOAD_IMAGES }));
        const t = watch.expect(node);
        try {
          if (loadSpec(node)) await leave(node);
          await addNode(node, {
            labels: { [SEL]: mode },
            ...(mode === 'gated' ? { taints: [{ key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' as const }] } : {}),
            wait: false,
          });
          if (!(await until(t, (x) => x.readyAt !== undefined, Date.now() + 120_000))) throw new Error(`${node} not Ready in 120 s`);
          const runningTime = await runningAt(kube, pod, 300_000);
          const s: Sample = { mode, node, startMs: runningTime - (t.readyAt as number) };
          samples.push(s);
          console.log(`${mode} ${node}: Ready → workload Running ${secs(s.startMs)} s`);
        } finally {
          await kube.delete(`/api/v1/namespaces/${WL_NS}/pods/${pod}`).catch(() => undefined);
          await leave(node);
          await sleep(1_000);
        }
      }
    }
  } finally {
    watch.close();
    kube.close();
    kubectl(['delete', 'namespace', NS, WL_NS, '--ignore-not-found', '--wait=false'], { allowFail: true });
    await releaseCluster(started);
  }
  const med = Object.fromEntries(MODES.map((m) => [m, median(samples.filter((s) => s.mode === m).map((s) => s.startMs))]));
  const base = med['none'];
  for (const m of MODES) {
    const ratio = base && med[m] !== undefined ? ` (${(med[m] / base).toFixed(2)} × none)` : '';
    console.log(`workload-start ${m}: median ${secs(med[m] ?? Number.NaN)} s over ${REPS}${ratio}`);
  }
  const file = saveResults('workload-start', {
    imageMiB: MIB,
    workloadImages: WORKLOAD_IMAGES.length,
    poolImages: IMAGES.length,
    reps: REPS,
    medianMs: med,
    samples,
  });
  log(`wrote ${file}`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
