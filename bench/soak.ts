/**
 * A month in an hour: the real sidecar process (lib/src/reconciler/main.js, with the image's node
 * flags) against the loopback fake apiserver and a fake registry, its clock running --scale times
 * faster than the wall clock (PREWARM_TIME_SCALE; 720 makes an hour a month). Meanwhile, at random
 * (a fixed seed): watches closed, 410s, bookmarks, puller pods created, updated and deleted, pods of
 * other nodes, node updates (conditions, an admin's label, the taint back), the token rotated,
 * tags moved in the registry and registry errors, with refresh on; and now and then a connection
 * flood on the metrics port. The sidecar's own resyncs run on its clock.
 *
 * Prints, for the first and the last tenth of the run: RSS, heap (V8's, from --trace-gc: used
 * after the last full collection, so live objects rather than garbage a scavenge left behind), open file descriptors, apiserver and registry requests per
 * simulated hour; and restarts (a sidecar that exits is started again, and counted). Exits
 * non-zero on a miss of the budget: RSS or heap grown beyond noise, descriptors grown, requests
 * per simulated hour not flat, or any restart.
 *
 * Usage: tsx bench/soak.ts [--minutes 60] [--scale 720] [--short] [--seed 1] [--no-build]
 *   --short: 2 minutes (CI). Everything listens on 127.0.0.1; every loop ends by the deadline.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { reconcilerNodeFlags } from '../harness/cluster/images.js';
import { freePort } from '../harness/cluster/loopback.js';
import { FakeApiserver } from '../harness/fake-apiserver.js';
import { probe, startFlood } from '../harness/flood.js';
import { sleep, waitFor } from '../harness/time.js';
import { median } from './support/stats.js';
import { DEFAULT_GATE_TAINT_KEY, LABEL_POOL_MEMBER, STARTUP_PATH } from '../src/contract/names.js';
import { nodeAnnotationKey, nodeLabelKey } from '../src/contract/identity.js';
import { renderSidecarEnv, resolveSidecarEnv } from '../src/contract/sidecar-env.js';
import type { KNode, KPod } from '../src/reconciler/kube-types.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const numberArg = (name: string, dflt: number): number => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) || dflt : dflt);
const minutes = args.includes('--short') ? 2 : numberArg('--minutes', 60);
const scale = numberArg('--scale', 720);
const seed = numberArg('--seed', 1);
/** Budget: growth from the first tenth to the last that counts as noise. */
const BUDGET = { rssMiB: 4, heapMiB: 2, fds: 4, requestRatio: 1.5 } as const;
const NODE = 'soak-node';
const NS = 'prewarm';
const POD = 'pull-soak';
const IMAGES = 20;
/** Simulated hours per real millisecond. */
const simHoursPerMs = scale / 3_600_000;

/** mulberry32: a small seeded PRNG, so two runs see the same storm. */
function prng(s: number): () => number {
  let a = s >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = prng(seed);

/** A registry that answers HEAD of a manifest with a digest that moves when told, or fails when told. */
async function fakeRegistry(): Promise<{
  url: string;
  host: string;
  requests: () => number;
  move(i: number): void;
  failRate: number;
  close(): void;
}> {
  const gen = new Map<number, number>();
  let requests = 0;
  const state = { failRate: 0.05 };
  const server = http.createServer((req, res) => {
    requests++;
    const m = /^\/v2\/team\/image-(\d+)\/manifests\/v1$/.exec(req.url ?? '');
    if (req.method !== 'HEAD' || !m) return void res.writeHead(404).end();
    if (rnd() < state.failRate) return void res.writeHead(rnd() < 0.5 ? 500 : 503).end();
    const i = Number(m[1]);
    const d = `sha256:${((gen.get(i) ?? 0) % 16).toString(16).repeat(64)}`;
    res.writeHead(200, { 'docker-content-digest': d, 'content-type': 'application/vnd.oci.image.index.v1+json' }).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `http://${host}`,
    host,
    requests: () => requests,
    move: (i) => gen.set(i, (gen.get(i) ?? 0) + 1),
    get failRate() {
      return state.failRate;
    },
    set failRate(v: number) {
      state.failRate = v;
    },
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** The digest each image's container runs: the registry's, once the kubelet restarted it on a moved tag. */
const running = new Map<number, number>();
const digestOf = (i: number): string => `sha256:${((running.get(i) ?? 0) % 16).toString(16).repeat(64)}`;

function pool(name: string, images: readonly string[], nodeName: string, created: number, started: boolean): KPod {
  return {
    metadata: { name, namespace: NS, uid: `uid-${name}`, creationTimestamp: iso(created), labels: { [LABEL_POOL_MEMBER]: 'soak' } },
    spec: {
      nodeName,
      initContainers: name === POD ? [{ name: 'prewarm-reconciler', image: 'reconciler:soak', restartPolicy: 'Always' }] : [],
      containers: images.map((image, i) => ({ name: `c${i}`, image, imagePullPolicy: 'Always' })),
    },
    status: {
      phase: 'Running',
      containerStatuses: images.map((image, i) => ({
        name: `c${i}`,
        image,
        imageID: started ? `${image.slice(0, image.lastIndexOf(':'))}@${digestOf(i)}` : '',
        restartCount: 0,
        state: started ? { running: { startedAt: iso(created + 1000) } } : { waiting: { reason: 'ContainerCreating' } },
      })),
    },
  };
}

/** What one sample read of the sidecar. */
interface Sample {
  readonly rssMiB: number;
  readonly heapMiB: number;
  readonly fds: number;
}

/**
 * The median live heap of `window`'s samples; where no full collection had run yet in it, the
 * nearest one in `ordered` (all samples, nearest first).
 */
function liveHeap(window: readonly Sample[], ordered: readonly Sample[]): number {
  const known = window.map((s) => s.heapMiB).filter((h) => !Number.isNaN(h));
  if (known.length > 0) return median(known);
  return ordered.find((s) => !Number.isNaN(s.heapMiB))?.heapMiB ?? Number.NaN;
}

function sample(pid: number, heapMiB: number): Sample {
  const st = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const rss = Number(/VmRSS:\s+(\d+)/.exec(st)?.[1] ?? 0) / 1024;
  return { rssMiB: rss, heapMiB, fds: fs.readdirSync(`/proc/${pid}/fd`).length };
}

async function main(): Promise<number> {
  if (!args.includes('--no-build')) execFileSync('npx', ['tsc', '-p', 'src/reconciler/tsconfig.json'], { cwd: root, stdio: 'inherit' });
  const out = (line: string): boolean => process.stdout.write(`${line}\n`);
  const registry = await fakeRegistry();
  const images = Array.from({ length: IMAGES }, (_, i) => `${registry.host}/team/image-${i}:v1`);
  const t0 = Date.now();
  const created = t0 - 60_000;
  let tokenGen = 0;
  const token = (): string => `soak-token-${tokenGen}`;
  const node: KNode = {
    metadata: { name: NODE, uid: 'node-uid', creationTimestamp: iso(created) },
    spec: { taints: [{ key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' }] },
    status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: iso(created) }] },
  };
  // The watches' timeoutSeconds in the sidecar's time: a real apiserver ends each watch every few
  // minutes of the month, and the sidecar opens it again.
  const api = await new FakeApiserver(pool(POD, images, NODE, created, true), node, { token: token(), timeScale: scale }).start();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'prewarm-soak-'));
  const tokenPath = path.join(tmp, 'token');
  const poolsPath = path.join(tmp, 'pools.json');
  fs.writeFileSync(tokenPath, `${token()}\n`);
  fs.writeFileSync(
    poolsPath,
    JSON.stringify({
      pools: [
        {
          id: 'soak',
          namespace: NS,
          nodeLabelKey: nodeLabelKey('soak'),
          nodeSelector: {},
          tolerations: [],
          gateTaintKey: DEFAULT_GATE_TAINT_KEY,
        },
      ],
    }),
  );
  const metricsPort = await freePort();
  const env = {
    PATH: process.env.PATH ?? '',
    PREWARM_KUBE_SERVER: api.url,
    PREWARM_KUBE_TOKEN_FILE: tokenPath,
    PREWARM_POOLS_PATH: poolsPath,
    PREWARM_PLAIN_HTTP_REGISTRIES: registry.host,
    PREWARM_PULL_SECRETS_DIR: path.join(tmp, 'no-secrets'),
    PREWARM_TIME_SCALE: String(scale),
    ...resolveSidecarEnv(
      renderSidecarEnv({
        poolId: 'soak',
        nodeLabelKey: nodeLabelKey('soak'),
        nodeAnnotationKey: nodeAnnotationKey('soak'),
        gateTaintKey: DEFAULT_GATE_TAINT_KEY,
        deadlineSeconds: 600,
        refreshSeconds: 3600,
        metricsPort,
      }),
      { 'spec.nodeName': NODE, 'metadata.name': POD, 'metadata.namespace': NS, 'status.podIP': '127.0.0.1' },
    ),
  };
  let restarts = 0;
  let heapMiB = Number.NaN;
  let stderrTail = '';
  let child: ChildProcess | undefined;
  let stopping = false;
  const spawnSidecar = (): void => {
    const c = spawn(process.execPath, [...reconcilerNodeFlags(), '--trace-gc', path.join(root, 'lib/src/reconciler/main.js')], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    c.stdout?.on('data', (d: Buffer) => {
      // --trace-gc: "... Mark-Compact 5.1 (7.0) -> 4.3 (7.0) MB, ..." (used after, committed). Only
      // full collections: after a scavenge, "used" still holds old-space garbage, which is noise.
      const all = [...d.toString().matchAll(/Mark-Compact[^\n]*?-> ([\d.]+) \(([\d.]+)\) MB/g)];
      const last = all.at(-1);
      if (last) heapMiB = Number(last[1]);
    });
    c.stderr?.on('data', (d: Buffer) => (stderrTail = (stderrTail + d.toString()).slice(-4000)));
    c.on('exit', () => {
      if (stopping) return;
      restarts++;
      spawnSidecar();
    });
    child = c;
  };
  spawnSidecar();
  const deadline = t0 + minutes * 60_000;
  const windowMs = (deadline - t0) / 10;
  const samples: { at: number; s: Sample }[] = [];
  const requestsAt: { at: number; api: number; registry: number }[] = [];
  let floods = 0;
  let probesOk = 0;
  let probesTried = 0;
  try {
    await waitFor('the sidecar warms the node', () => api.node.metadata.labels?.[nodeLabelKey('soak')] === 'warm', 60_000, 50);
    let pullerSeq = 0;
    const pullers = new Set<string>();
    let nextFloodAt = Date.now() + windowMs / 2;
    let nextTokenAt = Date.now() + 3_600_000 / scale;
    // One step of churn per tick; the tick is one simulated quarter hour.
    const tickMs = Math.max(50, 900_000 / scale);
    for (let tick = 0; Date.now() < deadline && tick < 10_000_000; tick++) {
      const r = rnd();
      if (r < 0.05) api.endWatches();
      else if (r < 0.08) api.expireWatches();
      else if (r < 0.2) api.bookmark();
      else if (r < 0.35) {
        const name = `puller-soak-${pullerSeq++}`;
        pullers.add(name);
        api.setPod(pool(name, images.slice(0, 5), NODE, Date.now(), rnd() < 0.5));
      } else if (r < 0.5 && pullers.size > 0) {
        const name = [...pullers][0] as string;
        pullers.delete(name);
        api.setPod(pool(name, images.slice(0, 5), NODE, Date.now(), true), 'DELETED');
      } else if (r < 0.55) {
        const name = `other-${pullerSeq++}`;
        api.setPod(pool(name, images.slice(0, 2), 'another-node', Date.now(), true));
        api.setPod(pool(name, images.slice(0, 2), 'another-node', Date.now(), true), 'DELETED');
      } else if (r < 0.6) {
        const ready = rnd() < 0.9 ? 'True' : 'False';
        api.setNode({
          ...api.node,
          metadata: { ...api.node.metadata, labels: { ...api.node.metadata.labels, 'admin/touched': String(tick % 7) } },
          status: { ...api.node.status, conditions: [{ type: 'Ready', status: ready, lastTransitionTime: iso(created) }] },
        });
      } else if (r < 0.62) {
        // The tag moves; the refresh restarts the container and the kubelet pulls it, so the
        // holder runs the new digest a little later (the process lookup finds nothing here).
        const i = Math.floor(rnd() * IMAGES);
        registry.move(i);
        setTimeout(() => {
          running.set(i, (running.get(i) ?? 0) + 1);
          api.setPod(pool(POD, images, NODE, created, true));
        }, 3_600_000 / scale).unref();
      } else if (r < 0.63) registry.failRate = rnd() < 0.5 ? 0.5 : 0.05;
      if (Date.now() >= nextTokenAt) {
        // Rotation as the kubelet does it: the new token is valid before the file changes, the old one a while after.
        const old = token();
        tokenGen++;
        api.acceptTokens([old, token()]);
        fs.writeFileSync(tokenPath, `${token()}\n`);
        setTimeout(() => api.acceptTokens([token()]), 60_000 / scale).unref();
        nextTokenAt = Date.now() + 3_600_000 / scale;
      }
      if (Date.now() >= nextFloodAt) {
        floods++;
        const flood = await startFlood({ host: '127.0.0.1', port: metricsPort, idle: 2000, slow: 200 });
        // As the kubelet: a probe a second; the flood is survived if one is answered before the flood ends.
        let answered = false;
        for (let i = 0; i < 8 && !answered; i++) {
          probesTried++;
          answered = (await probe('127.0.0.1', metricsPort, STARTUP_PATH, 1000)) === 200;
          if (!answered) await sleep(1000);
        }
        if (answered) probesOk++;
        flood.close();
        nextFloodAt = Date.now() + windowMs;
      }
      await sleep(tickMs);
      // Samples away from a flood, once a simulated quarter hour.
      if (child?.pid !== undefined) {
        try {
          samples.push({ at: Date.now(), s: sample(child.pid, heapMiB) });
        } catch {
          // the sidecar is restarting
        }
        requestsAt.push({ at: Date.now(), api: api.requests.length, registry: registry.requests() });
      }
    }
  } finally {
    stopping = true;
    child?.kill('SIGTERM');
    await sleep(500);
    child?.kill('SIGKILL');
    registry.close();
    await api.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  // Which requests the last three tenths made, by method and path without the query.
  const tail = api.requests.slice(requestsAt.find((r) => r.at >= Date.now() - 3 * windowMs)?.api ?? 0);
  const kinds = new Map<string, number>();
  for (const r of tail)
    kinds.set(`${r.method} ${r.path.split('?')[0] ?? ''}`, (kinds.get(`${r.method} ${r.path.split('?')[0] ?? ''}`) ?? 0) + 1);
  out(
    `soak-requests-last-three-tenths: ${[...kinds]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  );
  return report(out, samples, requestsAt, windowMs, t0, { restarts, floods, probesOk, probesTried, stderrTail });
}

/** Prints the figures of the first and last tenth and checks the budget. */
function report(
  out: (l: string) => boolean,
  samples: readonly { at: number; s: Sample }[],
  requestsAt: readonly { at: number; api: number; registry: number }[],
  windowMs: number,
  t0: number,
  run: { restarts: number; floods: number; probesOk: number; probesTried: number; stderrTail: string },
): number {
  const end = samples.at(-1)?.at ?? t0;
  // The first tenth after the node is warm against the last; request rates over three tenths
  // each, which hold floods alike.
  const s0 = samples[0]?.at ?? t0;
  const first = samples.filter((x) => x.at >= s0 && x.at < s0 + windowMs).map((x) => x.s);
  const last = samples.filter((x) => x.at >= end - windowMs).map((x) => x.s);
  const med = (xs: readonly Sample[], f: (s: Sample) => number): number => median(xs.map(f));
  const rate = (from: number, to: number, f: (r: { api: number; registry: number }) => number): number => {
    const a = requestsAt.find((r) => r.at >= from);
    const b = [...requestsAt].reverse().find((r) => r.at <= to);
    if (!a || !b || b.at <= a.at) return 0;
    return (f(b) - f(a)) / ((b.at - a.at) * simHoursPerMs);
  };
  const apiFirst = rate(s0, s0 + 3 * windowMs, (r) => r.api);
  const apiLast = rate(end - 3 * windowMs, end, (r) => r.api);
  const regFirst = rate(s0, s0 + 3 * windowMs, (r) => r.registry);
  const regLast = rate(end - 3 * windowMs, end, (r) => r.registry);
  const simDays = ((end - t0) * simHoursPerMs) / 24;
  out(`soak: ${((end - t0) / 60_000).toFixed(1)} min wall, ${simDays.toFixed(1)} simulated days (scale ${scale}, seed ${seed})`);
  const line = (what: string, f: number, l: number, unit: string): boolean =>
    out(`soak-${what}: start ${f.toFixed(1)} end ${l.toFixed(1)}${unit}`);
  const rss = [med(first, (s) => s.rssMiB), med(last, (s) => s.rssMiB)] as const;
  const all = samples.map((x) => x.s);
  const heap = [liveHeap(first, all), liveHeap(last, [...all].reverse())] as const;
  const fds = [med(first, (s) => s.fds), med(last, (s) => s.fds)] as const;
  line('rss-mib', ...rss, '');
  line('heap-used-mib', ...heap, '');
  line('open-fds', ...fds, '');
  line('api-requests-per-sim-hour', apiFirst, apiLast, '');
  line('registry-requests-per-sim-hour', regFirst, regLast, '');
  out(`soak-restarts: ${run.restarts}`);
  out(`soak-floods: ${run.floods}, the startup probe answered during ${run.probesOk} of them (${run.probesTried} probes)`);
  const misses: string[] = [];
  if (first.length === 0 || last.length === 0) misses.push('too few samples');
  if (rss[1] - rss[0] > BUDGET.rssMiB) misses.push(`RSS grew ${(rss[1] - rss[0]).toFixed(1)} MiB`);
  if (Number.isNaN(heap[0]) || Number.isNaN(heap[1])) misses.push('no full collection seen: heap unknown');
  if (heap[1] - heap[0] > BUDGET.heapMiB) misses.push(`heap grew ${(heap[1] - heap[0]).toFixed(1)} MiB`);
  if (fds[1] - fds[0] > BUDGET.fds) misses.push(`descriptors grew by ${fds[1] - fds[0]}`);
  if (apiLast > apiFirst * BUDGET.requestRatio + 5) misses.push('apiserver requests per hour rose');
  if (regLast > regFirst * BUDGET.requestRatio + 5) misses.push('registry requests per hour rose');
  if (run.restarts > 0) misses.push(`${run.restarts} restarts`);
  if (run.probesOk < run.floods) misses.push(`the startup probe never answered during ${run.floods - run.probesOk} floods`);
  if (misses.length > 0) {
    process.stderr.write(`soak budget missed: ${misses.join('; ')}\nsidecar stderr (tail):\n${run.stderrTail}\n`);
    return 1;
  }
  out('soak: within budget');
  return 0;
}

process.exitCode = await main();
