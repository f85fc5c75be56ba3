/**
 * `npm run bench:time-to-warm`: time from a joining real node's Ready to its pool being warm, on
 * the real-cluster harness (harness/cluster), side by side in one run, per image set:
 *
 *   raw          crictl pull of the set's images, all at once, on a fresh bare containerd (the limit)
 *   lanes-<L>    prewarm with `spec.lanes: L` (`lanes-default`: the default, src/imagecache/parse.ts):
 *                `prewarm synth --stdout --reconciler-image <local>` applied, nodes join the pool
 *                one after another; measured to the sidecar's warm label, and to the images in the
 *                node's containerd
 *   kf-<period>  the kube-fledged model (bench/kubefledged/model.ts) with that refresh period
 *                (0s = never, 1m, 15m: its default), nodes joining at offsets spread over a period
 *
 * Image sets (BENCH_SETS):
 *   small5    5 images, 8..48 MiB, 128 MiB in all
 *   large5    5 images, 128..288 MiB, 1 GiB in all
 *   many50    50 small images (bench:footprint-node's: 4 KiB of data each)
 *   many200   200 of them
 *
 * For the first node of each prewarm configuration it records the join (harness/timeline-recorder)
 * and draws the waterfall (src/status/timeline-render.ts, as `prewarm status --node -o svg`) to
 * bench/results/waterfall-<set>-<config>.svg. Prints one line per node and a summary (medians,
 * ratios to raw, the target of issue 14: Ready → warm ≤ 1.1 × raw + 2 s), and writes
 * bench/results/time-to-warm.json. A benchmark: long, bounded, stops by itself. Reuses a running
 * harness cluster (starts one only if none is up, and stops it at the end unless
 * BENCH_KEEP_CLUSTER=1); adds and removes only its own nodes (bench-*).
 *
 * Env: BENCH_SETS=small5,large5,many50,many200
 *      BENCH_CONFIGS_<SET>=raw,lanes-default,...   (per set; defaults below)
 *      BENCH_NODES=3 (nodes per configuration; many50/many200 use BENCH_NODES_MANY=2)
 *      BENCH_RESULT=time-to-warm (the results file's name: keep a partial run beside the full one)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REGISTRY, REPO_DIR, STATE_DIR } from '../harness/cluster/config.js';
import { rawPull, startBareRuntime, stopBareRuntime } from '../harness/cluster/bare.js';
import {
  buildOciImage,
  busyboxLayers,
  ensureReconcilerImage,
  ensureStandIns,
  imageInRegistry,
  normalize,
  pushImage,
} from '../harness/cluster/images.js';
import { Kube } from '../harness/kube.js';
import { applyAll, synthObjects } from '../harness/manifests.js';
import { NodeWatch, until, waitImages, type NodeTimes } from '../harness/nodes.js';
import { TimelineRecorder } from '../harness/timeline-recorder.js';
import { pullersOnNode } from '../harness/pullers.js';
import { pollUntil, secs, sleep } from '../harness/time.js';
import { LANES_SETTING } from '../src/imagecache/parse.js';
import { buildTimeline } from '../src/status/timeline.js';
import { renderTimelineSvg } from '../src/status/timeline-render.js';
import { ensureKfBusybox, installKubeFledged, KF_IMAGECACHES, kfImageCache, startModel, stopModel } from './support/kubefledged.js';
import { ensureCluster, releaseCluster, join as joinNode, leave } from './support/cluster.js';
import { log, median, RESULTS_DIR, saveResults, ttwFigure as figure } from './support/stats.js';

const POOL_LABEL = 'bench.prewarm.dev/pool';
const RECONCILER_IMAGE = `${REGISTRY.plain}/prewarm/reconciler:bench`;
/** Each prewarm configuration gets its own namespace, so none waits for another's to be deleted. */
const pwNamespace = (set: ImageSet, config: string) => `prewarm-bench-${set.name}-${config}`;
const MIB = 1 << 20;

interface ImageSet {
  readonly name: string;
  readonly images: readonly string[];
  /** Bytes of data per image (incompressible). */
  readonly sizes: readonly number[];
  readonly configs: readonly string[];
  readonly nodes: number;
  /** How long one node may take from Ready to warm before it counts as never. */
  readonly boundMs: number;
}

const NODES = Number(process.env['BENCH_NODES'] ?? 3);
const NODES_MANY = Number(process.env['BENCH_NODES_MANY'] ?? 2);

function imageSet(name: string, sizes: readonly number[], configs: string, nodes: number, boundMs: number): ImageSet {
  return {
    name,
    images: sizes.map((_, i) => `${REGISTRY.plain}/bench/ttw-${name}-${i + 1}:v1`),
    sizes,
    configs: (process.env[`BENCH_CONFIGS_${name.toUpperCase()}`] ?? configs).split(','),
    nodes,
    boundMs,
  };
}

const SETS: Record<string, ImageSet> = {
  small5: imageSet(
    'small5',
    [8, 16, 24, 32, 48].map((m) => m * MIB),
    'raw,lanes-default,lanes-1,lanes-2,lanes-4,lanes-6,kf-1m',
    NODES,
    240_000,
  ),
  large5: imageSet(
    'large5',
    [128, 160, 208, 240, 288].map((m) => m * MIB),
    'raw,lanes-default,lanes-1,lanes-6,kf-1m',
    NODES,
    300_000,
  ),
  many50: imageSet('many50', Array<number>(50).fill(4096), 'lanes-default,lanes-1,lanes-2,lanes-4,lanes-16,kf-1m', NODES_MANY, 300_000),
  many200: imageSet('many200', Array<number>(200).fill(4096), 'lanes-default,lanes-16,kf-1m', NODES_MANY, 600_000),
};
const WANT_SETS = (process.env['BENCH_SETS'] ?? 'small5,large5,many50,many200').split(',');

interface Sample {
  set: string;
  config: string;
  node: string;
  /** Ready -> all images in the node's containerd (ms); undefined: not within the bound. */
  imagesMs?: number;
  /** Ready -> the sidecar's warm label (prewarm only). */
  warmMs?: number;
  /** Join started -> Ready (ms). */
  readyMs?: number;
  /** Puller pods seen on the node while it warmed (prewarm only). */
  pullers?: number;
  /** Where in the refresh period the node became Ready (kube-fledged; ms after the last tick). */
  phaseMs?: number;
  boundMs?: number;
}
const samples: Sample[] = [];

function report(s: Sample): void {
  samples.push(s);
  const f = figure(s);
  const extra = [
    s.imagesMs !== undefined && s.config.startsWith('lanes-') ? `images in containerd ${secs(s.imagesMs)} s` : '',
    s.pullers !== undefined ? `${s.pullers} pullers` : '',
    s.phaseMs !== undefined ? `Ready ${secs(s.phaseMs)} s after a refresh tick` : '',
    s.readyMs !== undefined ? `join-to-Ready ${secs(s.readyMs)} s` : '',
  ].filter(Boolean);
  console.log(
    `${s.set} ${s.config} ${s.node}: ready-to-warm ${f === undefined ? `never (bound ${secs(s.boundMs ?? 0)} s)` : `${secs(f)} s`}${extra.length ? `; ${extra.join('; ')}` : ''}`,
  );
}

async function prepareImages(sets: readonly ImageSet[]): Promise<void> {
  for (const set of sets) {
    const bySize = new Map<number, string[]>();
    set.images.forEach((ref, i) => bySize.set(set.sizes[i] as number, [...(bySize.get(set.sizes[i] as number) ?? []), ref]));
    for (const [sizeBytes, refs] of bySize) await ensureStandIns(refs, { sizeBytes });
  }
  // prewarm's helper: a static busybox (the harness's layer).
  const pwHelper = 'docker.io/library/busybox:1.36.1-musl';
  if (!imageInRegistry(pwHelper)) pushImage(buildOciImage(`helper-${pwHelper}`, busyboxLayers(), { cmd: ['/bin/sh'] }), pwHelper);
  ensureKfBusybox();
  ensureReconcilerImage(RECONCILER_IMAGE, REPO_DIR);
}

async function benchRaw(set: ImageSet): Promise<void> {
  for (let i = 1; i <= set.nodes; i++) {
    const name = `bench-raw-${i}`;
    await startBareRuntime(name);
    try {
      report({ set: set.name, config: 'raw', node: name, imagesMs: await rawPull(name, set.images) });
    } finally {
      await stopBareRuntime(name);
    }
  }
}

function lanesOf(config: string): number {
  const v = config.slice('lanes-'.length);
  return v === 'default' ? LANES_SETTING.default : Number(v);
}

async function benchLanes(kube: Kube, watch: NodeWatch, set: ImageSet, config: string): Promise<void> {
  const PW_NS = pwNamespace(set, config);
  const lanes = lanesOf(config);
  const specs = join(STATE_DIR, 'bench-specs', 'ttw');
  mkdirSync(specs, { recursive: true });
  writeFileSync(
    join(specs, 'imagecache.yaml'),
    JSON.stringify({
      apiVersion: 'prewarm.dev/v1alpha1',
      kind: 'ImageCache',
      metadata: { name: 'ttw', namespace: PW_NS },
      spec: { lanes, cacheSpec: [{ pool: 'ttw', nodeSelector: { [POOL_LABEL]: 'ttw' }, images: set.images }] },
    }),
  );
  const synthesized = await synthObjects(specs, ['--reconciler-image', RECONCILER_IMAGE, '--own-namespace', PW_NS]);
  await applyAll(kube, synthesized);
  const want = set.images.map(normalize);
  for (let i = 1; i <= set.nodes; i++) {
    const name = `bench-pw-${i}`;
    const recorder = i === 1 ? new TimelineRecorder(kube, name) : undefined;
    await recorder?.start();
    const t: NodeTimes = await joinNode(watch, name, { [POOL_LABEL]: 'ttw' });
    try {
      const bound = Date.now() + 60_000 + set.boundMs;
      await until(t, (x) => x.readyAt !== undefined, Date.now() + 120_000);
      const readyAt = t.readyAt ?? Date.now();
      let pullers = 0;
      const warm = pollUntil(
        async () => {
          pullers = Math.max(pullers, (await pullersOnNode(kube, PW_NS, name)).length);
          return t.labelsAt.has('prewarm.dev/ttw=warm');
        },
        readyAt + set.boundMs,
        250,
      );
      const imagesAt = await waitImages(name, want, Math.min(bound, readyAt + set.boundMs), 250);
      await warm;
      const warmAt = t.labelsAt.get('prewarm.dev/ttw=warm');
      report({
        set: set.name,
        config,
        node: name,
        ...(imagesAt !== undefined ? { imagesMs: imagesAt - readyAt } : {}),
        ...(warmAt !== undefined ? { warmMs: warmAt - readyAt } : {}),
        ...(t.readyAt !== undefined ? { readyMs: t.readyAt - t.joinAt } : {}),
        pullers,
        boundMs: set.boundMs,
      });
      if (recorder !== undefined) {
        // The pullers leave after the warm label; give their deletion a moment to be recorded.
        await sleep(3000);
        recorder.stop();
        const daemonSets = (await kube.list(`/apis/apps/v1/namespaces/${PW_NS}/daemonsets`)).items;
        const f = join(RESULTS_DIR, `waterfall-${set.name}-${config}.svg`);
        writeFileSync(f, renderTimelineSvg(buildTimeline(recorder.input(daemonSets)), `${set.name}, ${config}: warm-up of a joining node`));
        log(`wrote ${f}`);
      }
    } finally {
      recorder?.stop();
      await leave(name);
    }
  }
  // Deleted in the background: the next configuration has its own namespace.
  await kube.delete(`/api/v1/namespaces/${PW_NS}`);
}

async function waitCacheStatus(kube: Kube, name: string, want: string, bound: number): Promise<boolean> {
  return (await pollUntil(async () => (await kube.getOpt(`${KF_IMAGECACHES}/${name}`))?.status?.status === want, bound, 500)) ?? false;
}

/**
 * One kube-fledged configuration: (re)start the model with `refresh`, (re)create the ImageCache
 * while the seed node matches (so the first sync really pulls and ends Succeeded, the steady state
 * of a cluster that has run for a while; with no matching node kube-fledged ends the sync
 * NoImagesPulledOrDeleted and retries on its next refresh, which would only shift the phase), then join
 * nodes at `offsetsMs` after the model's first refresh tick and wait up to `boundMs` after each
 * node's Ready.
 */
async function benchKf(kube: Kube, watch: NodeWatch, set: ImageSet, config: string, offsetsMs: number[], boundMs: number): Promise<void> {
  const cache = `ttw-${set.name}`;
  const refresh = config.slice('kf-'.length);
  await kube.delete(`${KF_IMAGECACHES}/${cache}`).catch(() => false);
  await sleep(1000);
  const model = startModel({ refresh });
  const want = set.images.map(normalize);
  try {
    const t0 = Date.now();
    await sleep(1500);
    await kube.create(KF_IMAGECACHES, kfImageCache(cache, set.images, { [POOL_LABEL]: 'kf' }));
    if (!(await waitCacheStatus(kube, cache, 'Succeeded', Date.now() + 600_000)))
      throw new Error(`${set.name} ${config}: the ImageCache never Succeeded on the seed node`);
    const base = model.ticks[0] ?? t0;
    log(
      `${set.name} ${config}: ImageCache Succeeded on the seed node; joining ${offsetsMs.length} nodes at ${offsetsMs.map((o) => secs(o)).join(', ')} s`,
    );
    const runs = offsetsMs.map(async (offset, i) => {
      const name = `bench-kf-${i + 1}`;
      const wait = base + offset - Date.now();
      if (wait > 0) await sleep(wait);
      const t: NodeTimes = await joinNode(watch, name, { [POOL_LABEL]: 'kf' });
      try {
        await until(t, (x) => x.readyAt !== undefined, Date.now() + 120_000);
        const readyAt = t.readyAt ?? Date.now();
        const imagesAt = await waitImages(name, want, readyAt + boundMs, 500);
        const lastTick = [...model.ticks].filter((x) => x <= readyAt).pop();
        report({
          set: set.name,
          config,
          node: name,
          ...(imagesAt !== undefined ? { imagesMs: imagesAt - readyAt } : {}),
          ...(t.readyAt !== undefined ? { readyMs: t.readyAt - t.joinAt } : {}),
          ...(lastTick !== undefined && refresh !== '0s' ? { phaseMs: readyAt - lastTick } : {}),
          boundMs,
        });
      } finally {
        await leave(name);
      }
    });
    await Promise.all(runs);
    log(
      `${set.name} ${config}: the model created ${model.jobsAt.length} Jobs; refresh ticks at ${model.ticks.map((x) => secs(x - base)).join(', ')} s`,
    );
  } finally {
    await stopModel(model);
    await kube.delete(`${KF_IMAGECACHES}/${cache}`).catch(() => false);
  }
}

const PERIOD_MS: Record<string, number> = { '0s': 30_000, '1m': 60_000, '15m': 13 * 60_000 };

async function benchSet(kube: Kube, watch: NodeWatch, set: ImageSet): Promise<void> {
  log(
    `set ${set.name}: ${set.images.length} images, ${(set.sizes.reduce((a, b) => a + b, 0) / MIB).toFixed(0)} MiB; configs ${set.configs.join(', ')}`,
  );
  for (const config of set.configs) {
    if (config === 'raw') await benchRaw(set);
    else if (config.startsWith('lanes-')) await benchLanes(kube, watch, set, config);
    else if (config.startsWith('kf-')) {
      const period = PERIOD_MS[config.slice(3)];
      if (period === undefined) throw new Error(`unknown configuration ${config}`);
      await installKubeFledged(kube);
      const seed = await joinNode(watch, 'bench-kf-seed', { [POOL_LABEL]: 'kf' });
      await until(seed, (x) => x.readyAt !== undefined, Date.now() + 120_000);
      try {
        // Joins spread over one period, after the first refresh tick; the bound covers a full period.
        const offsets = Array.from(
          { length: set.nodes },
          (_, i) => Math.round(((i + 0.5) * period) / set.nodes) + (config === 'kf-0s' ? 0 : period),
        );
        await benchKf(kube, watch, set, config, offsets, config === 'kf-0s' ? 150_000 : period + set.boundMs);
      } finally {
        await leave('bench-kf-seed');
      }
    } else throw new Error(`unknown configuration ${config}`);
  }
}

function summary(): Record<string, unknown> {
  const out: Record<string, Record<string, unknown>> = {};
  console.log('\nsummary (medians of one run; ratio = median / raw median; prewarm: Ready -> warm label)');
  for (const setName of WANT_SETS) {
    const set = SETS[setName];
    if (set === undefined) continue;
    const med = (c: string): number | undefined => {
      const xs = samples.filter((s) => s.set === setName && s.config === c);
      if (xs.length === 0) return undefined;
      // A node never warm within its bound counts as +Infinity for the median.
      const m = median(xs.map((s) => figure(s) ?? 1e15));
      return m >= 1e15 ? Number.POSITIVE_INFINITY : m;
    };
    const raw = med('raw');
    const kf = set.configs.filter((c) => c.startsWith('kf-')).map((c) => [c, med(c)] as const);
    out[setName] = {};
    for (const c of set.configs) {
      const m = med(c);
      if (m === undefined) continue;
      const ratio = raw === undefined || !Number.isFinite(m) ? undefined : m / raw;
      const target = raw === undefined ? undefined : 1.1 * raw + 2000;
      const notes = [
        ratio === undefined ? '' : `x${ratio.toFixed(2)} raw`,
        c.startsWith('lanes-') && target !== undefined ? `target ${secs(target)} s ${m <= target ? 'met' : 'missed'}` : '',
        ...(c.startsWith('lanes-')
          ? kf.map(([k, v]) =>
              v === undefined ? '' : `${m < v ? 'beats' : 'loses to'} ${k} (${Number.isFinite(v) ? `${secs(v)} s` : 'never'})`,
            )
          : []),
      ].filter(Boolean);
      console.log(
        `ttw ${setName} ${c}${c === 'lanes-default' ? ` (=${LANES_SETTING.default})` : ''}: ${Number.isFinite(m) ? `${secs(m)} s` : 'never'} median; ${notes.join('; ')}`,
      );
      out[setName][c] = {
        medianMs: Number.isFinite(m) ? m : null,
        ratioToRaw: ratio ?? null,
        nodes: samples.filter((s) => s.set === setName && s.config === c).length,
      };
    }
  }
  return out;
}

async function main(): Promise<void> {
  const sets = WANT_SETS.map((s) => {
    const set = SETS[s];
    if (set === undefined) throw new Error(`unknown image set ${s}; known: ${Object.keys(SETS).join(', ')}`);
    return set;
  });
  const started = await ensureCluster();
  await prepareImages(sets);
  const kube = new Kube();
  const watch = new NodeWatch(kube, POOL_LABEL, log);
  await watch.start();
  try {
    for (const set of sets) await benchSet(kube, watch, set);
  } finally {
    watch.close();
    kube.close();
    await releaseCluster(started);
  }
  const sum = summary();
  const f = saveResults(process.env['BENCH_RESULT'] ?? 'time-to-warm', {
    defaultLanes: LANES_SETTING.default,
    sets: Object.fromEntries(
      sets.map((s) => [s.name, { images: s.images.length, mib: s.sizes.reduce((a, b) => a + b, 0) / MIB, nodes: s.nodes }]),
    ),
    samples,
    summary: sum,
    clusterStartedByBench: started,
  });
  log(`wrote ${f}`);
}

await main();
