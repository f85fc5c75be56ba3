/**
 * `npm run bench:workload-start`: the number users care about, node Ready → workload pods Running
 * on a new node, in one run, for each registry profile × kind of kubelet × shape × way:
 *
 *   shapes   one     one workload running two of the pool's three images
 *            burst   three workloads, each running two of the three images, together all of them
 *   ways     none    no prewarm: the workloads pull their images themselves
 *            prewarm prewarm without a gate: the pool's pods and the workloads pull side by side
 *            gated   prewarm with the gating taint: the workloads are scheduled once the pool is warm
 *
 * The workload pods are created before their node joins (pinned to it by hostname, no
 * toleration), as pending pods wait for an autoscaled node. prewarm runs with the default lanes.
 * Each combination joins --reps fresh real nodes (names never used before), one at a time; the
 * figure of a node is Ready → its last workload Running (the first one's is recorded too). Prints
 * one line per node, then medians and ratios to `none`; writes bench/results/<result>.json.
 * Bounded (every wait has a limit), stops by itself; reuses a running harness cluster or starts
 * one (stopped at the end unless BENCH_KEEP_CLUSTER=1); switches the registry profile and puts
 * the one it found back at the end.
 *
 *   npm run bench:workload-start -- [--profiles remote] [--kubelets parallel,serial] [--shapes one,burst]
 *     [--modes none,prewarm,gated] [--reps 3] [--image-mib 48] [--result NAME]
 */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { REGISTRY } from '../harness/cluster/config.js';
import { ensureStandIn } from '../harness/cluster/images.js';
import { registryProfile, setRegistryProfile } from '../harness/cluster/registry.js';
import { describeProfile, LOOPBACK, parseRegistryProfile, PROFILE_NAMES, type ProfileName } from '../harness/cluster/registry-profile.js';
import { DEFAULT_GATE_TAINT_KEY } from '../src/contract/names.js';
import { LANES } from '../src/contract/names.js';
import { addNode, kubectl } from '../harness/cluster/cluster.js';
import { Kube } from '../harness/kube.js';
import { applyAll, poolsOf, prepareImages, synthObjects } from '../harness/manifests.js';
import { NodeWatch, until } from '../harness/nodes.js';
import { pollUntil, secs, sleep } from '../harness/time.js';
import { workloadPod } from '../harness/workloads.js';
import { imageCache, specDir } from '../harness/specs.js';
import { ensureCluster, freshNodeName, KUBELET_KINDS, leave, releaseCluster, type KubeletKind } from './support/cluster.js';
import { log, median, saveResults } from './support/stats.js';
import { list } from './support/args.js';

const SHAPES = ['one', 'burst'] as const;
type Shape = (typeof SHAPES)[number];
const MODES = ['none', 'prewarm', 'gated'] as const;
type Mode = (typeof MODES)[number];

const args = yargs(hideBin(process.argv))
  .scriptName('bench:workload-start')
  .option('profiles', { type: 'string', default: 'remote' })
  .option('kubelets', { type: 'string', default: KUBELET_KINDS.join(',') })
  .option('shapes', { type: 'string', default: SHAPES.join(',') })
  .option('modes', { type: 'string', default: MODES.join(',') })
  .option('reps', { type: 'number', default: 3 })
  .option('image-mib', { type: 'number', default: 48 })
  .option('result', { type: 'string', describe: 'results file name (default: workload-start-<profiles>)' })
  .strict()
  .parseSync();

const profiles = list<ProfileName>('profiles', args.profiles, PROFILE_NAMES);
const kubelets = list<KubeletKind>('kubelets', args.kubelets, KUBELET_KINDS);
const shapes = list<Shape>('shapes', args.shapes, SHAPES);
const modes = list<Mode>('modes', args.modes, MODES);
const RESULT = args.result ?? `workload-start-${profiles.join('-')}`;

const NS = 'bench-ws';
const WL_NS = 'bench-ws-wl';
const SEL = 'bench.prewarm.dev/ws';
const MIB = args['image-mib'];
/** The pool's images. */
const IMAGES = [1, 2, 3].map((i) => `${REGISTRY.plain}/bench/ws-${i}-${MIB}m:v1`);
const [A, B, C] = IMAGES as [string, string, string];
/** The workloads of each shape, by the images they run. */
const WORKLOADS: Record<Shape, string[][]> = {
  one: [[A, B]],
  burst: [
    [A, B],
    [B, C],
    [C, A],
  ],
};

interface Sample {
  profile: ProfileName;
  kubelet: KubeletKind;
  shape: Shape;
  mode: Mode;
  node: string;
  /** Node Ready (first seen) → the last workload pod Running (first seen), ms. */
  startMs: number;
  /** Node Ready → the first workload pod Running, ms. */
  firstMs: number;
}

/** When each pod was first seen Running (polled every 100 ms); throws at the deadline. */
async function runningTimes(kube: Kube, pods: readonly string[], deadlineMs: number): Promise<number[]> {
  const at = new Map<string, number>();
  const done = await pollUntil(
    async () => {
      const l = await kube.list(`/api/v1/namespaces/${WL_NS}/pods`);
      const now = Date.now();
      for (const p of l.items)
        if (pods.includes(p.metadata.name) && (p.status as { phase?: string } | undefined)?.phase === 'Running' && !at.has(p.metadata.name))
          at.set(p.metadata.name, now);
      return at.size === pods.length;
    },
    deadlineMs,
    100,
  );
  if (!done) throw new Error(`workload pods not Running in time: ${pods.filter((p) => !at.has(p)).join(', ')}`);
  return pods.map((p) => at.get(p) as number);
}

async function main(): Promise<void> {
  const started = await ensureCluster();
  const kube = new Kube();
  const watch = new NodeWatch(kube, SEL);
  const samples: Sample[] = [];
  const found = registryProfile();
  try {
    kubectl(['delete', 'namespace', NS, WL_NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
    for (const ref of IMAGES) ensureStandIn(ref, { sizeBytes: MIB << 20 });
    const dir = specDir('workload-start', [
      ...(['prewarm', 'gated'] as const).map((mode) =>
        imageCache(NS, mode, [{ pool: mode, nodeSelector: { [SEL]: mode }, images: IMAGES }], { gate: { enabled: mode === 'gated' } }),
      ),
    ]);
    const objects = await synthObjects(dir);
    prepareImages(objects);
    const helper = poolsOf(objects)[0]?.helper[0];
    if (!helper) throw new Error('synth output has no helper image');
    await applyAll(kube, [...objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: WL_NS } }]);
    await watch.start();
    for (const profile of profiles) {
      const shape = profile === 'remote' ? parseRegistryProfile('remote') : LOOPBACK;
      await setRegistryProfile(shape);
      log(`profile ${describeProfile(shape)}; prewarm lanes ${LANES.default} (the default)`);
      for (const kubelet of kubelets)
        for (const form of shapes)
          for (const mode of modes)
            for (let i = 1; i <= args.reps; i++) {
              const node = freshNodeName(`ws${mode[0] ?? ''}`);
              const pods = WORKLOADS[form].map((_, k) => `wl-${node}-${k + 1}`);
              for (const [k, images] of WORKLOADS[form].entries())
                await kube.apply(workloadPod({ name: pods[k] as string, namespace: WL_NS, node, helper, images }));
              const t = watch.expect(node);
              try {
                await addNode(node, {
                  labels: { [SEL]: mode },
                  ...(mode === 'gated' ? { taints: [{ key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' as const }] } : {}),
                  serializeImagePulls: kubelet === 'serial',
                  wait: false,
                });
                if (!(await until(t, (x) => x.readyAt !== undefined, Date.now() + 120_000))) throw new Error(`${node} not Ready in 120 s`);
                const at = await runningTimes(kube, pods, Date.now() + 300_000);
                const ready = t.readyAt as number;
                const s: Sample = {
                  profile,
                  kubelet,
                  shape: form,
                  mode,
                  node,
                  startMs: Math.max(...at) - ready,
                  firstMs: Math.min(...at) - ready,
                };
                samples.push(s);
                console.log(
                  `${profile} ${kubelet} ${form} ${mode} ${node}: Ready → ${pods.length > 1 ? `all ${pods.length} workloads` : 'workload'} Running ${secs(s.startMs)} s${pods.length > 1 ? ` (first ${secs(s.firstMs)} s)` : ''}`,
                );
              } finally {
                for (const p of pods) await kube.delete(`/api/v1/namespaces/${WL_NS}/pods/${p}`).catch(() => undefined);
                await leave(node);
                await sleep(1_000);
              }
            }
    }
  } finally {
    await setRegistryProfile(found);
    watch.close();
    kube.close();
    kubectl(['delete', 'namespace', NS, WL_NS, '--ignore-not-found', '--wait=false'], { allowFail: true });
    await releaseCluster(started);
  }
  const medians: Record<string, Record<string, number>> = {};
  console.log(`\nsummary (medians of ${args.reps} nodes; × = median / none's)`);
  for (const profile of profiles)
    for (const kubelet of kubelets)
      for (const form of shapes) {
        const key = `${profile}/${kubelet}/${form}`;
        const of = (m: Mode) => samples.filter((s) => s.profile === profile && s.kubelet === kubelet && s.shape === form && s.mode === m);
        medians[key] = Object.fromEntries(modes.map((m) => [m, median(of(m).map((s) => s.startMs))]));
        const base = medians[key]['none'];
        for (const m of modes) {
          const v = medians[key][m] as number;
          const ratio = base !== undefined && Number.isFinite(base) ? ` (${(v / base).toFixed(2)} × none)` : '';
          console.log(
            `workload-start ${profile} ${kubelet} ${form} ${m}: median ${secs(v)} s${ratio}; first pod ${secs(median(of(m).map((s) => s.firstMs)))} s`,
          );
        }
      }
  const file = saveResults(RESULT, {
    profiles: Object.fromEntries(profiles.map((p) => [p, describeProfile(p === 'remote' ? parseRegistryProfile('remote') : LOOPBACK)])),
    imageMiB: MIB,
    poolImages: IMAGES.length,
    workloads: WORKLOADS,
    lanes: LANES.default,
    reps: args.reps,
    medianMs: medians,
    samples,
  });
  log(`wrote ${file}`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
