/**
 * Footprint of the real sidecar process: builds it (tsc -p src/reconciler/tsconfig.json), and per
 * pool size (5, 50 and 200 images unless --images says otherwise) runs `node <flags>
 * lib/src/reconciler/main.js` several times against the loopback fake apiserver, with a bearer
 * token as in a cluster. Each run goes as on a joining node: the sidecar (a native sidecar, so
 * first) opens its watches and waits while the images are pulled (--pull-seconds), then the pods'
 * containers start the way kubelets and the DaemonSet controller report it with lanes (the burst
 * pullers' pods created, one pod update per container start in each of them, each carrying the
 * whole pod with its managedFields; then the holder's own starts, and the pullers deleted once the
 * node is warm); then the sidecar idles. The sizes run side by side, the runs of a size one after
 * another: about 50 s with one run each (the default), `--runs 3` for medians of three. Prints one `footprint images=N run=R: ...` line per run,
 * then per size the median over its runs:
 *   sidecar-rss-mib images=N: M          (steady VmRSS: median of the idle window's second half; budget 48)
 *   sidecar-rss-anon-mib images=N: M     (steady RssAnon: the part that is not the node binary's mapped text)
 *   sidecar-rss-peak-mib images=N: M     (max VmRSS over the idle window)
 *   sidecar-cpu-idle-percent images=N: M (user+sys CPU over the idle window; budget 5)
 *   sidecar-cpu-seconds images=N: M      (user+sys CPU from spawn to the idle window's end: start, the
 *                                         warm-up burst's watch events and idle; the load of other work
 *                                         changes it far less than the idle share)
 *   sidecar-start-ms images=N: M         (spawn → both pod watches open: the start on the critical path)
 *   sidecar-warm-ms images=N: M          (the last container start sent → the Warm event)
 *   api-reads-warm-transition / api-writes-warm-transition images=N: M
 * Exits non-zero when a median is over its budget or any run misbehaves (idle writes, more than 3
 * writes per transition, a SIGTERM that does not clean up).
 *
 * Usage: tsx bench/footprint.ts [--images 5,50,200] [--runs 1] [--idle-seconds 30] [--pull-seconds 15]
 *                               [--pullers 4] [--no-build]
 * Experiments: BENCH_NODE_FLAGS="--flag ..." replaces the node flags; BENCH_EXTRA_ENV="K=V ..." adds env;
 * BENCH_SIDECAR_STDOUT=FILE keeps the sidecar's stdout in FILE.images-N, the runs of a size one after
 * another (with --trace-gc in the flags, V8's GC trace).
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
import { LANES } from '../src/contract/names.js';

/** The node flags of the image's entrypoint (src/reconciler/Dockerfile), unless BENCH_NODE_FLAGS replaces them. */
export const SIDECAR_NODE_FLAGS = process.env.BENCH_NODE_FLAGS
  ? process.env.BENCH_NODE_FLAGS.split(/\s+/).filter(Boolean)
  : reconcilerNodeFlags();
const BUDGET_MIB = 48;
/**
 * Idle CPU, in percent of one core. An idle sidecar makes no requests and parses nothing; a
 * share above this is the warm-up burst's events still being worked through, or work on a timer.
 */
const BUDGET_CPU_IDLE_PERCENT = 5;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const numberArg = (name: string, dflt: number): number => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) || dflt : dflt);
const idleSeconds = numberArg('--idle-seconds', 30);
/**
 * From the watches opening to the first container start: the pulls. The native sidecar starts
 * before the images land (13-25 s after Ready on the remote profile, docs/benchmarks.md), so the
 * sidecar has settled, and V8 has run its one memory-reducing collection, before the burst.
 */
const pullSeconds = args.includes('--pull-seconds') ? Math.max(0, Number(args[args.indexOf('--pull-seconds') + 1]) || 0) : 15;
/** Pool sizes: containers in the pull pod, one per cached image. */
const sizes = (args.includes('--images') ? (args[args.indexOf('--images') + 1] ?? '') : '5,50,200')
  .split(',')
  .map(Number)
  .filter((n) => Number.isInteger(n) && n > 0);
const runs = numberArg('--runs', 1);
/** Burst pullers beside the holder, the images dealt out among them (0: the holder pulls alone); default: the default lanes' pullers. */
const pullerCount = args.includes('--pullers') ? Math.max(0, Number(args[args.indexOf('--pullers') + 1]) || 0) : LANES.default;

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

/** What one run measured. */
interface Run {
  readonly rss: number;
  readonly anon: number;
  readonly peak: number;
  readonly cpuIdlePercent: number;
  /** User+sys CPU seconds from spawn to the idle window's end. */
  readonly cpuSeconds: number;
  /** Spawn → both pod watches open (ms): the sidecar's start, on the warm-up's critical path. */
  readonly startMs: number;
  /** Last container start sent → the Warm event (ms). */
  readonly warmMs: number;
  readonly reads: number;
  readonly writes: number;
  readonly idleWrites: number;
  readonly exitCode: number;
  readonly cleaned: boolean;
  readonly pullers: number;
  /** The sidecar's stderr, shown when the run misbehaved. */
  readonly stderr: string;
}

/** Whether a run did what the sidecar must: ≤ 3 writes per transition, none while idle, a clean SIGTERM. */
const behaved = (r: Run): boolean => r.writes <= 3 && r.idleWrites === 0 && r.exitCode === 0 && r.cleaned;

/** One sidecar process through pull, warm-up burst, idle and SIGTERM, with a pool of `imageCount` images. */
async function measure(imageCount: number): Promise<Run> {
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
  const token = `bench-token-${process.pid}-${imageCount}`;
  const api = await new FakeApiserver(
    poolPod('pull-bench', all, 0),
    {
      metadata: { name: 'bench-node', uid: 'node-uid', creationTimestamp: created },
      spec: { taints: [{ key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' }] },
      status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: created }] },
    },
    { token },
  ).start();
  // The pullers' lanes: image i on puller i mod P, so every image is some puller's.
  const lanes = Array.from({ length: pullerCount }, (_, p) => all.filter((i) => i % pullerCount === p)).filter((l) => l.length > 0);
  for (const [p, lane] of lanes.entries()) api.setPod(poolPod(`puller-bench-${p}`, lane, 0));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'prewarm-bench-'));
  const poolsPath = path.join(tmp, 'pools.json');
  const tokenPath = path.join(tmp, 'token');
  fs.writeFileSync(tokenPath, `${token}\n`);
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
  const stdoutFd = process.env.BENCH_SIDECAR_STDOUT
    ? fs.openSync(`${process.env.BENCH_SIDECAR_STDOUT}.images-${imageCount}`, 'a')
    : undefined;
  const child = spawn(process.execPath, [...SIDECAR_NODE_FLAGS, path.join(root, 'lib/src/reconciler/main.js')], {
    env: {
      PATH: process.env.PATH ?? '',
      ...(process.env.BENCH_EXTRA_ENV
        ? Object.fromEntries(
            process.env.BENCH_EXTRA_ENV.split(/\s+/)
              .filter(Boolean)
              .map((kv) => kv.split('=') as [string, string]),
          )
        : {}),
      PREWARM_KUBE_SERVER: api.url,
      PREWARM_KUBE_TOKEN_FILE: tokenPath,
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
    stdio: ['ignore', stdoutFd ?? 'ignore', 'pipe'],
  });
  // The child has its own copy of the descriptor.
  if (stdoutFd !== undefined) fs.closeSync(stdoutFd);
  let stderr = '';
  if (child.stderr === null) throw new Error('sidecar spawned without a stderr pipe');
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number>((r) => child.on('exit', (code) => r(code ?? -1)));
  const pid = child.pid as number;
  const spawnedAt = performance.now();
  try {
    await waitFor('the pod watches', () => api.requests.filter((r) => r.path.includes('watch=true')).length >= 2, 10_000, 5);
    const startMs = performance.now() - spawnedAt;
    await sleep(pullSeconds * 1000);
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
    const lastStartAt = performance.now();
    await waitFor('the Warm event', () => api.events.length === 1, 10_000, 5);
    const warmMs = performance.now() - lastStartAt;
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
    const t1 = cpuTicks(pid);
    const cpuIdlePercent = ((t1 - t0) / 100 / ((Date.now() - w0) / 1000)) * 100;
    const idleWrites = api.writes().length - writes;
    child.kill('SIGTERM');
    const exitCode = await exited;
    const cleaned = api.node.metadata.labels?.['prewarm.dev/bench'] === undefined;
    return {
      rss: steady(rss),
      anon: steady(anon),
      peak: Math.max(...rss),
      cpuIdlePercent,
      cpuSeconds: t1 / 100,
      startMs,
      warmMs,
      reads,
      writes,
      idleWrites,
      exitCode,
      cleaned,
      pullers: lanes.length,
      stderr,
    };
  } catch (e) {
    child.kill('SIGKILL');
    throw new Error(`${(e as Error).message}\nsidecar stderr:\n${stderr}`, { cause: e });
  } finally {
    await api.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function main(): Promise<number> {
  if (!args.includes('--no-build')) execFileSync('npx', ['tsc', '-p', 'src/reconciler/tsconfig.json'], { cwd: root, stdio: 'inherit' });
  if (sizes.length === 0) throw new Error('--images: a comma-separated list of pool sizes, e.g. 5,50,200');
  const out = (line: string): boolean => process.stdout.write(`${line}\n`);
  out(`node-flags: ${SIDECAR_NODE_FLAGS.join(' ')}`);
  let ok = true;
  // The sizes side by side (one sidecar process and fake apiserver each: a run mostly waits), the
  // runs of a size one after another; the lines are printed per size once all are done.
  const measured = await Promise.all(
    sizes.map(async (n) => {
      const done: Run[] = [];
      for (let r = 1; r <= runs; r++) done.push(await measure(n));
      return done;
    }),
  );
  for (const [i, n] of sizes.entries()) {
    const done = measured[i] ?? [];
    for (const [k, m] of done.entries()) {
      const r = k + 1;
      out(
        `footprint images=${n} run=${r}: rss ${m.rss.toFixed(1)} MiB (anon ${m.anon.toFixed(1)}, peak ${m.peak.toFixed(1)}), ` +
          `cpu idle ${m.cpuIdlePercent.toFixed(2)} % (${m.cpuSeconds.toFixed(2)} s in all), start ${m.startMs.toFixed(0)} ms, warm ${m.warmMs.toFixed(0)} ms, api ${m.reads} reads + ${m.writes} writes per transition, ` +
          `${m.idleWrites} writes idle, pullers ${m.pullers}, sigterm exit ${m.exitCode}${m.cleaned ? ' cleaned' : ' NOT cleaned'}`,
      );
      if (!behaved(m)) {
        ok = false;
        process.stderr.write(`images=${n} run=${r} misbehaved; sidecar stderr:\n${m.stderr}`);
      }
    }
    const med = (f: (r: Run) => number): number => median(done.map(f));
    const rss = med((r) => r.rss);
    if (rss > BUDGET_MIB) ok = false;
    out(`sidecar-rss-mib images=${n}: ${rss.toFixed(1)} (runs ${done.map((r) => r.rss.toFixed(1)).join(' ')}; budget ${BUDGET_MIB})`);
    out(`sidecar-rss-anon-mib images=${n}: ${med((r) => r.anon).toFixed(1)}`);
    out(`sidecar-rss-peak-mib images=${n}: ${med((r) => r.peak).toFixed(1)}`);
    const cpuIdle = med((r) => r.cpuIdlePercent);
    if (cpuIdle > BUDGET_CPU_IDLE_PERCENT) ok = false;
    out(`sidecar-cpu-idle-percent images=${n}: ${cpuIdle.toFixed(2)} (budget ${BUDGET_CPU_IDLE_PERCENT})`);
    out(`sidecar-cpu-seconds images=${n}: ${med((r) => r.cpuSeconds).toFixed(2)}`);
    out(`sidecar-start-ms images=${n}: ${med((r) => r.startMs).toFixed(0)}`);
    out(`sidecar-warm-ms images=${n}: ${med((r) => r.warmMs).toFixed(0)}`);
    out(`api-reads-warm-transition images=${n}: ${med((r) => r.reads)}`);
    out(`api-writes-warm-transition images=${n}: ${med((r) => r.writes)}`);
  }
  if (!ok)
    process.stderr.write(
      `footprint check failed: a median over ${BUDGET_MIB} MiB or ${BUDGET_CPU_IDLE_PERCENT} % idle CPU, or a run that misbehaved\n`,
    );
  return ok ? 0 : 1;
}

process.exitCode = await main();
