/**
 * Footprint of the real sidecar process: builds it (tsc -p src/reconciler/tsconfig.json), runs
 * `node <flags> lib/src/reconciler/main.js` against the loopback fake apiserver, drives it to warm
 * the way kubelets and the DaemonSet controller do with lanes (the burst pullers' pods created,
 * one pod update per container start in each of them, each carrying the whole pod with its
 * managedFields; then the holder's own starts, and the pullers deleted once the node is warm),
 * lets it idle, and prints:
 *   sidecar-rss-mib: N          (steady VmRSS: median of the idle window's second half; budget 48)
 *   sidecar-rss-anon-mib: N     (steady RssAnon: the part that is not the node binary's mapped text)
 *   sidecar-rss-peak-mib: N     (max VmRSS over the idle window: the heap right after the warm-up
 *                                burst, before V8's memory reducer returns it, ~8 s later)
 *   sidecar-cpu-idle-percent: N (user+sys CPU over the idle window)
 *   api-reads-warm-transition / api-writes-warm-transition: N
 * Exits non-zero when the budget is exceeded or the sidecar misbehaves.
 *
 * Usage: tsx bench/footprint.ts [--idle-seconds 30] [--images 20] [--pullers 4] [--no-build]
 * Experiments: BENCH_NODE_FLAGS="--flag ..." replaces the node flags; BENCH_EXTRA_ENV="K=V ..." adds env.
 * Everything listens on 127.0.0.1.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { reconcilerNodeFlags } from '../harness/cluster/images.js';
import { freePort } from '../harness/cluster/loopback.js';
import { FakeApiserver } from '../harness/fake-apiserver.js';
import { sleep, waitFor } from '../harness/time.js';
import { median } from './support/stats.js';
import { DEFAULT_GATE_TAINT_KEY, DEFAULTS, LABEL_POOL_MEMBER } from '../src/contract/names.js';
import { nodeAnnotationKey, nodeLabelKey } from '../src/contract/identity.js';
import { renderSidecarEnv, resolveSidecarEnv } from '../src/contract/sidecar-env.js';
import type { KPod } from '../src/reconciler/kube-types.js';
import { LANES_SETTING } from '../src/imagecache/defaults.js';

/** The node flags of the image's entrypoint (src/reconciler/Dockerfile), unless BENCH_NODE_FLAGS replaces them. */
export const SIDECAR_NODE_FLAGS = process.env.BENCH_NODE_FLAGS ? process.env.BENCH_NODE_FLAGS.split(' ') : reconcilerNodeFlags();
const BUDGET_MIB = 48;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const numberArg = (name: string, dflt: number): number => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) || dflt : dflt);
const idleSeconds = numberArg('--idle-seconds', 30);
/** Containers in the pull pod: one per cached image. */
const imageCount = numberArg('--images', 20);
/** Burst pullers beside the holder, the images dealt out among them (0: the holder pulls alone); default: the default lanes' pullers. */
const pullerCount = args.includes('--pullers') ? Math.max(0, Number(args[args.indexOf('--pullers') + 1]) || 0) : LANES_SETTING.default;

function status(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const l of fs.readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const m = /^(\w+):\s+(\d+) kB/.exec(l);
    if (m) out[m[1] as string] = Number(m[2]) / 1024;
  }
  return out;
}

function cpuTicks(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return Number(rest[11]) + Number(rest[12]); // utime + stime
}

/** Median of the second half of per-second samples: the process after it has settled. */
function steady(samples: readonly number[]): number {
  return median(samples.slice(Math.floor(samples.length / 2)));
}

/** managedFields of the size a real pull pod carries: the DaemonSet controller's entry per container, the kubelet's status. */
function managedFields(containers: readonly number[]): unknown[] {
  const spec: Record<string, unknown> = {};
  for (const i of containers) {
    spec[`k:{"name":"c${i}"}`] = {
      '.': {},
      'f:command': {},
      'f:image': {},
      'f:imagePullPolicy': {},
      'f:name': {},
      'f:resources': {
        '.': {},
        'f:limits': { '.': {}, 'f:cpu': {}, 'f:memory': {} },
        'f:requests': { '.': {}, 'f:cpu': {}, 'f:memory': {} },
      },
      'f:securityContext': { '.': {}, 'f:allowPrivilegeEscalation': {}, 'f:readOnlyRootFilesystem': {}, 'f:runAsNonRoot': {} },
      'f:terminationMessagePath': {},
      'f:terminationMessagePolicy': {},
      'f:volumeMounts': { '.': {}, 'k:{"mountPath":"/prewarm"}': { '.': {}, 'f:mountPath': {}, 'f:name': {} } },
    };
  }
  return [
    {
      manager: 'kube-controller-manager',
      operation: 'Update',
      apiVersion: 'v1',
      time: new Date().toISOString(),
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:spec': { 'f:containers': spec } },
    },
    {
      manager: 'kubelet',
      operation: 'Update',
      apiVersion: 'v1',
      time: new Date().toISOString(),
      fieldsType: 'FieldsV1',
      subresource: 'status',
      fieldsV1: {
        'f:status': { 'f:conditions': {}, 'f:containerStatuses': {}, 'f:hostIP': {}, 'f:phase': {}, 'f:podIP': {}, 'f:startTime': {} },
      },
    },
  ];
}

async function main(): Promise<number> {
  if (!args.includes('--no-build')) execFileSync('npx', ['tsc', '-p', 'src/reconciler/tsconfig.json'], { cwd: root, stdio: 'inherit' });
  const now = Date.now();
  const images = Array.from({ length: imageCount }, (_, i) => `registry.local/team/image-${i}:v1`);
  const created = new Date(now - 60_000).toISOString();
  const labels = { [LABEL_POOL_MEMBER]: 'bench' };
  /** A pool pod whose containers `indexes` have started `started` of them, in order, as the kubelet reports it. */
  const poolPod = (name: string, indexes: readonly number[], started: number): KPod =>
    ({
      metadata: {
        name,
        namespace: 'prewarm',
        uid: `uid-${name}`,
        creationTimestamp: created,
        labels,
        ...(started > 0 ? { managedFields: managedFields(indexes) } : {}),
      },
      spec: {
        nodeName: 'bench-node',
        containers: indexes.map((i) => ({ name: `c${i}`, image: images[i], imagePullPolicy: 'Always' })),
      },
      status: {
        phase: started === indexes.length ? 'Running' : 'Pending',
        containerStatuses: indexes.map((i, n) => (n < started ? running(i) : waiting(i))),
      },
    }) as unknown as KPod;
  const running = (i: number): Record<string, unknown> => ({
    name: `c${i}`,
    image: images[i],
    imageID: `${(images[i] as string).split(':')[0]}@sha256:${String(i % 10).repeat(64)}`,
    ready: true,
    started: true,
    restartCount: 0,
    state: { running: { startedAt: new Date(now - 1000).toISOString() } },
  });
  const waiting = (i: number): Record<string, unknown> => ({
    name: `c${i}`,
    image: images[i],
    imageID: '',
    ready: false,
    started: false,
    restartCount: 0,
    state: { waiting: { reason: 'ContainerCreating' } },
  });
  const all = images.map((_, i) => i);
  const api = await new FakeApiserver(poolPod('pull-bench', all, 0), {
    metadata: { name: 'bench-node', uid: 'node-uid', creationTimestamp: created },
    spec: { taints: [{ key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' }] },
    status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: created }] },
  }).start();
  // The pullers' lanes: image i on puller i mod P, so every image is some puller's.
  const lanes = Array.from({ length: pullerCount }, (_, p) => all.filter((i) => i % pullerCount === p)).filter((l) => l.length > 0);
  for (const [p, lane] of lanes.entries()) api.setPod(poolPod(`puller-bench-${p}`, lane, 0));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'prewarm-bench-'));
  const poolsPath = path.join(tmp, 'pools.json');
  fs.writeFileSync(
    poolsPath,
    JSON.stringify({
      pools: [
        {
          id: 'bench',
          namespace: 'prewarm',
          nodeLabelKey: 'prewarm.dev/bench',
          nodeSelector: {},
          tolerations: [],
          gateTaintKey: DEFAULT_GATE_TAINT_KEY,
        },
      ],
    }),
  );
  const metricsPort = await freePort();
  const child = spawn(process.execPath, [...SIDECAR_NODE_FLAGS, path.join(root, 'lib/src/reconciler/main.js')], {
    env: {
      PATH: process.env.PATH ?? '',
      ...(process.env.BENCH_EXTRA_ENV
        ? Object.fromEntries(process.env.BENCH_EXTRA_ENV.split(' ').map((kv) => kv.split('=') as [string, string]))
        : {}),
      PREWARM_KUBE_SERVER: api.url,
      PREWARM_POOLS_PATH: poolsPath,
      ...resolveSidecarEnv(
        renderSidecarEnv({
          poolId: 'bench',
          nodeLabelKey: nodeLabelKey('bench'),
          nodeAnnotationKey: nodeAnnotationKey('bench'),
          gateTaintKey: DEFAULT_GATE_TAINT_KEY,
          deadlineSeconds: DEFAULTS.deadlineSeconds,
          refreshSeconds: DEFAULTS.refreshSeconds,
          metricsPort,
        }),
        { 'spec.nodeName': 'bench-node', 'metadata.name': 'pull-bench', 'metadata.namespace': 'prewarm', 'status.podIP': '127.0.0.1' },
      ),
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number>((r) => child.on('exit', (code) => r(code ?? -1)));
  const pid = child.pid as number;
  try {
    await waitFor('the pod watches', () => api.requests.filter((r) => r.path.includes('watch=true')).length >= 2, 10_000, 20);
    const before = api.requests.length;
    // As the kubelets do: one status update per container start (a kubelet starts a pod's containers
    // in order, the pods side by side), each event carrying the whole pod with managedFields. With
    // pullers the node is warm once they have started everything; without, once the holder has.
    const pullers = lanes.length > 0 ? lanes : [];
    const longest = Math.max(0, ...pullers.map((l) => l.length));
    for (let n = 1; n <= longest; n++) {
      for (const [p, lane] of pullers.entries()) if (n <= lane.length) api.setPod(poolPod(`puller-bench-${p}`, lane, n));
      if (n % 10 === 0) await sleep(5);
    }
    if (pullers.length === 0) {
      for (let n = 1; n <= all.length; n++) {
        api.setPod(poolPod('pull-bench', all, n));
        if (n % 10 === 0) await sleep(5);
      }
    }
    await waitFor('the Warm event', () => api.events.length === 1, 10_000, 20);
    await sleep(300);
    const transition = api.requests.slice(before);
    // Once the node is warm the DaemonSet controller removes the pullers, while the holder goes on
    // starting its own containers (the images are present, so without pulls).
    for (const [p, lane] of pullers.entries()) api.setPod(poolPod(`puller-bench-${p}`, lane, lane.length), 'DELETED');
    if (pullers.length > 0) {
      for (let n = 1; n <= all.length; n++) {
        api.setPod(poolPod('pull-bench', all, n));
        if (n % 10 === 0) await sleep(5);
      }
    }
    await sleep(300);
    const reads = transition.filter((r) => r.method === 'GET').length;
    const writes = transition.filter((r) => r.method !== 'GET').length;
    if (api.node.metadata.labels?.['prewarm.dev/bench'] !== 'warm' || (api.node.spec?.taints ?? []).length !== 0)
      throw new Error('sidecar did not warm the node');
    // Idle: sample RSS and CPU; a scrape every 5 s like Prometheus would.
    const t0 = cpuTicks(pid);
    const w0 = Date.now();
    const rss: number[] = [];
    const anon: number[] = [];
    for (let s = 0; s < idleSeconds; s++) {
      await sleep(1000);
      if (s % 5 === 0) await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text());
      const st = status(pid);
      rss.push(st.VmRSS ?? 0);
      anon.push(st.RssAnon ?? 0);
    }
    const cpuPct = ((cpuTicks(pid) - t0) / 100 / ((Date.now() - w0) / 1000)) * 100;
    const steadyRss = steady(rss);
    const idleWrites = api.writes().length - writes;
    child.kill('SIGTERM');
    const code = await exited;
    const cleaned = api.node.metadata.labels?.['prewarm.dev/bench'] === undefined;
    process.stdout.write(
      [
        `sidecar-rss-mib: ${steadyRss.toFixed(1)}`,
        `sidecar-rss-anon-mib: ${steady(anon).toFixed(1)}`,
        `sidecar-rss-peak-mib: ${Math.max(...rss).toFixed(1)}`,
        `sidecar-cpu-idle-percent: ${cpuPct.toFixed(2)}`,
        `api-reads-warm-transition: ${reads}`,
        `api-writes-warm-transition: ${writes}`,
        `api-writes-while-idle: ${idleWrites}`,
        `sigterm-exit-code: ${code}`,
        `sigterm-cleaned-label: ${cleaned}`,
        `images: ${imageCount}`,
        `pullers: ${lanes.length}`,
        `node-flags: ${SIDECAR_NODE_FLAGS.join(' ')}`,
        '',
      ].join('\n'),
    );
    const ok = steadyRss <= BUDGET_MIB && writes <= 3 && idleWrites === 0 && code === 0 && cleaned;
    if (!ok) process.stderr.write(`footprint check failed; sidecar stderr:\n${stderr}`);
    return ok ? 0 : 1;
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\nsidecar stderr:\n${stderr}`);
    child.kill('SIGKILL');
    return 1;
  } finally {
    await api.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

process.exitCode = await main();
