/**
 * `npm run bench:time-to-warm`: time from a joining real node's Ready to every cached image being
 * in that node's own containerd, on the real-cluster harness (harness/cluster), in one run:
 *
 *   raw        crictl pull of the same images, all at once, on a fresh bare containerd (the limit)
 *   prewarm    `prewarm synth --stdout --reconciler-image <local>` applied; nodes join the pool
 *   kf-0s      the kube-fledged model (bench/kubefledged/model.ts) with refresh 0s (never)
 *   kf-1m      ... refresh 1m, nodes joining at staggered offsets within one period
 *   kf-15m     ... refresh 15m (its default), nodes joining concurrently at offsets in one window
 *
 * Prints one line per node and a summary (medians, ratios to raw), writes
 * bench/results/time-to-warm.json. A benchmark: long (about 35 min), bounded, stops by itself.
 * Reuses a running harness cluster (starts one only if none is up, and stops it at the end unless
 * BENCH_KEEP_CLUSTER=1); adds and removes only its own nodes (bench-*).
 *
 * Env: BENCH_CONFIGS=raw,prewarm,kf-0s,kf-1m,kf-15m  BENCH_NODES=4
 *      BENCH_RESULT=time-to-warm (the results file's name: keep a partial run beside the full one)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REGISTRY, REPO_DIR, STATE_DIR } from '../harness/cluster/config.js';
import { rawPull, startBareRuntime, stopBareRuntime } from '../harness/cluster/bare.js';
import { buildOciImage, busyboxLayers, ensureReconcilerImage, ensureStandIn, imageInRegistry, normalize, pushImage } from '../harness/cluster/images.js';
import { Kube, type KubeObject } from '../harness/kube.js';
import { applyAll, synthObjects } from '../harness/manifests.js';
import { NodeWatch, until, waitImages, type NodeTimes } from '../harness/nodes.js';
import { pollUntil, secs, sleep } from '../harness/time.js';
import { ensureKfBusybox, installKubeFledged, KF_IMAGECACHES, kfImageCache, startModel, stopModel } from './support/kubefledged.js';
import { ensureCluster, releaseCluster, join as joinNode, leave } from './support/cluster.js';
import { log, median, saveResults } from './support/stats.js';

const CONFIGS = (process.env['BENCH_CONFIGS'] ?? 'raw,prewarm,prewarm-no-sidecar,prewarm-split,kf-0s,kf-1m,kf-15m').split(',');
const NODES = Number(process.env['BENCH_NODES'] ?? 4);
const POOL_LABEL = 'bench.prewarm.dev/pool';
/** Stand-in sizes (MiB of incompressible data) of the cached images: 128 MiB in all. */
const SIZES_MIB = [8, 16, 24, 32, 48];
const IMAGES = SIZES_MIB.map((_, i) => `${REGISTRY.plain}/bench/ttw-${i + 1}:v1`);
const RECONCILER_IMAGE = `${REGISTRY.plain}/prewarm/reconciler:bench`;
const PW_NS = 'prewarm-bench';

const WANT = IMAGES.map(normalize);

interface Sample {
  config: string;
  node: string;
  /** Ready -> all images present (ms); undefined: not within the bound. */
  warmMs?: number;
  /** Join started -> Ready (ms). */
  readyMs?: number;
  /** Ready -> node labelled warm by the sidecar (prewarm only). */
  labelMs?: number;
  /** Where in the refresh period the node became Ready (ms after the last refresh tick). */
  phaseMs?: number;
  boundMs?: number;
  /** Pull pod timeline, seconds after Ready (the apiserver's timestamps have 1 s resolution). */
  pod?: Record<string, number>;
}
const samples: Sample[] = [];

function report(s: Sample): void {
  samples.push(s);
  const extra = [
    s.labelMs !== undefined ? `warm label ${secs(s.labelMs)} s` : '',
    s.phaseMs !== undefined ? `Ready ${secs(s.phaseMs)} s after a refresh tick` : '',
    s.warmMs === undefined && s.boundMs ? `not warm within ${secs(s.boundMs)} s` : '',
  ].filter(Boolean);
  const pod = s.pod ? `; pod (s after Ready): ${Object.entries(s.pod).map(([k, v]) => `${k} ${v}`).join(', ')}` : '';
  console.log(`${s.config} ${s.node}: ready-to-warm ${s.warmMs === undefined ? 'never' : secs(s.warmMs)} s (join-to-Ready ${s.readyMs === undefined ? '?' : secs(s.readyMs)} s)${extra.length ? '; ' + extra.join('; ') : ''}${pod}`);
}

function prepareImages(): void {
  SIZES_MIB.forEach((mib, i) => ensureStandIn(IMAGES[i] as string, { sizeBytes: mib << 20 }));
  // prewarm's helper: a static busybox (the harness's layer).
  const pwHelper = 'docker.io/library/busybox:1.36.1-musl';
  if (!imageInRegistry(pwHelper)) pushImage(buildOciImage(`helper-${pwHelper}`, busyboxLayers(), { cmd: ['/bin/sh'] }), pwHelper);
  ensureKfBusybox();
  ensureReconcilerImage(RECONCILER_IMAGE, REPO_DIR);
}


/** RBAC for the sidecar: what ReconcilerAccess grants (synth --stdout does not emit it yet). */
function sidecarRbac(): KubeObject[] {
  const sa = { kind: 'ServiceAccount', name: 'prewarm-reconciler', namespace: PW_NS };
  return [
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'bench-prewarm-reconciler' }, rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get', 'patch'] }, { apiGroups: [''], resources: ['pods'], verbs: ['get', 'watch', 'list'] }, { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] }] },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'bench-prewarm-reconciler' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'bench-prewarm-reconciler' }, subjects: [sa] },
  ];
}

async function benchRaw(): Promise<void> {
  for (let i = 1; i <= NODES; i++) {
    const name = `bench-raw-${i}`;
    await startBareRuntime(name);
    try {
      const ms = await rawPull(name, IMAGES);
      report({ config: 'raw', node: name, warmMs: ms });
    } finally {
      await stopBareRuntime(name);
    }
  }
}

/** The pull pod's milestones on a node, in seconds after Ready (1 s resolution). */
async function podTimeline(kube: Kube, node: string, readyAt: number): Promise<Record<string, number> | undefined> {
  const pods = await kube.list(`/api/v1/namespaces/${PW_NS}/pods`, { fieldSelector: `spec.nodeName=${node}` });
  const p = pods.items.find((x) => (x.spec?.containers ?? []).some((c: { name: string }) => c.name === 'prewarm-reconciler')) ?? pods.items[0];
  if (!p) return undefined;
  const rel = (iso?: string): number => (iso ? Math.round((Date.parse(iso) - readyAt) / 100) / 10 : Number.NaN);
  const cond = (type: string): string | undefined => (p.status?.conditions ?? []).find((c: { type: string }) => c.type === type)?.lastTransitionTime;
  type Cs = { name: string; state?: { running?: { startedAt?: string }; terminated?: { finishedAt?: string } } };
  const started = ((p.status?.containerStatuses ?? []) as Cs[]).filter((c) => c.name !== 'prewarm-reconciler').map((c) => Date.parse(c.state?.running?.startedAt ?? ''));
  const sidecar = ((p.status?.containerStatuses ?? []) as Cs[]).find((c) => c.name === 'prewarm-reconciler')?.state?.running?.startedAt;
  const init = ((p.status?.initContainerStatuses ?? []) as Cs[])[0]?.state?.terminated?.finishedAt;
  return {
    created: rel(p.metadata.creationTimestamp),
    scheduled: rel(cond('PodScheduled')),
    initDone: rel(init),
    lastImageContainerStarted: started.length && started.every(Number.isFinite) ? rel(new Date(Math.max(...started)).toISOString()) : Number.NaN,
    sidecarStarted: rel(sidecar),
  };
}

/**
 * Not what prewarm ships: the synthesized DaemonSet cut into one DaemonSet per image container
 * (helper init container and sidecar in the first only), to measure what pulling in parallel pods
 * would gain, since the kubelet starts a pod's containers, and so pulls their images, one by one.
 */
function splitPerImage(objs: KubeObject[]): KubeObject[] {
  const out: KubeObject[] = [];
  for (const o of objs) {
    if (o.kind !== 'DaemonSet') {
      out.push(o);
      continue;
    }
    const tpl = o.spec.template.spec;
    const images = (tpl.containers as { name: string }[]).filter((c) => c.name !== 'prewarm-reconciler');
    const sidecar = (tpl.containers as { name: string }[]).filter((c) => c.name === 'prewarm-reconciler');
    images.forEach((c, i) => {
      const copy = JSON.parse(JSON.stringify(o)) as KubeObject;
      copy.metadata.name = `${o.metadata.name}-${i}`;
      const sel = { ...o.spec.selector.matchLabels, 'bench.prewarm.dev/part': String(i) };
      copy.spec.selector = { matchLabels: sel };
      copy.spec.template.metadata.labels = { ...o.spec.template.metadata.labels, 'bench.prewarm.dev/part': String(i) };
      copy.spec.template.spec.containers = i === 0 ? [c, ...sidecar] : [c];
      out.push(copy);
    });
  }
  return out;
}

async function benchPrewarm(kube: Kube, watch: NodeWatch, config = 'prewarm', sidecar = true, split = false): Promise<void> {
  for (let i = 0; i < 120 && (await kube.getOpt(`/api/v1/namespaces/${PW_NS}`)); i++) await sleep(1000);
  const specs = join(STATE_DIR, 'bench-specs', 'ttw');
  mkdirSync(specs, { recursive: true });
  writeFileSync(
    join(specs, 'imagecache.yaml'),
    JSON.stringify({ apiVersion: 'prewarm.dev/v1alpha1', kind: 'ImageCache', metadata: { name: 'ttw', namespace: PW_NS }, spec: { cacheSpec: [{ pool: 'ttw', nodeSelector: { [POOL_LABEL]: 'ttw' }, images: IMAGES }] } }, null, 2),
  );
  const synthesized = await synthObjects(specs, sidecar ? ['--reconciler-image', RECONCILER_IMAGE] : ['--no-reconciler']);
  await applyAll(kube, [...(split ? splitPerImage(synthesized) : synthesized), ...sidecarRbac()]);
  for (let i = 1; i <= NODES; i++) {
    const name = `bench-${split ? 'pwsplit' : sidecar ? 'pw' : 'pwns'}-${i}`;
    const t = await joinNode(watch, name, { [POOL_LABEL]: 'ttw' });
    try {
      const bound = Date.now() + 240_000;
      await until(t, (x) => x.readyAt !== undefined, bound);
      const imagesAt = await waitImages(name, WANT, bound);
      if (sidecar) await until(t, (x) => x.labelsAt.has('prewarm.dev/ttw=warm'), Math.min(bound, Date.now() + 30_000));
      const labelAt = t.labelsAt.get('prewarm.dev/ttw=warm');
      const pod = t.readyAt ? await podTimeline(kube, name, t.readyAt) : undefined;
      report({
        ...(pod ? { pod } : {}),
        config,
        node: name,
        ...(imagesAt && t.readyAt ? { warmMs: imagesAt - t.readyAt } : {}),
        ...(t.readyAt ? { readyMs: t.readyAt - t.joinAt } : {}),
        ...(labelAt && t.readyAt ? { labelMs: labelAt - t.readyAt } : {}),
      });
    } finally {
      await leave(name);
    }
  }
  await kube.delete(`/api/v1/namespaces/${PW_NS}`);
  // The namespace must be gone before another configuration re-creates it.
  for (let i = 0; i < 120 && (await kube.getOpt(`/api/v1/namespaces/${PW_NS}`)); i++) await sleep(1000);
}

function ttwImageCache(): KubeObject {
  return kfImageCache('ttw', IMAGES, { [POOL_LABEL]: 'kf' });
}

async function waitCacheStatus(kube: Kube, want: string, bound: number): Promise<boolean> {
  return (await pollUntil(async () => (await kube.getOpt(`${KF_IMAGECACHES}/ttw`))?.status?.status === want, bound, 500)) ?? false;
}

/**
 * One kube-fledged configuration: (re)start the model with `refresh`, (re)create the ImageCache
 * (once the seed node matches, as kube-fledged fails a sync that matches no node), then join
 * nodes at `offsetsMs` after the model's first refresh tick and wait up to `boundMs` after each
 * node's Ready.
 */
async function benchKf(kube: Kube, watch: NodeWatch, config: string, refresh: string, offsetsMs: number[], boundMs: number): Promise<void> {
  await kube.delete(`${KF_IMAGECACHES}/ttw`).catch(() => false);
  await sleep(1000);
  const model = startModel({ refresh });
  try {
    const t0 = Date.now();
    await sleep(1500);
    await kube.create(KF_IMAGECACHES, ttwImageCache());
    if (!(await waitCacheStatus(kube, 'Succeeded', Date.now() + 300_000))) throw new Error(`${config}: the ImageCache never Succeeded on the seed node`);
    const base = model.ticks[0] ?? t0;
    log(`${config}: ImageCache Succeeded on the seed node; joining ${offsetsMs.length} nodes at ${offsetsMs.map((o) => secs(o)).join(', ')} s after ${model.ticks.length ? 'the first refresh tick' : 'start'}`);
    const runs = offsetsMs.map(async (offset, i) => {
      const name = `bench-${config.replace('kf-', 'kf')}-${i + 1}`;
      const wait = base + offset - Date.now();
      if (wait > 0) await sleep(wait);
      const t: NodeTimes = await joinNode(watch, name, { [POOL_LABEL]: 'kf' });
      try {
        await until(t, (x) => x.readyAt !== undefined, Date.now() + 120_000);
        const readyAt = t.readyAt ?? Date.now();
        const imagesAt = await waitImages(name, WANT, readyAt + boundMs, 500);
        const lastTick = [...model.ticks].filter((x) => x <= readyAt).pop();
        report({
          config,
          node: name,
          ...(imagesAt ? { warmMs: imagesAt - readyAt } : {}),
          ...(t.readyAt ? { readyMs: t.readyAt - t.joinAt } : {}),
          ...(lastTick !== undefined && refresh !== '0s' ? { phaseMs: readyAt - lastTick } : {}),
          boundMs,
        });
      } finally {
        await leave(name);
      }
    });
    await Promise.all(runs);
    log(`${config}: the model created ${model.jobsAt.length} Jobs; refresh ticks at ${model.ticks.map((x) => secs(x - base)).join(', ')} s`);
  } finally {
    await stopModel(model);
  }
}

function summary(): Record<string, unknown> {
  const by = (c: string): Sample[] => samples.filter((s) => s.config === c);
  const med = (c: string): number => {
    const xs = by(c);
    if (xs.length === 0) return Number.NaN;
    // A node never warmed within its bound counts as +Infinity for the median.
    return median(xs.map((s) => s.warmMs ?? Number.POSITIVE_INFINITY).map((x) => (Number.isFinite(x) ? x : 1e15)));
  };
  const raw = med('raw');
  const out: Record<string, unknown> = {};
  console.log('\nsummary (medians of one run; ratio = median / raw median)');
  for (const c of CONFIGS) {
    const m = med(c);
    const never = m >= 1e15;
    const n = by(c).length;
    const ratio = never || !Number.isFinite(raw) ? 'n/a' : (m / raw).toFixed(2);
    console.log(`ttw-${c}: ${never ? 'never' : secs(m)} s median over ${n} nodes; x${ratio} raw`);
    out[c] = { medianMs: never ? null : m, nodes: n, ratioToRaw: never ? null : m / raw };
  }
  return out;
}

async function main(): Promise<void> {
  const started = await ensureCluster();
  prepareImages();
  const kube = new Kube();
  const watch = new NodeWatch(kube, POOL_LABEL, log);
  await watch.start();
  try {
    if (CONFIGS.includes('raw')) await benchRaw();
    if (CONFIGS.includes('prewarm')) await benchPrewarm(kube, watch);
    if (CONFIGS.includes('prewarm-split')) await benchPrewarm(kube, watch, 'prewarm-split', true, true);
    if (CONFIGS.includes('prewarm-no-sidecar')) await benchPrewarm(kube, watch, 'prewarm-no-sidecar', false);
    const kfConfigs = CONFIGS.filter((c) => c.startsWith('kf-'));
    if (kfConfigs.length) {
      await installKubeFledged(kube);
      const seed = await joinNode(watch, 'bench-kf-seed', { [POOL_LABEL]: 'kf' });
      await until(seed, (x) => x.readyAt !== undefined, Date.now() + 120_000);
      try {
        const spread = (period: number, n: number): number[] => Array.from({ length: n }, (_, i) => Math.round(((i + 0.5) * period) / n));
        if (kfConfigs.includes('kf-0s')) await benchKf(kube, watch, 'kf-0s', '0s', spread(30_000, Math.max(2, NODES - 1)), Number(process.env['BENCH_KF0_BOUND_MS'] ?? 150_000));
        if (kfConfigs.includes('kf-1m')) await benchKf(kube, watch, 'kf-1m', '1m', spread(60_000, NODES).map((x) => x + 60_000), 100_000);
        if (kfConfigs.includes('kf-15m')) await benchKf(kube, watch, 'kf-15m', '15m', spread(13 * 60_000, NODES), 17 * 60_000);
      } finally {
        await leave('bench-kf-seed');
        await kube.delete(`${KF_IMAGECACHES}/ttw`).catch(() => false);
      }
    }
  } finally {
    watch.close();
    kube.close();
    await releaseCluster(started);
  }
  const sum = summary();
  const f = saveResults(process.env['BENCH_RESULT'] ?? 'time-to-warm', { images: IMAGES.map((r, i) => ({ ref: r, mib: SIZES_MIB[i] })), nodesPerConfig: NODES, samples, summary: sum, clusterStartedByBench: started });
  log(`wrote ${f}`);
}

await main();
