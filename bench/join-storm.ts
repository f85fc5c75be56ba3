/**
 * `npm run bench:join-storm`: 1,000 kwok nodes join within 10 s; how long until every
 * node has its pull pod scheduled and Running, what that costs the apiserver per node, and what
 * kube-fledged (bench/kubefledged/model.ts) creates for the same nodes and images.
 *
 *   1. `prewarm synth` of one ImageCache (10 images, one pool selecting the fake nodes, gate on),
 *      applied; the pool tolerates kwok's taint, the nodes join with the gate taint.
 *   2. N fake nodes POSTed at an even pace over the window; a pod watch records, per node, when
 *      its pull pod was created, bound (spec.nodeName) and Running (kwok's pod-ready stage).
 *   3. The apiserver audit log (Metadata level) over the storm, by user and verb/resource: the
 *      requests in prewarm's namespace are what its pull DaemonSet costs, divided by N;
 *      apiserver_request_total deltas as a cross-check of the totals.
 *   4. The kube-fledged model on the same nodes, for a bounded window after its refresh tick:
 *      Jobs, pods, requests per second; completion extrapolated (and printed as such).
 *   5. With --kruise, OpenKruise v1.9.0 (built from its module, run as its chart does;
 *      bench/support/kruise.ts) on the same nodes: kruise-manager starts, the ImageListPullJob a
 *      user writes for the pool (`completionPolicy: Never`, parallelism N: at its default of 1 a
 *      job waits for each node's daemon, and kwok nodes run none) is created, and the run waits
 *      until every node's NodeImage asks for all 10 images. kruise-manager's requests (its
 *      ServiceAccount in the audit log, its start-up lists included), divided by N.
 *
 * kwok pods run no containers, so the sidecar's own requests are not in these counts; they are
 * added from bench/footprint.ts (against a fake apiserver), not measured here. Nor does a kwok node
 * run kruise-daemon, so its requests (its NodeImage watch, a status write per pull) are not in
 * OpenKruise's count either.
 *
 * A benchmark: prints figures, asserts nothing about time, is bounded everywhere, and cleans up
 * (fake nodes, namespaces, CRD; the cluster is brought down when this run started it).
 *
 * Usage: tsx bench/join-storm.ts [--nodes 1000] [--window-s 10] [--bound-s 600] [--kf-window-s 150]
 *   [--kruise] [--kruise-bound-s 600] [--controller-manager-arg --feature-gates=...] [--results join-storm]
 *   (run as root under the harness lock; the cluster must be down or up with --audit-log)
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { DEFAULT_GATE_TAINT_KEY } from '../src/contract/names.js';
import { isHolder, isPuller } from '../src/contract/roles.js';
import { ADMIN_KUBECONFIG, AUDIT_LOG, down, isUp, up } from '../harness/cluster/cluster.js';
import { STATE_DIR } from '../harness/cluster/config.js';
import { KWOK_TAINT_KEY, deleteFakeNodes, fakeNode } from '../harness/cluster/kwok.js';
import { ApiError, Kube, diffTotals, objectPath, requestTotals, type KubeObject } from '../harness/kube.js';
import { applyAll, synthObjects } from '../harness/manifests.js';
import { pollUntil, secs, sleep } from '../harness/time.js';
import { KRUISE_NS, imageListPullJob } from '../harness/cluster/kruise.js';
import { imageCache } from '../harness/specs.js';
import { auditMark, countRequests, identity, operation, type AuditEvent } from './support/audit.js';
import { buildKruise, startKruise, stopKruise } from './support/kruise.js';
import { KF_IMAGECACHES, KF_NS, MODEL_USER_AGENT, installKubeFledged, kfImageCache, startModel, stopModel } from './support/kubefledged.js';
import { log, percentile, saveResults } from './support/stats.js';

const args = await yargs(hideBin(process.argv))
  .option('nodes', { type: 'number', default: 1000, describe: 'fake nodes to join (1..5000)' })
  .option('window-s', { type: 'number', default: 10, describe: 'spread the node creations evenly over this many seconds' })
  .option('bound-s', { type: 'number', default: 600, describe: 'give up waiting for Running pods after this many seconds' })
  .option('kf-window-s', {
    type: 'number',
    default: 150,
    describe: 'how long the kube-fledged model runs after its refresh tick (0 skips it)',
  })
  .option('lanes', {
    type: 'number',
    default: 1,
    describe: 'spec.lanes of the pool: 1 is the holder alone, L > 1 adds up to L burst pullers per node',
  })
  .option('kruise', {
    type: 'boolean',
    default: false,
    describe: 'also run OpenKruise v1.9.0 on the same nodes (built from its module, cached by version)',
  })
  .option('kruise-bound-s', {
    type: 'number',
    default: 600,
    describe: "give up waiting for OpenKruise's NodeImages after this many seconds",
  })
  .option('keep-cluster', { type: 'boolean', default: false, describe: 'leave a cluster this run started up' })
  .option('controller-manager-arg', {
    type: 'string',
    array: true,
    describe: 'extra kube-controller-manager flag for an experiment (the run must start the cluster)',
  })
  .option('results', { type: 'string', default: 'join-storm', describe: 'name of the bench/results/<name>.json file' })
  .strict()
  .parseAsync();
const N = args.nodes;
if (!Number.isInteger(N) || N < 1 || N > 5000) throw new Error(`--nodes ${N} out of range 1..5000`);

const NS = 'prewarm-storm';
const POOL = 'storm';
const POOL_LABEL = 'bench.prewarm.dev/pool';
const NODE_PREFIX = 'storm';
const KF_CACHE = 'storm';
const KRUISE_STORM_NS = 'kruise-storm';
const KRUISE_MANAGER_USER = `system:serviceaccount:${KRUISE_NS}:kruise-manager`;
/** Ten images a platform team would cache (kwok pulls nothing, so only their number matters). */
const IMAGES = [
  'docker.io/library/python:3.12-slim',
  'docker.io/library/node:20-bookworm-slim',
  'docker.io/envoyproxy/envoy:v1.30.2',
  'docker.io/grafana/promtail:3.0.0',
  'registry.k8s.io/ingress-nginx/controller:v1.10.1',
  'registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.12.0',
  'quay.io/prometheus/node-exporter:v1.8.1',
  'quay.io/jetstack/cert-manager-controller:v1.15.0',
  'ghcr.io/open-telemetry/opentelemetry-collector-releases/opentelemetry-collector-contrib:0.102.1',
  'ghcr.io/fluxcd/source-controller:v1.3.0',
];
/** This benchmark's client identifies itself with this user agent (the admin identity is shared with kwok). */
const BENCH_USER_AGENT = 'prewarm-join-storm';
/** kube-controller-manager runs with --use-service-account-credentials: one identity per controller. */
const DS_CONTROLLER = 'system:serviceaccount:kube-system:daemon-set-controller';
/** Measured by bench/footprint.ts (real sidecar, fake apiserver) per warm transition; not in this run. */
const SIDECAR_PER_NODE = { get: 1, watch: 1, writesAtMost: 3 };

/** Per node: when it was created (POST answered) and when its pull pod was seen created, bound, Running. */
interface NodeTimes {
  postAt: number;
  createdAt?: number;
  podAt?: number;
  boundAt?: number;
  runningAt?: number;
}
const times = new Map<string, NodeTimes>();

function nodeName(i: number): string {
  return `${NODE_PREFIX}-${i}`;
}

/** The node a DaemonSet pod is for: spec.nodeName once bound, the controller's matchFields before. */
function podNode(p: KubeObject): string | undefined {
  if (p.spec?.nodeName) return p.spec.nodeName as string;
  const terms = (p.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? []) as {
    matchFields?: { key: string; values: string[] }[];
  }[];
  return terms.flatMap((t) => t.matchFields ?? []).find((f) => f.key === 'metadata.name')?.values[0];
}

/** Burst puller pods seen (kwok never marks a node warm, so they stay for the whole storm). */
const pullerPods = { created: new Set<string>(), running: new Set<string>() };

function observePod(p: KubeObject): void {
  if (isPuller(p.metadata.labels)) {
    pullerPods.created.add(p.metadata.name);
    if (p.status?.phase === 'Running') pullerPods.running.add(p.metadata.name);
    return;
  }
  const node = podNode(p);
  const t = node ? times.get(node) : undefined;
  if (!t) return;
  const now = Date.now();
  t.podAt ??= now;
  if (p.spec?.nodeName) t.boundAt ??= now;
  if (p.status?.phase === 'Running') t.runningAt ??= now;
}

/** List + watch of the pull pods, re-listing when a watch ends (bounded). Returns stop(). */
function watchPods(kube: Kube): () => void {
  let closed = false;
  let stop = (): void => undefined;
  const path = `/api/v1/namespaces/${NS}/pods`;
  const loop = async (attempt: number): Promise<void> => {
    if (closed || attempt > 50) return;
    const l = await kube.list(path);
    for (const p of l.items) observePod(p);
    stop = kube.watch(
      path,
      { resourceVersion: l.metadata.resourceVersion, timeoutSeconds: '900' },
      (type, obj) => {
        if (type === 'ADDED' || type === 'MODIFIED') observePod(obj);
      },
      (err) => {
        if (closed) return;
        if (err) log(`pod watch ended: ${err.message}; re-listing`);
        void sleep(500).then(() => loop(attempt + 1));
      },
    );
  };
  void loop(0);
  return () => {
    closed = true;
    stop();
  };
}

/** POSTs the nodes evenly over windowMs (16 requests in flight at most: the client's sockets). */
async function createNodes(kube: Kube, windowMs: number): Promise<{ startAt: number; endAt: number }> {
  const opts = {
    prefix: NODE_PREFIX,
    labels: { [POOL_LABEL]: POOL },
    extraTaints: [{ key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' as const }],
  };
  const startAt = Date.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= N) return;
      const due = startAt + (i * windowMs) / N;
      if (due > Date.now()) await sleep(due - Date.now());
      const t: NodeTimes = { postAt: Date.now() };
      times.set(nodeName(i), t);
      await kube.create('/api/v1/nodes', fakeNode(i, opts));
      t.createdAt = Date.now();
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return { startAt, endAt: Date.now() };
}

function counts(): { created: number; pods: number; bound: number; running: number } {
  const v = [...times.values()];
  return {
    created: v.filter((t) => t.createdAt).length,
    pods: v.filter((t) => t.podAt).length,
    bound: v.filter((t) => t.boundAt).length,
    running: v.filter((t) => t.runningAt).length,
  };
}

/** Sorted "count  per-node  key" rows of a count map. */
function table(m: Map<string, number>, per: number, min = 1): string[] {
  return [...m]
    .filter(([, v]) => v >= min)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `  ${String(v).padStart(7)}  ${(v / per).toFixed(3).padStart(8)}/node  ${k}`);
}
/** The benchmark's own requests (its watches and polls), left out of the per-node and per-Job counts. */
function isBench(ev: AuditEvent): boolean {
  return (ev.userAgent ?? '').startsWith(BENCH_USER_AGENT);
}
function sum(m: Map<string, number>): number {
  return [...m.values()].reduce((a, b) => a + b, 0);
}

function prewarmSpec(): KubeObject {
  return imageCache(
    NS,
    'join-storm',
    [
      {
        pool: POOL,
        nodeSelector: { [POOL_LABEL]: POOL },
        tolerations: [{ key: KWOK_TAINT_KEY, operator: 'Exists', effect: 'NoSchedule' }],
        images: IMAGES,
      },
    ],
    { gate: { deadline: '10m' }, ...(args.lanes > 1 ? { lanes: args.lanes } : {}) },
  );
}

async function waitGone(kube: Kube, path: string, boundMs: number): Promise<boolean> {
  return (await pollUntil(async () => (await kube.getOpt(path)) === undefined, Date.now() + boundMs, 1000)) ?? false;
}

interface StormResult {
  nodes: number;
  lanes: number;
  pullerPods: number;
  creationWindowS: number;
  allRunningS: number | null;
  running: number;
  perNodeS: { p50: number; p90: number; max: number };
  stagesP50S: { nodeToPod: number; podToBound: number; boundToRunning: number };
  audit: { window: [number, number]; totalRequests: number; prewarmNamespace: Record<string, number>; byIdentity: Record<string, number> };
  metricsTotalRequests: number;
  prewarmRequestsPerNode: number;
  daemonSetControllerRequestsPerS: number;
  loadAverage: number[];
}

/** `prewarm synth` of the storm's ImageCache, written under the harness state dir. */
async function synthesize(): Promise<KubeObject[]> {
  const specs = join(STATE_DIR, 'bench-specs', 'join-storm');
  mkdirSync(specs, { recursive: true });
  writeFileSync(join(specs, 'imagecache.yaml'), JSON.stringify(prewarmSpec(), null, 2));
  return synthObjects(specs);
}

async function storm(kube: Kube, objs: readonly KubeObject[]): Promise<StormResult> {
  await applyAll(kube, objs);
  const ds = objs.find((o) => o.kind === 'DaemonSet' && isHolder(o.metadata.labels));
  if (!ds) throw new Error('prewarm synth emitted no DaemonSet');
  const pullerDaemonSets = objs.filter((o) => o.kind === 'DaemonSet' && isPuller(o.metadata.labels)).length;
  log(
    `applied ${objs.length} objects from prewarm synth (DaemonSet ${ds.metadata.name} and ${pullerDaemonSets} puller DaemonSets, ${IMAGES.length} images, lanes ${args.lanes}, gate on)`,
  );
  const stopWatch = watchPods(kube);
  await sleep(2000); // the watch is open before the first node exists
  const metricsBefore = await requestTotals(kube);
  const auditFrom = auditMark(AUDIT_LOG);
  const { startAt, endAt } = await createNodes(kube, args['window-s'] * 1000);
  log(`created ${N} nodes in ${secs(endAt - startAt)} s`);
  const bound = startAt + args['bound-s'] * 1000;
  let lastLog = 0;
  while (Date.now() < bound && counts().running < N) {
    if (Date.now() - lastLog >= 10_000) {
      const c = counts();
      log(`t+${secs(Date.now() - startAt)} s: pods ${c.pods}, bound ${c.bound}, Running ${c.running} of ${N}`);
      lastLog = Date.now();
    }
    await sleep(200);
  }
  // Let the status writes that follow the last Running (DaemonSet status, events) land in the window.
  await sleep(5000);
  const auditTo = auditMark(AUDIT_LOG);
  const metricsAfter = await requestTotals(kube);
  stopWatch();

  const v = [...times.values()];
  const perNode = v.filter((t) => t.runningAt && t.createdAt).map((t) => (t.runningAt as number) - (t.createdAt as number));
  const lastRunning = Math.max(...v.map((t) => t.runningAt ?? Number.NaN).filter(Number.isFinite));
  const running = perNode.length;
  const allRunningMs = running === N ? lastRunning - startAt : Number.NaN;
  const stage = (a: keyof NodeTimes, b: keyof NodeTimes): number =>
    percentile(
      v.filter((t) => t[a] && t[b]).map((t) => (t[b] as number) - (t[a] as number)),
      50,
    );

  const inNs = countRequests(AUDIT_LOG, auditFrom, auditTo, (ev) =>
    ev.objectRef?.namespace === NS && !isBench(ev) ? `${identity(ev)}  ${operation(ev)}` : undefined,
  );
  const byIdentity = countRequests(AUDIT_LOG, auditFrom, auditTo, (ev: AuditEvent) => identity(ev));
  const total = sum(byIdentity);
  const metricsTotal = sum(diffTotals(metricsBefore, metricsAfter));
  const prewarm = sum(inNs);

  console.log(
    `\njoin storm: ${N} kwok nodes created in ${secs(endAt - startAt)} s (target ${args['window-s']} s); pull pods Running on ${running}/${N}`,
  );
  console.log(
    `per node, node created -> pull pod Running: p50 ${secs(percentile(perNode, 50))} s, p90 ${secs(percentile(perNode, 90))} s, max ${secs(percentile(perNode, 100))} s`,
  );
  console.log(
    `stages (p50): node created -> pod created ${secs(stage('createdAt', 'podAt'))} s, -> bound ${secs(stage('podAt', 'boundAt'))} s, -> Running ${secs(stage('boundAt', 'runningAt'))} s`,
  );
  console.log(
    `first node created -> every pull pod (holder) Running: ${running === N ? `${secs(allRunningMs)} s` : `not within ${args['bound-s']} s`}`,
  );
  console.log(
    `burst pullers (lanes ${args.lanes}): ${pullerPods.created.size} pods created, ${pullerPods.running.size} Running (${(pullerPods.created.size / N).toFixed(2)} per node; kwok never marks a node warm, so they stay)`,
  );
  console.log(`\napiserver requests in the storm window (audit log, ${total} requests; apiserver_request_total delta ${metricsTotal}):`);
  console.log(`in namespace ${NS}, i.e. what the pull DaemonSet costs (${prewarm} requests, ${(prewarm / N).toFixed(2)} per node):`);
  for (const row of table(inNs, N)) console.log(row);
  const dsc = byIdentity.get(DS_CONTROLLER) ?? 0;
  const stormS = (lastRunning - startAt) / 1000;
  const cmArgs = args['controller-manager-arg'] ?? [];
  const limit = cmArgs.some((a) => a.startsWith('--kube-api-'))
    ? `kube-controller-manager ${cmArgs.join(' ')}`
    : 'kube-controller-manager default client limit 20 QPS / burst 30 per controller';
  console.log(
    `the DaemonSet controller made ${dsc} requests in ${secs(stormS * 1000)} s (${(dsc / stormS).toFixed(1)}/s; ${limit}); load average ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
  console.log('all requests by identity (node joins, kwok heartbeats and the benchmark itself included):');
  for (const row of table(byIdentity, N)) console.log(row);
  console.log(
    `sidecar (not run: kwok pods run no containers): + ${SIDECAR_PER_NODE.get} GET + ${SIDECAR_PER_NODE.watch} watch + <= ${SIDECAR_PER_NODE.writesAtMost} writes per node per transition, from bench/footprint.ts against a fake apiserver, not from this run`,
  );
  console.log(
    `\njoin-storm-nodes: ${N} lanes: ${args.lanes} puller-pods: ${pullerPods.created.size} all-running-s: ${running === N ? secs(allRunningMs) : 'never'} p50-s: ${secs(percentile(perNode, 50))} p90-s: ${secs(percentile(perNode, 90))} max-s: ${secs(percentile(perNode, 100))} creation-window-s: ${secs(endAt - startAt)} prewarm-requests-per-node: ${(prewarm / N).toFixed(2)}`,
  );
  return {
    nodes: N,
    lanes: args.lanes,
    pullerPods: pullerPods.created.size,
    creationWindowS: (endAt - startAt) / 1000,
    allRunningS: running === N ? allRunningMs / 1000 : null,
    running,
    perNodeS: { p50: percentile(perNode, 50) / 1000, p90: percentile(perNode, 90) / 1000, max: percentile(perNode, 100) / 1000 },
    stagesP50S: {
      nodeToPod: stage('createdAt', 'podAt') / 1000,
      podToBound: stage('podAt', 'boundAt') / 1000,
      boundToRunning: stage('boundAt', 'runningAt') / 1000,
    },
    audit: {
      window: [auditFrom, auditTo],
      totalRequests: total,
      prewarmNamespace: Object.fromEntries(inNs),
      byIdentity: Object.fromEntries(byIdentity),
    },
    metricsTotalRequests: metricsTotal,
    prewarmRequestsPerNode: prewarm / N,
    daemonSetControllerRequestsPerS: dsc / stormS,
    loadAverage: loadavg(),
  };
}

interface KfResult {
  windowS: number;
  jobsCreated: number;
  jobsDone: number;
  jobsPerS: number;
  podsCreated: number;
  modelRequests: number;
  modelRequestsPerS: number;
  kfNamespaceRequests: Record<string, number>;
  kfNamespaceRequestsPerJob: number;
  modelOwnCounts?: Record<string, number>;
  extrapolation: { jobs: number; createAllS: number; requestsTotal: number; requestsPerNode: number; deleteAllS: number };
}

/**
 * kube-fledged on the same nodes: the ImageCache exists with a Succeeded status (as it would have
 * before the nodes joined) and the model starts, so its first refresh tick, the only way
 * kube-fledged ever notices new nodes, processes all N nodes x 10 images.
 */
async function kubeFledged(kube: Kube): Promise<KfResult> {
  const windowMs = args['kf-window-s'] * 1000;
  await installKubeFledged(kube);
  await kube.create(KF_IMAGECACHES, {
    ...kfImageCache(KF_CACHE, IMAGES, { [POOL_LABEL]: POOL }),
    status: { status: 'Succeeded', reason: 'ImageCacheCreate', message: 'All requested images pulled succesfully to respective nodes' },
  });
  const auditFrom = auditMark(AUDIT_LOG);
  const model = startModel({ refresh: '15m', maxRuntime: `${args['kf-window-s'] + 120}s` });
  let tick: number | undefined;
  try {
    for (let i = 0; i < 600 && model.ticks.length === 0; i++) await sleep(100);
    tick = model.ticks[0];
    if (tick === undefined) throw new Error('the kube-fledged model did not tick within 60 s');
    log(`kube-fledged model: refresh tick; running it for ${args['kf-window-s']} s`);
    let lastLog = Date.now();
    while (Date.now() < tick + windowMs) {
      if (Date.now() - lastLog >= 30_000) {
        log(`kube-fledged t+${secs(Date.now() - tick)} s: ${model.jobsAt.length} Jobs created, ${model.jobsDone} done`);
        lastLog = Date.now();
      }
      await sleep(500);
    }
  } finally {
    await stopModel(model);
  }
  const windowS = (Date.now() - (tick ?? Date.now())) / 1000;
  // The Jobs created so far run to completion (bounded) inside the audit window, so the requests
  // per Job include its pod's whole life, not just the part that fitted the window.
  const drained = await drainJobs(kube, 120_000);
  log(`kube-fledged: ${drained.done} of ${drained.total} Jobs complete ${secs(drained.ms)} s after the model stopped`);
  const auditTo = auditMark(AUDIT_LOG);
  const isModel = (ev: AuditEvent): boolean => (ev.userAgent ?? '').startsWith(MODEL_USER_AGENT);
  const modelRequests = sum(countRequests(AUDIT_LOG, auditFrom, auditTo, (ev) => (isModel(ev) ? 'model' : undefined)));
  const inNs = countRequests(AUDIT_LOG, auditFrom, auditTo, (ev) =>
    ev.objectRef?.namespace === KF_NS && !isBench(ev) ? `${identity(ev)}  ${operation(ev)}` : undefined,
  );
  const podCreate = (ev: AuditEvent): boolean =>
    ev.verb === 'create' &&
    ev.objectRef?.namespace === KF_NS &&
    ev.objectRef.resource === 'pods' &&
    !ev.objectRef.subresource &&
    (ev.responseStatus?.code ?? 0) < 300;
  const podsCreated = sum(countRequests(AUDIT_LOG, auditFrom, auditTo, (ev) => (podCreate(ev) ? 'pod' : undefined)));
  const jobs = model.jobsAt.length;
  const jobsPerS = jobs / windowS;
  const perJob = jobs ? sum(inNs) / jobs : Number.NaN;
  const want = N * IMAGES.length;
  const ex = {
    jobs: want,
    createAllS: want / jobsPerS,
    requestsTotal: perJob * want,
    requestsPerNode: perJob * IMAGES.length,
    deleteAllS: want / 5,
  };

  console.log(
    `\nkube-fledged model (v0.10.0 logic, client-go default 5 QPS / burst 10) on the same ${N} nodes x ${IMAGES.length} images, ${secs(windowS * 1000)} s after its refresh tick:`,
  );
  console.log(
    `  Jobs created ${jobs} (${jobsPerS.toFixed(2)}/s), their pods created ${podsCreated}, Jobs seen done ${model.jobsDone}; the model made ${modelRequests} requests (${(modelRequests / windowS).toFixed(2)}/s)`,
  );
  console.log(`  requests in namespace ${KF_NS} (${sum(inNs)}, ${perJob.toFixed(2)} per Job created):`);
  for (const row of table(inNs, Math.max(1, jobs)).map((r) => r.replace('/node', '/Job '))) console.log(row);
  console.log(
    `  EXTRAPOLATION (not measured): ${want} Jobs at ${jobsPerS.toFixed(2)} Jobs/s take ${secs(ex.createAllS * 1000)} s to create; at ${perJob.toFixed(2)} requests per Job that is ${Math.round(ex.requestsTotal)} requests (${ex.requestsPerNode.toFixed(1)} per node); then kube-fledged deletes every Job, ${want} DELETEs more at 5 QPS (${secs(ex.deleteAllS * 1000)} s)`,
  );
  console.log(
    `kf-jobs-created: ${jobs} kf-window-s: ${secs(windowS * 1000)} kf-jobs-per-s: ${jobsPerS.toFixed(2)} kf-requests-per-job: ${perJob.toFixed(2)} kf-extrapolated-create-all-s: ${secs(ex.createAllS * 1000)} kf-extrapolated-requests-per-node: ${ex.requestsPerNode.toFixed(1)}`,
  );
  return {
    windowS,
    jobsCreated: jobs,
    jobsDone: model.jobsDone,
    jobsPerS,
    podsCreated,
    modelRequests,
    modelRequestsPerS: modelRequests / windowS,
    kfNamespaceRequests: Object.fromEntries(inNs),
    kfNamespaceRequestsPerJob: perJob,
    ...(model.apiRequests ? { modelOwnCounts: model.apiRequests } : {}),
    extrapolation: ex,
  };
}

interface KruiseResult {
  parallelism: number;
  nodeImages: number;
  nodeImagesAsking: number;
  allAskingS: number | null;
  managerRequests: number;
  managerRequestsPerNode: number;
  managerByOperation: Record<string, number>;
}

/** undefined for an apiserver's "retry later" (429, 503); any other error is thrown again. */
function retryLater(e: unknown): undefined {
  if (e instanceof ApiError && (e.code === 429 || e.code === 503)) return undefined;
  throw e;
}

/** A repository as NodeImage keys it: Docker's familiar name (no `docker.io/`, no `library/`). */
function familiarName(repo: string): string {
  const short = repo.replace(/^docker\.io\//, '');
  return short.replace(/^library\/(?=[^/]+$)/, '');
}

/** NodeImages of the pool's nodes, and how many of them ask for every image of the storm. */
async function nodeImageCounts(kube: Kube): Promise<{ total: number; asking: number }> {
  const l = await kube.list('/apis/apps.kruise.io/v1beta1/nodeimages', { labelSelector: `${POOL_LABEL}=${POOL}` });
  const asking = l.items.filter((ni) => {
    const images = (ni.spec?.images ?? {}) as Record<string, { tags?: { tag: string }[] }>;
    return IMAGES.every((ref) => {
      const colon = ref.lastIndexOf(':');
      return (images[familiarName(ref.slice(0, colon))]?.tags ?? []).some((t) => t.tag === ref.slice(colon + 1));
    });
  }).length;
  return { total: l.items.length, asking };
}

/**
 * OpenKruise on the same nodes: kruise-manager starts (it was not running while they joined, so
 * its NodeImages come at once, the creation delay long past), then the pool's ImageListPullJob;
 * done when every node's NodeImage asks for all the images, which is all a manager does per node
 * before the node's daemon pulls.
 */
async function kruise(kube: Kube): Promise<KruiseResult> {
  const auditFrom = auditMark(AUDIT_LOG);
  const t0 = Date.now();
  await startKruise();
  let asked = { total: 0, asking: 0 };
  let doneAt: number | undefined;
  try {
    await kube.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: KRUISE_STORM_NS } });
    const job = imageListPullJob({
      name: 'storm',
      namespace: KRUISE_STORM_NS,
      images: IMAGES,
      nodeLabels: { [POOL_LABEL]: POOL },
      parallelism: N,
    });
    await kube.create(`/apis/apps.kruise.io/v1alpha1/namespaces/${KRUISE_STORM_NS}/imagelistpulljobs`, job);
    const bound = t0 + args['kruise-bound-s'] * 1000;
    let lastLog = 0;
    while (Date.now() < bound) {
      // A CRD installed moments ago answers 429 until the apiserver's cache of it is ready.
      const counts = await nodeImageCounts(kube).catch(retryLater);
      if (!counts) {
        await sleep(1000);
        continue;
      }
      asked = counts;
      if (asked.asking === N) {
        doneAt = Date.now();
        break;
      }
      if (Date.now() - lastLog >= 10_000) {
        log(`OpenKruise t+${secs(Date.now() - t0)} s: NodeImages ${asked.total}, asking for every image ${asked.asking} of ${N}`);
        lastLog = Date.now();
      }
      await sleep(2000);
    }
    await sleep(5000);
  } finally {
    await stopKruise();
  }
  const auditTo = auditMark(AUDIT_LOG);
  const byOp = countRequests(AUDIT_LOG, auditFrom, auditTo, (ev) => (identity(ev) === KRUISE_MANAGER_USER ? operation(ev) : undefined));
  const total = sum(byOp);
  console.log(
    `\nOpenKruise v1.9.0 on the same ${N} nodes (ImageListPullJob, completionPolicy Never, parallelism ${N}): NodeImages ${asked.total}, asking for every image ${asked.asking}; ${doneAt === undefined ? `not all within ${args['kruise-bound-s']} s` : `all ${secs(doneAt - t0)} s after kruise-manager started`}`,
  );
  console.log(
    `  kruise-manager's requests (${total}, ${(total / N).toFixed(2)} per node; its start-up lists included; no kruise-daemon runs on kwok):`,
  );
  for (const row of table(byOp, N)) console.log(row);
  return {
    parallelism: N,
    nodeImages: asked.total,
    nodeImagesAsking: asked.asking,
    allAskingS: doneAt === undefined ? null : (doneAt - t0) / 1000,
    managerRequests: total,
    managerRequestsPerNode: total / N,
    managerByOperation: Object.fromEntries(byOp),
  };
}

/** Waits until every Job in the kube-fledged namespace has finished (or the bound passes). */
async function drainJobs(kube: Kube, boundMs: number): Promise<{ total: number; done: number; ms: number }> {
  const t0 = Date.now();
  for (;;) {
    const jobs = (await kube.list(`/apis/batch/v1/namespaces/${KF_NS}/jobs`)).items;
    const done = jobs.filter((j) => (j.status?.succeeded ?? 0) > 0 || (j.status?.failed ?? 0) > 0).length;
    if (done === jobs.length || Date.now() - t0 > boundMs) return { total: jobs.length, done, ms: Date.now() - t0 };
    await sleep(2000);
  }
}

/** Deletes what this run created (bounded waits); the fake nodes last, after their pods' namespaces. */
async function cleanUp(kube: Kube, objs: readonly KubeObject[]): Promise<void> {
  const ignore404 = (e: unknown): boolean => {
    if (e instanceof ApiError && e.code === 404) return false;
    throw e;
  };
  await kube.delete(`/api/v1/namespaces/${KF_NS}`).catch(ignore404);
  await kube.delete(`/api/v1/namespaces/${NS}`).catch(ignore404);
  if (args.kruise) {
    await kube.delete(`/api/v1/namespaces/${KRUISE_STORM_NS}`).catch(ignore404);
    // kruise-manager is stopped by now, so nothing would delete the NodeImages of the fake nodes.
    await kube.delete('/apis/apps.kruise.io/v1beta1/nodeimages').catch(ignore404);
  }
  for (const o of objs) if (!o.metadata.namespace && o.kind !== 'Namespace') await kube.delete(objectPath(o)).catch(ignore404);
  await kube.delete('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/imagecaches.kubefledged.io').catch(ignore404);
  const until = Date.now() + 150_000;
  const gone =
    (await waitGone(kube, `/api/v1/namespaces/${KF_NS}`, until - Date.now())) &&
    (await waitGone(kube, `/api/v1/namespaces/${NS}`, until - Date.now()));
  if (!gone) log('namespaces not gone within 150 s (deleting the nodes anyway)');
  deleteFakeNodes(ADMIN_KUBECONFIG, NODE_PREFIX);
}

/** Nodes of an earlier, interrupted run on a reused cluster would fail the POSTs (409). */
async function removeLeftovers(kube: Kube): Promise<void> {
  const left = async (): Promise<number> => (await kube.list('/api/v1/nodes', { labelSelector: `${POOL_LABEL}=${POOL}` })).items.length;
  if ((await left()) === 0) return;
  deleteFakeNodes(ADMIN_KUBECONFIG, NODE_PREFIX);
  for (let i = 0; i < 120 && (await left()) > 0; i++) await sleep(1000);
  if ((await left()) > 0) throw new Error(`fake nodes ${NODE_PREFIX}-* of an earlier run are still there after 120 s`);
}

async function main(): Promise<void> {
  if (args.kruise) buildKruise();
  let started = false;
  const cmArgs = args['controller-manager-arg'] ?? [];
  if (await isUp()) {
    if (cmArgs.length) throw new Error('--controller-manager-arg needs a cluster this run starts: `npm run cluster -- down` first');
    if (!existsSync(AUDIT_LOG))
      throw new Error('a harness cluster is up without the audit log: `npm run cluster -- down` first, or bring it up with --audit-log');
    log('reusing the running harness cluster (audit log on)');
  } else {
    await up({ kwok: true, auditLog: true, ...(cmArgs.length ? { controllerManagerArgs: cmArgs } : {}) });
    started = true;
  }
  const kube = new Kube({ userAgent: BENCH_USER_AGENT });
  const objs = await synthesize();
  try {
    await removeLeftovers(kube);
    const s = await storm(kube, objs);
    // Written after every part, so a part that fails or runs out of its bound keeps the ones before.
    const save = (kf?: KfResult, kr?: KruiseResult): string =>
      saveResults(args.results, {
        images: IMAGES,
        args: {
          nodes: N,
          windowS: args['window-s'],
          boundS: args['bound-s'],
          kfWindowS: args['kf-window-s'],
          controllerManagerArgs: cmArgs,
        },
        storm: s,
        sidecarPerNodeFromFootprint: SIDECAR_PER_NODE,
        ...(kf ? { kubeFledged: kf } : {}),
        ...(kr ? { kruise: kr } : {}),
        retried429: kube.retries,
        clusterStartedByBench: started,
      });
    log(`wrote ${save()}`);
    const kf = args['kf-window-s'] > 0 ? await kubeFledged(kube) : undefined;
    if (kf) log(`wrote ${save(kf)}`);
    const kr = args.kruise ? await kruise(kube) : undefined;
    if (kr)
      console.log(
        `\nAPI requests per node, OpenKruise's manager / prewarm (measured): x${(kr.managerRequestsPerNode / s.prewarmRequestsPerNode).toFixed(1)}`,
      );
    if (kf) {
      const sidecar = SIDECAR_PER_NODE.get + SIDECAR_PER_NODE.watch + SIDECAR_PER_NODE.writesAtMost;
      const kfPerNode = kf.extrapolation.requestsPerNode;
      console.log(
        `\nAPI requests per node, kube-fledged (extrapolated) / prewarm (measured): x${(kfPerNode / s.prewarmRequestsPerNode).toFixed(1)} against the pull DaemonSet path, x${(kfPerNode / (s.prewarmRequestsPerNode + sidecar)).toFixed(1)} with the sidecar's <= ${sidecar} per transition added`,
      );
    }
    log(`wrote ${save(kf, kr)}${kube.retries > 0 ? `; ${kube.retries} requests of this bench retried after a 429` : ''}`);
  } finally {
    log('cleaning up: namespaces, CRD, fake nodes');
    await cleanUp(kube, objs).catch((e: unknown) => log(`clean-up failed: ${(e as Error).message}`));
    kube.close();
    if (started && !args['keep-cluster']) {
      log('bringing the cluster down (this run started it)');
      await down();
    }
  }
}

await main();
