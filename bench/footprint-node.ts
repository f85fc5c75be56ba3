/**
 * `npm run bench:footprint-node`: memory of image pre-pulling on a real harness node (kubelet +
 * containerd, harness/cluster), per pool size (BENCH_SIZES, default 5, 50 and 200 images), in one run:
 *
 *   prewarm      `prewarm synth` as shipped: one pull pod per node, one sleeping container per image
 *                (static busybox `sleep`, copied by an init container), plus the sidecar reconciler
 *   che          the same DaemonSet without the sidecar (`prewarm synth --no-reconciler`): this is the
 *                che kubernetes-image-puller's shape (one DaemonSet, each image a container running a
 *                copied `sleep`), measured with our pod rather than che's own manifests
 *   kruise       OpenKruise v1.9.0 (bench/support/kruise.ts): an ImageListPullJob of the N images with
 *                `completionPolicy: Never` for a fresh node, whose kruise-daemon pulls them; measured
 *                as the RSS/PSS of that node's kruise-daemon once the images are in (kruise-manager's,
 *                paid once per cluster, printed beside it). Not in the default BENCH_CONFIGS
 *   kubefledged  the kube-fledged model (bench/kubefledged/model.ts, its exact pull-Job spec): nothing
 *                runs when idle; a refresh creates one Job per image x node lacking it. Measured as the
 *                peak while the Jobs for N images run on one fresh node, and the Jobs one further
 *                refresh creates on that node once it holds the images
 *
 * Each pool runs on a fresh node, which is removed afterwards. For the pull pods it reads, from the
 * host: RSS/PSS of every container's processes (/proc), each container's and the pod's cgroup v1
 * memory (usage, working set = usage - inactive file, and the pod cgroup's recorded peak, which
 * covers the init container that is gone by then), and the pod's containerd shim (outside the pod
 * cgroup, but paid per pod). For kube-fledged it samples the node every 100 ms: pods, processes,
 * shims, and the kubepods cgroup's recorded peak. Time-to-warm (node Ready to every image in the
 * node's containerd) comes for free and is printed too.
 *
 * Prints `footprint-node images=<n> pod-rss-mib: X sidecar-rss-mib: Y per-image-kib: Z` and
 * friends; writes bench/results/$BENCH_RESULT.json (configurations not run this time are kept from
 * the previous file). Reuses a running harness cluster, or starts one and stops it at the end.
 *
 * Env: BENCH_SIZES=5,50,200  BENCH_CONFIGS=prewarm,che,kubefledged  BENCH_SETTLE_SECONDS=10
 *      BENCH_KF_REFRESH=30s (the model's refresh period)  BENCH_KEEP_CLUSTER=1
 *      BENCH_RESULT=footprint-node (results file name; a run merges into the file of that name)
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REGISTRY, STATE_DIR } from '../harness/cluster/config.js';
import { ensureStandIns, normalize } from '../harness/cluster/images.js';
import { Kube } from '../harness/kube.js';
import { prepareImages, synth, yamlObjects } from '../harness/manifests.js';
import { NodeWatch, until, waitImages } from '../harness/nodes.js';
import { secs, sleep } from '../harness/time.js';
import { SIDECAR_CONTAINER } from '../src/contract/names.js';
import {
  ensureKfBusybox,
  installKubeFledged,
  KF_IMAGECACHES,
  kfImageCache,
  startModel,
  stopModel,
  waitModelStatus,
  type Model,
} from './support/kubefledged.js';
import { podMemory, procMem, sampleNodePeak, type NodePeak, type PodMem, type ProcMem } from './support/memory.js';
import { ensureCluster, releaseCluster, join as joinNode, leave } from './support/cluster.js';
import { log, RESULTS_DIR, saveResults } from './support/stats.js';
import { isHolder } from '../src/contract/roles.js';
import { imageListPullJob, KRUISE_MANAGER } from '../harness/cluster/kruise.js';
import { kruiseDaemonName } from '../harness/cluster/node.js';
import { daemonPid } from '../harness/cluster/sh.js';
import { imageCache } from '../harness/specs.js';
import { buildKruise, joinWithKruise, startKruise, stopKruise } from './support/kruise.js';

const SIZES = (process.env['BENCH_SIZES'] ?? '5,50,200').split(',').map(Number);
const CONFIGS = (process.env['BENCH_CONFIGS'] ?? 'prewarm,che,kubefledged').split(',');
const SETTLE_MS = Number(process.env['BENCH_SETTLE_SECONDS'] ?? 10) * 1000;
const KF_REFRESH = process.env['BENCH_KF_REFRESH'] ?? '30s';
/** The results file's name: a partial run can be kept beside the full one. */
const RESULT = process.env['BENCH_RESULT'] ?? 'footprint-node';
const LABEL = 'bench.prewarm.dev/footprint';
/** A few KiB of data per stand-in, so hundreds pull in seconds; distinct content per image. */
const IMAGE_DATA_BYTES = 4096;
const ALL_IMAGES = Array.from({ length: Math.max(...SIZES) }, (_, i) => `${REGISTRY.plain}/bench/fp-${i + 1}:v1`);
const HELPER_CONTAINER = 'prewarm-helper';
const WARM_BOUND_MS = 600_000;

const mib = (k: number): string => (k / 1024).toFixed(1);

/** The pull pod's memory, folded into what the report prints (KiB). */
interface PoolFootprint {
  imageContainers: number;
  imagesRss: number;
  imagesPss: number;
  imageRssMean: number;
  imagePssMean: number;
  imagesCgroupUsage: number;
  imagesWorkingSet: number;
  sidecarRss: number;
  sidecarPss: number;
  sidecarAnon: number;
  sidecarWorkingSet: number;
  pauseRss: number;
  /** The init container's cgroup is removed once it exits; true if it was still there. */
  initPresent: boolean;
  podRss: number;
  podPss: number;
  podCgroupUsage: number;
  podWorkingSet: number;
  podCgroupPeak: number;
  shimRss: number;
  shimPss: number;
}

interface PoolResult {
  config: 'prewarm' | 'che';
  images: number;
  /** Node Ready to every image in containerd. */
  ttwMs?: number;
  /** Node Ready to the sidecar's warm label (prewarm only). */
  labelMs?: number;
  footprint?: PoolFootprint;
  /** Peaks on the node from Ready until measured (warm-up included). */
  peak: NodePeak;
  /** Pods of the pool on the node at the steady state: the holder alone once the pullers left. */
  podsAfterWarm: number;
}

interface KfResult {
  config: 'kubefledged';
  images: number;
  jobs: number;
  /** ImageCache created to every image in containerd. */
  ttwMs?: number;
  peak: NodePeak;
  /** The next refresh on the warm node: Jobs it created and their peak. */
  refresh?: { jobs: number; peak: NodePeak };
}

function fold(pod: PodMem): PoolFootprint {
  const images = pod.containers.filter((c) => c.kind === 'container' && c.name !== SIDECAR_CONTAINER && c.name !== HELPER_CONTAINER);
  const sidecar = pod.containers.find((c) => c.name === SIDECAR_CONTAINER);
  const sum = (f: (c: (typeof images)[number]) => number): number => images.reduce((a, c) => a + f(c), 0);
  const n = Math.max(1, images.length);
  return {
    imageContainers: images.length,
    imagesRss: sum((c) => c.procs.rss),
    imagesPss: sum((c) => c.procs.pss),
    imageRssMean: sum((c) => c.procs.rss) / n,
    imagePssMean: sum((c) => c.procs.pss) / n,
    imagesCgroupUsage: sum((c) => c.cgroup.usage),
    imagesWorkingSet: sum((c) => c.cgroup.workingSet),
    sidecarRss: sidecar?.procs.rss ?? 0,
    sidecarPss: sidecar?.procs.pss ?? 0,
    sidecarAnon: sidecar?.procs.anon ?? 0,
    sidecarWorkingSet: sidecar?.cgroup.workingSet ?? 0,
    pauseRss: pod.containers.filter((c) => c.kind === 'sandbox').reduce((a, c) => a + c.procs.rss, 0),
    initPresent: pod.containers.some((c) => c.name === HELPER_CONTAINER),
    podRss: pod.containers.reduce((a, c) => a + c.procs.rss, 0),
    podPss: pod.containers.reduce((a, c) => a + c.procs.pss, 0),
    podCgroupUsage: pod.cgroup.usage,
    podWorkingSet: pod.cgroup.workingSet,
    podCgroupPeak: pod.cgroup.maxUsage,
    shimRss: pod.shim.rss,
    shimPss: pod.shim.pss,
  };
}

async function waitNamespaceGone(kube: Kube, ns: string): Promise<void> {
  for (let i = 0; i < 120 && (await kube.getOpt(`/api/v1/namespaces/${ns}`)); i++) await sleep(1000);
}

interface PodLite {
  metadata: { uid: string; labels?: Record<string, string> };
  status?: {
    initContainerStatuses?: { name: string; state?: { running?: unknown } }[];
    containerStatuses?: { name: string; state?: { running?: unknown } }[];
  };
}

/** One pull pod (prewarm, or the che shape without the sidecar) of `n` images on a fresh node. */
async function runPool(kube: Kube, watch: NodeWatch, config: 'prewarm' | 'che', n: number): Promise<PoolResult> {
  const ns = `bench-fp-${config}-${n}`;
  const value = `${config}-${n}`;
  const images = ALL_IMAGES.slice(0, n);
  const dir = join(STATE_DIR, 'bench-specs', `footprint-${value}`);
  mkdirSync(dir, { recursive: true });
  const spec = imageCache(ns, `fp${n}`, [{ pool: `fp${n}`, nodeSelector: { [LABEL]: value }, images }]);
  writeFileSync(join(dir, 'imagecache.yaml'), JSON.stringify(spec, null, 2) + '\n');
  const objs = yamlObjects(synth([dir], config === 'che' ? ['--no-reconciler'] : []).yaml);
  prepareImages(objs);
  for (const o of [...objs.filter((x) => x.kind === 'Namespace'), ...objs.filter((x) => x.kind !== 'Namespace')]) await kube.apply(o);

  const node = `fp-${config}-${n}`;
  const t = await joinNode(watch, node, { [LABEL]: value });
  try {
    if (!(await until(t, (x) => x.readyAt !== undefined, Date.now() + 120_000))) throw new Error(`${node} not Ready within 120 s`);
    const readyAt = t.readyAt as number;
    const sampler = sampleNodePeak(node, 500);
    const bound = readyAt + WARM_BOUND_MS;
    const imagesAt = await waitImages(node, images.map(normalize), bound, 250);
    const labelKey = `prewarm.dev/fp${n}`;
    if (config === 'prewarm')
      await until(t, (x) => [...x.labelsAt.keys()].some((k) => k.startsWith(`${labelKey}=`)), Math.min(bound, Date.now() + 60_000));
    const labelAt = [...t.labelsAt].find(([k]) => k === `${labelKey}=warm`)?.[1];
    // Every container running, then a quiet period before reading the steady state.
    let pod: PodLite | undefined;
    while (Date.now() < bound) {
      // The holder, not a burst puller.
      pod = (await kube.list<PodLite>(`/api/v1/namespaces/${ns}/pods`, { fieldSelector: `spec.nodeName=${node}` })).items.find((p) =>
        isHolder(p.metadata.labels),
      );
      // The image containers, and the sidecar (a native sidecar: an init container) for prewarm.
      const cs = [
        ...(pod?.status?.initContainerStatuses ?? []).filter((c) => c.name === SIDECAR_CONTAINER),
        ...(pod?.status?.containerStatuses ?? []),
      ];
      if (cs.length === n + (config === 'prewarm' ? 1 : 0) && cs.every((c) => c.state?.running)) break;
      await sleep(1000);
    }
    await sleep(SETTLE_MS);
    const peak = sampler.stop();
    const podsAfterWarm = (await kube.list(`/api/v1/namespaces/${ns}/pods`, { fieldSelector: `spec.nodeName=${node}` })).items.length;
    const mem = pod ? podMemory(node, pod.metadata.uid) : undefined;
    const r: PoolResult = {
      config,
      images: n,
      ...(imagesAt ? { ttwMs: imagesAt - readyAt } : {}),
      ...(labelAt ? { labelMs: labelAt - readyAt } : {}),
      ...(mem ? { footprint: fold(mem) } : {}),
      peak,
      podsAfterWarm,
    };
    report(r);
    return r;
  } finally {
    await leave(node);
    await kube.delete(`/api/v1/namespaces/${ns}`).catch(() => false);
  }
}

function report(r: PoolResult): void {
  const f = r.footprint;
  if (!f) {
    console.log(
      `footprint-node${r.config === 'che' ? '-che' : ''} images=${r.images}: pull pod not measured (not running within the bound)`,
    );
    return;
  }
  if (r.config === 'prewarm') {
    console.log(
      `footprint-node images=${r.images} pod-rss-mib: ${mib(f.podRss)} sidecar-rss-mib: ${mib(f.sidecarRss)} per-image-kib: ${f.imageRssMean.toFixed(0)} pods-after-warm: ${r.podsAfterWarm}`,
    );
  } else {
    console.log(
      `footprint-node-che images=${r.images} pod-rss-mib: ${mib(f.podRss)} per-image-kib: ${f.imageRssMean.toFixed(0)} (che shape: our DaemonSet without the sidecar)`,
    );
  }
  console.log(
    `  ${r.config} images=${r.images}: image containers ${f.imageContainers} x ${f.imageRssMean.toFixed(0)} KiB RSS (PSS ${f.imagePssMean.toFixed(0)} KiB); ` +
      (r.config === 'prewarm'
        ? `sidecar RSS ${mib(f.sidecarRss)} MiB (anon ${mib(f.sidecarAnon)}, PSS ${mib(f.sidecarPss)}, cgroup working set ${mib(f.sidecarWorkingSet)}); `
        : '') +
      `pause ${f.pauseRss} KiB; init container ${f.initPresent ? 'still present' : 'exited (0 after)'}; ` +
      `pod PSS ${mib(f.podPss)} MiB; pod cgroup usage ${mib(f.podCgroupUsage)} MiB, working set ${mib(f.podWorkingSet)} MiB, peak ${mib(f.podCgroupPeak)} MiB; shim RSS ${mib(f.shimRss)} MiB; ` +
      `pod+shim RSS ${mib(f.podRss + f.shimRss)} MiB, PSS ${mib(f.podPss + f.shimPss)} MiB`,
  );
  console.log(
    `  ${r.config} images=${r.images}: time-to-warm ${r.ttwMs === undefined ? 'never' : secs(r.ttwMs)} s${r.labelMs !== undefined ? ` (warm label ${secs(r.labelMs)} s)` : ''}; node peak during warm-up: pods+shims RSS ${mib(r.peak.rssWithShims)} MiB (PSS ${mib(r.peak.pssWithShims)}), kubepods cgroup ${mib(r.peak.cgroupMaxUsage)} MiB`,
  );
}

/** kube-fledged: N pull Jobs on one fresh node, then the next refresh on that (now warm) node. */
async function runKf(kube: Kube, watch: NodeWatch, model: Model, n: number): Promise<KfResult> {
  const value = `kf-${n}`;
  const name = `fp${n}`;
  const images = ALL_IMAGES.slice(0, n);
  const node = `fp-kf-${n}`;
  const t = await joinNode(watch, node, { [LABEL]: value });
  try {
    if (!(await until(t, (x) => x.readyAt !== undefined, Date.now() + 120_000))) throw new Error(`${node} not Ready within 120 s`);
    await sleep(2000);
    const sampler = sampleNodePeak(node, 100);
    const t0 = Date.now();
    await kube.create(KF_IMAGECACHES, kfImageCache(name, images, { [LABEL]: value }));
    const imagesP = waitImages(node, images.map(normalize), t0 + 300_000, 250);
    const done = await waitModelStatus(model, name, 'Succeeded', t0, t0 + 360_000);
    const imagesAt = await imagesP;
    await sleep(2000);
    const peak = sampler.stop();
    const jobs = model.jobsAt.filter((x) => x >= t0 && (done === undefined || x <= done)).length;
    const r: KfResult = { config: 'kubefledged', images: n, jobs, ...(imagesAt ? { ttwMs: imagesAt - t0 } : {}), peak };
    if (done === undefined) log(`kubefledged ${name}: status never Succeeded within 360 s`);
    else {
      // The next refresh of this cache: Jobs only for images the node's status does not list.
      const s2 = sampleNodePeak(node, 100);
      const tickDeadline = Date.now() + 120_000;
      // A tick at least 10 s after the status, so the node's status lists the pulled images.
      const settled = done + 10_000;
      while (Date.now() < tickDeadline && !model.ticks.some((x) => x > settled)) await sleep(200);
      const tick = model.ticks.find((x) => x > settled);
      const again = tick === undefined ? undefined : await waitModelStatus(model, name, 'Succeeded', tick, tick + 360_000);
      await sleep(2000);
      const p2 = s2.stop();
      if (tick !== undefined && again !== undefined)
        r.refresh = { jobs: model.jobsAt.filter((x) => x >= tick && x <= again).length, peak: p2 };
    }
    const p = r.peak;
    console.log(
      `footprint-node-kubefledged images=${n} jobs=${r.jobs} peak-pods=${p.pods} peak-rss-mib: ${mib(p.procsRss)} peak-rss-with-shims-mib: ${mib(p.rssWithShims)} peak-pss-with-shims-mib: ${mib(p.pssWithShims)} peak-shims=${p.shims} peak-working-set-mib: ${mib(p.workingSet)} peak-cgroup-mib: ${mib(p.cgroupMaxUsage)} idle-mib: 0`,
    );
    console.log(
      `  kubefledged images=${n}: ImageCache created to all images on the node ${r.ttwMs === undefined ? 'never' : secs(r.ttwMs)} s` +
        (r.refresh
          ? `; next refresh on the warm node: ${r.refresh.jobs} Jobs, peak ${r.refresh.peak.pods} pods, pods+shims RSS ${mib(r.refresh.peak.rssWithShims)} MiB (PSS ${mib(r.refresh.peak.pssWithShims)})`
          : '; next refresh not observed'),
    );
    return r;
  } finally {
    await kube.delete(`${KF_IMAGECACHES}/${name}`).catch(() => false);
    await leave(node);
  }
}

/** kruise-daemon of one node that pulled `images` images, and kruise-manager beside it (KiB). */
interface KruiseResult {
  images: number;
  ttwMs?: number;
  daemon: ProcMem;
  manager: ProcMem;
}

/** OpenKruise on a fresh node: an ImageListPullJob of `n` images; kruise-daemon's memory once they are in. */
async function runKruise(kube: Kube, watch: NodeWatch, n: number): Promise<KruiseResult> {
  const ns = `bench-fp-kruise-${n}`;
  const value = `kruise-${n}`;
  const images = ALL_IMAGES.slice(0, n);
  await startKruise();
  const node = `fp-kruise-${n}`;
  try {
    await kube.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    const job = imageListPullJob({ name: `fp${n}`, namespace: ns, images, nodeLabels: { [LABEL]: value } });
    await kube.create(`/apis/apps.kruise.io/v1alpha1/namespaces/${ns}/imagelistpulljobs`, job);
    const t = await joinWithKruise(watch, node, { [LABEL]: value }, 'parallel');
    if (!(await until(t, (x) => x.readyAt !== undefined, Date.now() + 120_000))) throw new Error(`${node} not Ready within 120 s`);
    const readyAt = t.readyAt as number;
    const imagesAt = await waitImages(node, images.map(normalize), readyAt + WARM_BOUND_MS, 250);
    await sleep(SETTLE_MS);
    const daemon = procMem(daemonPid(kruiseDaemonName(node)) ?? -1);
    const manager = procMem(daemonPid(KRUISE_MANAGER) ?? -1);
    const r: KruiseResult = { images: n, ...(imagesAt !== undefined ? { ttwMs: imagesAt - readyAt } : {}), daemon, manager };
    console.log(
      `footprint-node-kruise images=${n} daemon-rss-mib: ${mib(daemon.rss)} daemon-pss-mib: ${mib(daemon.pss)} daemon-anon-mib: ${mib(daemon.anon)} manager-rss-mib: ${mib(manager.rss)} time-to-warm: ${r.ttwMs === undefined ? 'never' : `${secs(r.ttwMs)} s`}`,
    );
    return r;
  } finally {
    await leave(node);
    await kube.delete(`/api/v1/namespaces/${ns}`).catch(() => false);
    await stopKruise();
  }
}

function marginal(results: PoolResult[], config: 'prewarm' | 'che', print: boolean): Record<string, number> | undefined {
  const rs = results.filter((r) => r.config === config && r.footprint).sort((a, b) => a.images - b.images);
  const lo = rs[0];
  const hi = rs[rs.length - 1];
  if (!lo?.footprint || !hi?.footprint || lo === hi) return undefined;
  const d = hi.images - lo.images;
  const out = {
    from: lo.images,
    to: hi.images,
    rssKib: (hi.footprint.podRss - lo.footprint.podRss) / d,
    pssKib: (hi.footprint.podPss - lo.footprint.podPss) / d,
    workingSetKib: (hi.footprint.podWorkingSet - lo.footprint.podWorkingSet) / d,
    shimRssKib: (hi.footprint.shimRss - lo.footprint.shimRss) / d,
  };
  if (print)
    console.log(
      `footprint-node ${config} per-image marginal (${lo.images}->${hi.images} images): RSS ${out.rssKib.toFixed(0)} KiB, PSS ${out.pssKib.toFixed(0)} KiB, pod cgroup working set ${out.workingSetKib.toFixed(0)} KiB per image`,
    );
  return out;
}

/** Results of configurations not run this time, kept from the previous file. */
function previous(): { pools: PoolResult[]; kubefledged: KfResult[] } {
  const f = join(RESULTS_DIR, `${RESULT}.json`);
  if (!existsSync(f)) return { pools: [], kubefledged: [] };
  const old = JSON.parse(readFileSync(f, 'utf8')) as { pools?: PoolResult[]; kubefledged?: KfResult[] };
  return {
    pools: (old.pools ?? []).filter((r) => !CONFIGS.includes(r.config) || !SIZES.includes(r.images)),
    kubefledged: (old.kubefledged ?? []).filter((r) => !CONFIGS.includes('kubefledged') || !SIZES.includes(r.images)),
  };
}

/** Writes the results file: this run's results over the previous file's (merged by config and size). */
function save(pools: PoolResult[], kf: KfResult[], print: boolean, kruise: readonly KruiseResult[] = []): string {
  const old = previous();
  const allPools = [...old.pools, ...pools].sort((a, b) => a.images - b.images || a.config.localeCompare(b.config));
  const allKf = [...old.kubefledged, ...kf].sort((a, b) => a.images - b.images);
  const sizes = [...new Set([...allPools, ...allKf].map((r) => r.images))].sort((a, b) => a - b);
  if (print) {
    for (const n of sizes) {
      const t = (c: string): string => {
        const r = c === 'kubefledged' ? allKf.find((x) => x.images === n) : allPools.find((x) => x.config === c && x.images === n);
        return r ? (r.ttwMs === undefined ? 'never' : `${secs(r.ttwMs)}s`) : '-';
      };
      console.log(
        `time-to-warm images=${n} prewarm: ${t('prewarm')} che: ${t('che')} kube-fledged (ImageCache create): ${t('kubefledged')}`,
      );
    }
  }
  return saveResults(RESULT, {
    imageDataBytes: IMAGE_DATA_BYTES,
    sizes,
    pools: allPools,
    kubefledged: allKf,
    marginal: { prewarm: marginal(allPools, 'prewarm', print), che: marginal(allPools, 'che', print) },
    kfRefresh: KF_REFRESH,
    ...(kruise.length ? { kruise } : {}),
  });
}

async function main(): Promise<void> {
  const started = await ensureCluster();
  const kube = new Kube();
  const watch = new NodeWatch(kube, LABEL, log);
  const pools: PoolResult[] = [];
  const kf: KfResult[] = [];
  const kruise: KruiseResult[] = [];
  if (CONFIGS.includes('kruise')) buildKruise();
  try {
    const t0 = Date.now();
    const pushed = await ensureStandIns(ALL_IMAGES, { sizeBytes: IMAGE_DATA_BYTES });
    if (CONFIGS.includes('kubefledged')) ensureKfBusybox();
    log(`${ALL_IMAGES.length} stand-in images in the registry (${pushed} pushed now, ${secs(Date.now() - t0)} s)`);
    await watch.start();
    // Saved after every configuration, so a run cut short by its time bound keeps what it measured.
    for (const n of SIZES) {
      for (const c of ['prewarm', 'che'] as const) {
        if (!CONFIGS.includes(c)) continue;
        pools.push(await runPool(kube, watch, c, n));
        save(pools, kf, false, kruise);
      }
    }
    if (CONFIGS.includes('kruise'))
      for (const n of SIZES) {
        kruise.push(await runKruise(kube, watch, n));
        save(pools, kf, false, kruise);
      }
    if (CONFIGS.includes('kubefledged')) {
      await installKubeFledged(kube);
      const model = startModel({ refresh: KF_REFRESH });
      try {
        for (const n of SIZES) {
          kf.push(await runKf(kube, watch, model, n));
          save(pools, kf, false, kruise);
        }
      } finally {
        await stopModel(model);
      }
    }
  } finally {
    watch.close();
    for (const ns of SIZES.flatMap((n) => [`bench-fp-prewarm-${n}`, `bench-fp-che-${n}`])) await waitNamespaceGone(kube, ns);
    kube.close();
    await releaseCluster(started);
  }
  log(`wrote ${save(pools, kf, true, kruise)}`);
}

await main();
