/**
 * Chaos tier: faults on the real harness cluster while a node warms, one shared cluster,
 * fresh nodes per case. Every case ends with the same five invariants (see {@link invariants}):
 * no gating taint past its deadline; labels and annotations that agree with the pods; no puller
 * pod left on a warm or partial node; no sidecar in a crash loop; at most one Event per transition.
 * The fail-safe's case holds two of its nodes to checks of their own (one never runs its sidecar,
 * the other keeps its gate on purpose). Each case prints `fault <name>: survived in <s>s` (from
 * the fault's injection to the invariants holding), and the tier prints `faults survived: N/N`; a
 * case that is not survived fails the run.
 * Every process killed or restarted is the harness's own (harness/cluster/faults.ts), and every
 * wait is bounded.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { addNode, kubectl, removeNode } from '../../harness/cluster/cluster.js';
import { BIN, REGISTRY } from '../../harness/cluster/config.js';
import {
  killApiserver,
  killContainer,
  reportNotReady,
  restartEtcd,
  startApiserverAgain,
  startKubeletAgain,
  startRegistry,
  stopKubelet,
  stopRegistry,
  withdrawRegistryImage,
} from '../../harness/cluster/faults.js';
import { ensureStandIn, imageInRegistry } from '../../harness/cluster/images.js';
import type { Taint } from '../../harness/cluster/node.js';
import { run } from '../../harness/cluster/sh.js';
import { Kube, type KubeObject } from '../../harness/kube.js';
import { poolsOf, prepareImages, synth, yamlObjects } from '../../harness/manifests.js';
import { secs, sleep, waitFor } from '../../harness/time.js';
import { parseAnnotation } from '../../src/contract/annotation.js';
import { FAILSAFE_NAME } from '../../src/contract/access-names.js';
import { EVENT_COMPONENT, EventReason, parseNodeEvent } from '../../src/contract/events.js';
import { FAILSAFE_CONTAINER, FAILSAFE_PERIOD_SECONDS } from '../../src/contract/failsafe.js';
import {
  DEFAULT_GATE_TAINT_KEY,
  EVENTS_NAMESPACE,
  LABEL_COMPONENT,
  LABEL_POOL_MEMBER,
  LABEL_PULLER,
  SIDECAR_CONTAINER,
} from '../../src/contract/names.js';
import { nodeAnnotationKey, nodeLabelKey } from '../../src/contract/identity.js';
import { applyServerSide, HOST_NETWORK_WARNING, imageCache, kubeconfigPath, registryPullSecret, specDir } from '../e2e/helpers.js';

const NS = 'chaos';
const SEL = 'chaos.prewarm.dev/pool';
const GATE: Taint = { key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' };
/** Deadline of the pools that should turn warm: longer than any outage injected (30 s). */
const LONG_DEADLINE_S = 90;
/** Deadline of the pools that fail open (the registry outage, the five pools' unpullable one). */
const SHORT_DEADLINE_S = 25;
/**
 * Slack past a deadline before a taint still on the node counts as left behind: the sidecar wakes
 * 1 ms after the deadline, but our view (a poll every 250 ms) and the apiserver's second-resolution
 * timestamps add up to a few seconds; an outage at the deadline adds the sidecar's backoff.
 */
const DEADLINE_SLACK_MS = 20_000;

interface Pool {
  readonly id: string;
  /** The pool's namespace. @default NS */
  readonly namespace?: string;
  /** The pool's node selector; a node joins with these labels to be selected. */
  readonly selector: Readonly<Record<string, string>>;
  readonly images: readonly string[];
  readonly deadlineS: number;
}

const MAIN: Pool = {
  id: 'main',
  selector: { [SEL]: 'main' },
  images: [`${REGISTRY.plain}/chaos/app-1:16m`, `${REGISTRY.plain}/chaos/app-2:16m`],
  deadlineS: LONG_DEADLINE_S,
};
/**
 * One large image (192 MiB of incompressible data), meant to give the kill a window before the warm
 * write; in the runs so far the pull was still quicker than the kubelet's report of the running
 * sidecar, and the kill landed after the warm write (the case prints which).
 */
const SLOW: Pool = { id: 'slow', selector: { [SEL]: 'slow' }, images: [`${REGISTRY.plain}/chaos/slow-1:192m`], deadlineS: LONG_DEADLINE_S };
/** Behind the TLS registry with basic auth: the one the registry outage stops. */
const PRIVATE: Pool = {
  id: 'private',
  selector: { [SEL]: 'private' },
  images: [`${REGISTRY.tls}/chaos/private-1:16m`],
  deadlineS: SHORT_DEADLINE_S,
};
/** Five pools on one node; the last has an image never pushed, so it fails open at its deadline. */
const FIVE: Pool[] = [1, 2, 3, 4, 5].map((i) => ({
  id: `five-${i}`,
  selector: { [`${SEL}-five-${i}`]: 'yes' },
  images: [`${REGISTRY.plain}/chaos/five-${i}:v1`],
  deadlineS: i === 5 ? SHORT_DEADLINE_S : LONG_DEADLINE_S,
}));
const ABSENT = FIVE[4]?.images[0] as string;
/** Early pullers need a namespace prewarm owns (its Pod Security and admission policy). */
const EARLY_NS = 'chaos-early';
/** Early pulling, one image that pulls and one never pushed: fails open at its deadline. */
const EARLY: Pool = {
  id: 'early',
  namespace: EARLY_NS,
  selector: { [SEL]: 'early' },
  images: [`${REGISTRY.plain}/chaos/early-1:16m`, `${REGISTRY.plain}/chaos/early-absent:v1`],
  deadlineS: SHORT_DEADLINE_S,
};
const EARLY_ABSENT = EARLY.images[1] as string;
/** How long the early node's CNI stand-in fails (exits 1) after the node starts: past the gate deadline. */
const CNI_FAIL_S = SHORT_DEADLINE_S + 10;

/**
 * The fail-safe's grace, from the invocation (`--failsafe-grace`): short, so that its case takes
 * a minute or two. It can reach no other case's node: the fail-safe runs only on a warm or partial
 * node, and every other case's node is the only node of its case, whose own sidecar then runs.
 */
const FAILSAFE_GRACE_S = 10;
/** A node of this pool never runs its sidecar: the reconciler image is withdrawn from the registry when it joins. */
const DARK: Pool = { id: 'fs-dark', selector: { [SEL]: 'fs-dark' }, images: [`${REGISTRY.plain}/chaos/fs-dark-1:v1`], deadlineS: 10 };
/** The namespace whose pods a quota refuses (a pool whose holder pod is never admitted). */
const BLOCKED_NS = 'chaos-blocked';
/**
 * Two pools gate the fail-safe's other node: LIVE, whose sidecar runs and turns warm, and BLOCKED,
 * whose holder pod is never admitted, so LIVE's sidecar holds the gate until the sidecars' own
 * absolute bound (10 minutes past the fail-safe's), with a sidecar running all along.
 */
const LIVE: Pool = { id: 'fs-live', selector: { [SEL]: 'fs-live' }, images: [`${REGISTRY.plain}/chaos/fs-live-1:v1`], deadlineS: 30 };
const BLOCKED: Pool = {
  id: 'fs-blocked',
  namespace: BLOCKED_NS,
  selector: { [`${SEL}-fs-blocked`]: 'yes' },
  images: [`${REGISTRY.plain}/chaos/fs-blocked-1:v1`],
  deadlineS: 30,
};
/** The fail-safe's Deployment (in the first namespace prewarm owns) and its pods' labels. */
const FAILSAFE_NS = EARLY_NS;
const FAILSAFE_PODS = `${LABEL_COMPONENT}=failsafe`;
/** Set in beforeAll: the reconciler image the bundle runs. */
let reconcilerImage = '';

interface Sample {
  at: number;
  exists: boolean;
  ready: boolean;
  taint: boolean;
  labels: Record<string, string>;
}

/** Polls one node every 250 ms (riding out an apiserver outage) and keeps every sample. */
class NodeTrack {
  readonly samples: Sample[] = [];
  firstReadyAt: number | undefined;
  taintGoneAt: number | undefined;
  private stopped = false;
  private readonly loop: Promise<void>;
  constructor(
    private readonly kube: Kube,
    readonly node: string,
  ) {
    this.loop = this.poll();
  }
  private async poll(): Promise<void> {
    const end = Date.now() + 600_000;
    while (!this.stopped && Date.now() < end) {
      try {
        const n = await this.kube.getOpt(`/api/v1/nodes/${this.node}`);
        const at = Date.now();
        const ready = (n?.status?.conditions ?? []).some(
          (c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True',
        );
        const taint = ((n?.spec?.taints ?? []) as Taint[]).some((t) => t.key === GATE.key);
        this.samples.push({ at, exists: n !== undefined, ready, taint, labels: n?.metadata.labels ?? {} });
        if (ready) this.firstReadyAt ??= at;
        if (n && !taint && this.samples.some((s) => s.taint)) this.taintGoneAt ??= at;
      } catch {
        // The apiserver is down (a fault of this tier): keep polling.
      }
      await sleep(250);
    }
  }
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}

interface CoreEvent {
  reason: string;
  message: string;
  source?: { component?: string };
  involvedObject: { name: string; uid?: string };
}

let kube: Kube;
const survived: string[] = [];
/** Cases defined, counted when vitest collects them: a case that never ran counts as not survived. */
let cases = 0;
const tracks: NodeTrack[] = [];
const nodes: string[] = [];

async function poolPods(pool: Pool, node: string, puller: boolean): Promise<KubeObject[]> {
  const l = await kube.list(`/api/v1/namespaces/${pool.namespace ?? NS}/pods`, {
    labelSelector: `${LABEL_POOL_MEMBER}=${pool.id},${puller ? LABEL_PULLER : `!${LABEL_PULLER}`}`,
    fieldSelector: `spec.nodeName=${node}`,
  });
  return l.items.filter((p) => !p.metadata.deletionTimestamp);
}

async function holder(pool: Pool, node: string): Promise<KubeObject | undefined> {
  return (await poolPods(pool, node, false))[0];
}

interface ContainerStatus {
  name: string;
  image: string;
  restartCount: number;
  state?: { running?: object; waiting?: { reason?: string }; terminated?: object };
  lastState?: { terminated?: object };
}
/** Every container status of a pull pod: its init containers' (the native sidecar, the helper) and its containers'. */
const statuses = (p: KubeObject | undefined): ContainerStatus[] =>
  [...(p?.status?.initContainerStatuses ?? []), ...(p?.status?.containerStatuses ?? [])] as ContainerStatus[];
const started = (c: ContainerStatus): boolean => c.state?.running !== undefined || c.lastState?.terminated !== undefined;

/** Joins a node carrying the gate from registration on, with the labels that select `pools`. */
async function join(name: string, pools: readonly Pool[]): Promise<NodeTrack> {
  nodes.push(name);
  const track = new NodeTrack(kube, name);
  tracks.push(track);
  await addNode(name, {
    labels: Object.assign({}, ...pools.map((p) => p.selector)) as Record<string, string>,
    taints: [GATE],
    wait: false,
  });
  return track;
}

async function until(name: string, pools: readonly Pool[], states: readonly string[], timeoutMs: number): Promise<void> {
  await waitFor(
    `${name}: ${pools.map((p) => p.id).join(', ')} ${states.join('/')} and the gate gone`,
    async () => {
      const n = await kube.get(`/api/v1/nodes/${name}`);
      const labels = n.metadata.labels ?? {};
      const taint = ((n.spec?.taints ?? []) as Taint[]).some((t) => t.key === GATE.key);
      return !taint && pools.every((p) => states.includes(labels[nodeLabelKey(p.id)] ?? ''));
    },
    timeoutMs,
  );
}

/** The prewarm Events about this incarnation of the node. */
async function prewarmEvents(node: string, uid?: string): Promise<CoreEvent[]> {
  const sel = `involvedObject.kind=Node,involvedObject.name=${node}${uid ? `,involvedObject.uid=${uid}` : ''}`;
  const l = await kube.list<CoreEvent>(`/api/v1/namespaces/${EVENTS_NAMESPACE}/events`, { fieldSelector: sel });
  return l.items.filter((e) => e.source?.component === EVENT_COMPONENT);
}

/** At most one Event per transition: per reason and pool, and one gate removal in all. */
function expectOneEventPerTransition(events: readonly CoreEvent[]): void {
  const perKey = new Map<string, number>();
  for (const e of events) {
    const key = `${e.reason} ${/^pool (\S+):/.exec(e.message)?.[1] ?? '-'}`;
    perKey.set(key, (perKey.get(key) ?? 0) + 1);
  }
  const dup = [...perKey].filter(([, n]) => n > 1);
  expect(dup, events.map((e) => `${e.reason}: ${e.message}`).join('\n')).toEqual([]);
  expect(events.filter((e) => e.message.includes('removed gate taint')).length).toBeLessThanOrEqual(1);
}

/**
 * The five invariants on a node that stays. `sidecarRestarts` is how many restarts of each
 * sidecar the case itself caused (0 but for the sidecar kill).
 */
async function invariants(track: NodeTrack, pools: readonly Pool[], sidecarRestarts = 0): Promise<CoreEvent[]> {
  const name = track.node;
  // 1. No gating taint past its deadline (first Ready seen + the longest deadline + slack).
  const node = await kube.get(`/api/v1/nodes/${name}`);
  expect(((node.spec?.taints ?? []) as Taint[]).map((t) => t.key)).not.toContain(GATE.key);
  expect(track.firstReadyAt, `${name} was seen Ready`).toBeDefined();
  // The caller saw the gate gone on its own read; the track's next poll (every 250 ms) sees it too.
  await waitFor(`the gate on ${name} seen, then seen gone, by the track`, () => track.taintGoneAt, 5_000, 100);
  const bound = (track.firstReadyAt as number) + Math.max(...pools.map((p) => p.deadlineS)) * 1000 + DEADLINE_SLACK_MS;
  expect(track.taintGoneAt as number, `gate gone by Ready + deadline + slack`).toBeLessThanOrEqual(bound);
  for (const pool of pools) {
    // 2. Label and annotation agree with the pods (bounded: a pod event may be a reconcile away).
    await waitFor(
      `${name}: label and annotation of ${pool.id} agree with its pods`,
      async () => {
        const n = await kube.get(`/api/v1/nodes/${name}`);
        const label = n.metadata.labels?.[nodeLabelKey(pool.id)];
        const ann = parseAnnotation(n.metadata.annotations?.[nodeAnnotationKey(pool.id)]);
        const pods = [...(await poolPods(pool, name, false)), ...(await poolPods(pool, name, true))];
        const h = pods.find((p) => p.metadata.labels?.[LABEL_PULLER] === undefined);
        if (!h || !ann || ann.pod !== h.metadata.name || ann.state !== label || ann.images !== pool.images.length) return false;
        const present = new Set(
          pods.flatMap((p) =>
            statuses(p)
              .filter((c) => c.name !== SIDECAR_CONTAINER && started(c))
              .map((c) => c.image),
          ),
        );
        const missing = pool.images.filter((i) => !present.has(i));
        if (label === 'warm') return missing.length === 0;
        if (label === 'partial')
          return (
            missing.length > 0 &&
            (ann.failing ?? [])
              .map((f) => f.image)
              .sort()
              .join() === missing.sort().join()
          );
        return false;
      },
      30_000,
    );
    // 3. No puller pod left on a warm or partial node.
    await waitFor(`${name}: no puller pod of ${pool.id}`, async () => (await poolPods(pool, name, true)).length === 0, 60_000);
    // 4. No sidecar in a crash loop: running, restarted only as often as the case made it.
    const sidecar = statuses(await holder(pool, name)).find((c) => c.name === SIDECAR_CONTAINER);
    expect(sidecar?.state?.running, `sidecar of ${pool.id} on ${name} running: ${JSON.stringify(sidecar)}`).toBeDefined();
    expect(sidecar?.restartCount, `sidecar restarts of ${pool.id} on ${name}`).toBe(sidecarRestarts);
  }
  // 5. At most one Event per transition.
  const events = await prewarmEvents(name, node.metadata.uid);
  expectOneEventPerTransition(events);
  return events;
}

/** Runs one case's body (which returns when the fault was injected): prints its line when the invariants hold. */
async function fault(name: string, body: () => Promise<number>): Promise<void> {
  const t0 = await body();
  const line = `fault ${name}: survived in ${secs(Date.now() - t0)}s`;
  console.log(line);
  survived.push(line);
}

/**
 * Joins a node selected by MAIN, injects the fault once the holder pod is bound to it (the node is
 * warming: nothing pulled yet), then waits for warm and checks the invariants. Returns when the
 * fault began.
 */
async function warmsThrough(node: string, inject: () => Promise<void>): Promise<number> {
  const track = await join(node, [MAIN]);
  await waitFor(`holder pod bound to ${node}`, () => holder(MAIN, node), 120_000);
  const t0 = Date.now();
  await inject();
  await until(node, [MAIN], ['warm'], 240_000);
  await invariants(track, [MAIN]);
  return t0;
}

function sidecarLogs(pod: string, previous: boolean): string {
  return run(
    [BIN.kubectl, `--kubeconfig=${kubeconfigPath()}`, '-n', NS, 'logs', pod, '-c', SIDECAR_CONTAINER, ...(previous ? ['--previous'] : [])],
    { allowFail: true, timeoutMs: 30_000 },
  ).stdout;
}

/**
 * Waits until the fail-safe's pod runs on `host`. A pod of it left bound to a node an earlier case
 * removed would hold the Deployment's one replica until pod GC's quarantine of such pods ends, so
 * it is deleted here (it runs nowhere: its node and kubelet are gone).
 */
async function failsafeRunsOn(host: string): Promise<KubeObject> {
  return waitFor(
    `the fail-safe's pod running on ${host}`,
    async () => {
      const pods = (await kube.list(`/api/v1/namespaces/${FAILSAFE_NS}/pods`, { labelSelector: FAILSAFE_PODS })).items;
      for (const p of pods) {
        const on = p.spec?.nodeName as string | undefined;
        if (on !== undefined && !p.metadata.deletionTimestamp && (await kube.getOpt(`/api/v1/nodes/${on}`)) === undefined)
          kubectl(['delete', 'pod', '-n', FAILSAFE_NS, p.metadata.name, '--grace-period=0', '--force', '--wait=false'], {
            allowFail: true,
          });
      }
      return pods.find(
        (p) =>
          p.spec?.nodeName === host &&
          !p.metadata.deletionTimestamp &&
          statuses(p).some((c) => c.name === FAILSAFE_CONTAINER && c.state?.running !== undefined),
      );
    },
    120_000,
    500,
  );
}

/** The node's creationTimestamp (ms, whole seconds as the apiserver keeps it): where the fail-safe's bound counts from. */
async function createdAt(node: string): Promise<number> {
  return Date.parse((await kube.get(`/api/v1/nodes/${node}`)).metadata.creationTimestamp as string);
}

/** The running sidecar of `pool`'s holder pod on `node`, or undefined. */
async function runningSidecar(pool: Pool, node: string): Promise<ContainerStatus | undefined> {
  const c = statuses(await holder(pool, node)).find((x) => x.name === SIDECAR_CONTAINER);
  return c?.state?.running ? c : undefined;
}

/** One case of the tier: an `it`, counted in the summary's denominator. */
function faultCase(title: string, body: () => Promise<void>): void {
  cases++;
  it(title, body);
}

describe('faults survived', () => {
  beforeAll(() => {
    kubectl(['delete', 'namespace', NS, EARLY_NS, BLOCKED_NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
    const cache = (pool: Pool, extra: Record<string, unknown> = {}): Record<string, unknown> =>
      imageCache(pool.namespace ?? NS, pool.id, [{ pool: pool.id, nodeSelector: { ...pool.selector }, images: [...pool.images] }], {
        gate: { deadline: `${pool.deadlineS}s` },
        ...extra,
      });
    const dir = specDir('chaos', [
      cache(MAIN, { lanes: 2 }),
      cache(SLOW),
      cache(PRIVATE, { imagePullSecrets: [{ name: 'regcred' }] }),
      ...FIVE.map((p) => cache(p)),
      cache(EARLY, { earlyPull: true }),
      ...[DARK, LIVE, BLOCKED].map((p) => cache(p)),
    ]);
    const objects = yamlObjects(synth([dir], ['--own-namespace', EARLY_NS, '--failsafe-grace', `${FAILSAFE_GRACE_S}s`]).yaml);
    reconcilerImage = poolsOf(objects)[0]?.sidecar[0] ?? '';
    expect(reconcilerImage, 'the reconciler image of the bundle').not.toBe('');
    expect(objects.filter((o) => o.kind === 'Deployment').map((o) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual([
      `${FAILSAFE_NS}/${FAILSAFE_NAME}`,
    ]);
    for (const ref of [...MAIN.images, ...PRIVATE.images]) ensureStandIn(ref, { sizeBytes: 16 << 20 });
    for (const ref of SLOW.images) ensureStandIn(ref, { sizeBytes: 192 << 20 });
    for (const ref of FIVE.flatMap((p) => p.images)) if (ref !== ABSENT) ensureStandIn(ref);
    ensureStandIn(EARLY.images[0] as string, { sizeBytes: 16 << 20 });
    prepareImages(objects, [ABSENT, EARLY_ABSENT]);
    for (const ref of [ABSENT, EARLY_ABSENT]) expect(imageInRegistry(ref), `${ref} must be absent from the registry`).toBe(false);
    const namespaces = objects.filter((o) => o.kind === 'Namespace');
    expect(applyServerSide(namespaces.map((o) => JSON.stringify(o)).join('\n---\n')).warnings).toEqual([]);
    expect(applyServerSide(JSON.stringify(registryPullSecret(NS, 'regcred'))).warnings).toEqual([]);
    const quota = {
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'no-pods', namespace: BLOCKED_NS },
      spec: { hard: { pods: '0' } },
    };
    expect(applyServerSide(JSON.stringify(quota)).warnings).toEqual([]);
    const applied = applyServerSide(objects.map((o) => JSON.stringify(o)).join('\n---\n'));
    // The early pool's host network, reported by Pod Security warn (by design), and nothing else.
    expect(applied.warnings, applied.stderr).toEqual([HOST_NETWORK_WARNING]);
    kube = new Kube();
  });

  afterEach(async () => {
    for (const t of tracks.splice(0)) await t.stop();
    for (const n of nodes.splice(0)) await removeNode(n).catch(() => undefined);
  });

  afterAll(() => {
    kube?.close();
    kubectl(['delete', 'namespace', NS, EARLY_NS, BLOCKED_NS, '--ignore-not-found', '--wait=false'], { allowFail: true });
    console.log(`faults survived: ${survived.length}/${cases}`);
  });

  faultCase('kube-apiserver killed while a node warms, back after 30 s', async () => {
    await fault('apiserver-killed', () =>
      warmsThrough('chaos-api', async () => {
        await killApiserver();
        await sleep(30_000);
        await startApiserverAgain();
      }),
    );
  });

  faultCase('etcd restarted while a node warms', async () => {
    await fault('etcd-restarted', () => warmsThrough('chaos-etcd', restartEtcd));
  });

  faultCase('the sidecar process SIGKILLed as soon as it runs: restarted, same end state, no duplicate writes or Events', async () => {
    await fault('sidecar-killed', async () => {
      const node = 'chaos-sidecar';
      const track = await join(node, [SLOW]);
      const pod = await waitFor(
        `sidecar running on ${node}`,
        async () => {
          const h = await holder(SLOW, node);
          return statuses(h).find((c) => c.name === SIDECAR_CONTAINER)?.state?.running ? h : undefined;
        },
        120_000,
        100,
      );
      const t0 = Date.now();
      killContainer(node, pod.metadata.name, SIDECAR_CONTAINER);
      const atKill = (await kube.get(`/api/v1/nodes/${node}`)).metadata.labels?.[nodeLabelKey(SLOW.id)];
      console.log(`(sidecar-killed: SIGKILL ${atKill === undefined ? 'before' : 'after'} its warm write)`);
      // The kubelet notices the exit and starts the container again.
      await waitFor(
        `sidecar of ${pod.metadata.name} restarted`,
        async () => {
          const c = statuses(await holder(SLOW, node)).find((x) => x.name === SIDECAR_CONTAINER);
          return c && c.restartCount >= 1 && c.state?.running;
        },
        90_000,
        250,
      );
      await until(node, [SLOW], ['warm'], 180_000);
      const events = await invariants(track, [SLOW], 1);
      // The same end state as without the kill: warm, the annotation of this very pod.
      const ann = parseAnnotation((await kube.get(`/api/v1/nodes/${node}`)).metadata.annotations?.[nodeAnnotationKey(SLOW.id)]);
      expect(ann).toMatchObject({ pod: pod.metadata.name, state: 'warm', images: SLOW.images.length });
      // No duplicate writes: across both incarnations, the node metadata was written once for warm.
      const logs = `${sidecarLogs(pod.metadata.name, true)}\n${sidecarLogs(pod.metadata.name, false)}`;
      const writes = logs.split('\n').filter((l) => l.includes('"node metadata written"'));
      expect(writes.length, writes.join('\n')).toBe(1);
      expect(writes[0]).toContain('"state":"warm"');
      expect(events.filter((e) => e.reason === 'Warm').length).toBe(1);
      return t0;
    });
  });

  faultCase('the kubelet restarted while a node warms', async () => {
    await fault('kubelet-restarted', () =>
      warmsThrough('chaos-kubelet', async () => {
        await stopKubelet('chaos-kubelet');
        await sleep(5_000);
        await startKubeletAgain('chaos-kubelet');
      }),
    );
  });

  faultCase('a node deleted while it warms', async () => {
    await fault('node-deleted', async () => {
      const node = 'chaos-delete';
      await join(node, [MAIN]);
      const h = await waitFor(`holder pod bound to ${node}`, () => holder(MAIN, node), 120_000);
      const uid = (await kube.get(`/api/v1/nodes/${node}`)).metadata.uid;
      const t0 = Date.now();
      await removeNode(node);
      nodes.splice(nodes.indexOf(node), 1);
      await waitFor(`Node ${node} gone`, async () => (await kube.getOpt(`/api/v1/nodes/${node}`)) === undefined, 60_000);
      // The pool's pods bound to the gone node are collected (pod GC of orphans), none comes back.
      await waitFor(
        `no pod of the pool left bound to ${node}`,
        async () => (await poolPods(MAIN, node, false)).length + (await poolPods(MAIN, node, true)).length === 0,
        150_000,
        1_000,
      );
      expect(await kube.getOpt(`/api/v1/namespaces/${NS}/pods/${h.metadata.name}`)).toBeUndefined();
      expectOneEventPerTransition(await prewarmEvents(node, uid));
      return t0;
    });
  });

  faultCase('a node flapping NotReady/Ready while it warms', async () => {
    await fault('node-flapping', async () => {
      const node = 'chaos-flap';
      const track = await join(node, [MAIN]);
      await waitFor(`${node} Ready`, () => track.firstReadyAt, 120_000, 200);
      const t0 = Date.now();
      for (let i = 0; i < 3; i++) {
        reportNotReady(node);
        await waitFor(`${node} NotReady (flap ${i + 1})`, () => track.samples.at(-1)?.ready === false, 10_000, 100).catch(
          () => undefined, // the kubelet may report Ready again between two polls
        );
        await waitFor(`${node} Ready again (flap ${i + 1})`, () => track.samples.at(-1)?.ready === true, 30_000, 200);
        await sleep(1_000);
      }
      await until(node, [MAIN], ['warm'], 180_000);
      await invariants(track, [MAIN]);
      return t0;
    });
  });

  faultCase(
    'the registry down during warm-up: fail open at the deadline with reasons, warm with no manual step once it is back',
    async () => {
      await fault('registry-down', async () => {
        const node = 'chaos-registry';
        const t0 = Date.now();
        await stopRegistry(true);
        let back = false;
        try {
          const track = await join(node, [PRIVATE]);
          await until(node, [PRIVATE], ['partial'], (SHORT_DEADLINE_S + 150) * 1000);
          const n = await kube.get(`/api/v1/nodes/${node}`);
          const ann = parseAnnotation(n.metadata.annotations?.[nodeAnnotationKey(PRIVATE.id)]);
          expect(ann?.state).toBe('partial');
          expect(ann?.failing?.map((f) => f.image)).toEqual([...PRIVATE.images]);
          expect(ann?.failing?.[0]?.reason).toMatch(/ErrImagePull|ImagePullBackOff/);
          console.log(
            `(registry-down: partial after ${secs(Date.now() - t0)}s; reason ${ann?.failing?.[0]?.reason}: ${ann?.failing?.[0]?.message})`,
          );
          await invariants(track, [PRIVATE]);
          await startRegistry(true);
          back = true;
          const backAt = Date.now();
          await until(node, [PRIVATE], ['warm'], 360_000);
          console.log(`(registry-down: warm ${secs(Date.now() - backAt)}s after the registry came back, no manual step)`);
          const events = await invariants(track, [PRIVATE]);
          expect(
            events
              .map((e) => e.reason)
              .filter((r) => r === 'Partial' || r === 'Warm')
              .sort(),
          ).toEqual(['Partial', 'Warm']);
        } finally {
          if (!back) await startRegistry(true);
        }
        return t0;
      });
    },
  );

  faultCase('five pools gate one node: the taint goes exactly once, after the last pool is warm or failed open', async () => {
    await fault('five-pools', async () => {
      const node = 'chaos-five';
      const t0 = Date.now();
      const track = await join(node, FIVE);
      await until(node, FIVE.slice(0, 4), ['warm'], 180_000);
      await until(node, FIVE.slice(4), ['partial'], (SHORT_DEADLINE_S + 120) * 1000);
      const events = await invariants(track, FIVE);
      // Never before: no sample shows the node without the taint while some pool was neither warm nor partial.
      const done = (s: Sample): boolean => FIVE.every((p) => ['warm', 'partial'].includes(s.labels[nodeLabelKey(p.id)] ?? ''));
      const early = track.samples.filter(
        (s) => s.exists && s.at >= (track.samples.find((x) => x.taint)?.at ?? Infinity) && !s.taint && !done(s),
      );
      expect(
        early.map((s) => JSON.stringify(s)),
        'taint gone while a pool still warmed',
      ).toEqual([]);
      // Exactly once: registered with it, removed once, never back.
      const firstGone = track.samples.findIndex((s) => s.exists && !s.taint && track.samples.some((x) => x.taint && x.at < s.at));
      expect(track.samples.slice(firstGone).filter((s) => s.taint)).toEqual([]);
      expect(events.filter((e) => e.message.includes('removed gate taint')).length).toBe(1);
      // The unpullable pool failed open (partial) at its deadline; the gate waited for it.
      const partialAt = track.samples.find((s) => s.labels[nodeLabelKey(FIVE[4]?.id ?? '')] === 'partial')?.at ?? Infinity;
      expect(track.taintGoneAt as number).toBeGreaterThanOrEqual(partialAt);
      return t0;
    });
  });

  faultCase(
    'the CNI fails to start for longer than the gate deadline: the gate still fails open at its deadline, nothing left behind',
    async () => {
      await fault('cni-late', async () => {
        const node = 'chaos-cni';
        nodes.push(node);
        const track = new NodeTrack(kube, node);
        tracks.push(track);
        const t0 = Date.now();
        await addNode(node, { labels: { ...EARLY.selector }, taints: [GATE], wait: false, cniStandIn: { failSeconds: CNI_FAIL_S } });
        await until(node, [EARLY], ['partial'], (CNI_FAIL_S + SHORT_DEADLINE_S + 180) * 1000);
        // NotReady while the CNI failed: no pod-network pod, so no sidecar, could act before that.
        expect((track.firstReadyAt as number) - t0, 'Ready only after the CNI stand-in stopped failing').toBeGreaterThanOrEqual(
          CNI_FAIL_S * 1000 - 2000,
        );
        await invariants(track, [EARLY]);
        // The deadline runs from Ready (the holder's start), not from the join: not early, not late.
        const held = (track.taintGoneAt as number) - (track.firstReadyAt as number);
        console.log(
          `(cni-late: Ready ${secs((track.firstReadyAt as number) - t0)}s after the join; gate failed open ${secs(held)}s after Ready)`,
        );
        expect(held, 'the gate held until its deadline after Ready').toBeGreaterThanOrEqual(SHORT_DEADLINE_S * 1000 - 1500);
        const n = await kube.get(`/api/v1/nodes/${node}`);
        const ann = parseAnnotation(n.metadata.annotations?.[nodeAnnotationKey(EARLY.id)]);
        expect(ann?.failing?.map((f) => f.image)).toEqual([EARLY_ABSENT]);
        // Nothing left behind once the node goes: not the stand-in, not a pod of the pool.
        await removeNode(node);
        nodes.splice(nodes.indexOf(node), 1);
        await waitFor(
          `no pod left bound to ${node}`,
          async () =>
            (await poolPods(EARLY, node, false)).length +
              (await poolPods(EARLY, node, true)).length +
              (await kube.list('/api/v1/namespaces/kube-system/pods', { fieldSelector: `spec.nodeName=${node}` })).items.length ===
            0,
          150_000,
          1_000,
        );
        return t0;
      });
    },
  );
  faultCase(
    'a node joins while the reconciler image cannot be pulled: the fail-safe lifts its gate within its bound plus a period, and leaves a node whose sidecar runs',
    async () => {
      await fault('failsafe', async () => {
        const host = 'chaos-fs-host';
        const live = 'chaos-fs-live';
        const dark = 'chaos-fs-dark';
        // The fail-safe needs a node that holds the reconciler image (warm); LIVE's node pulls it
        // too, and runs its sidecar before the image is withdrawn.
        const hostTrack = await join(host, [MAIN]);
        const liveTrack = await join(live, [LIVE, BLOCKED]);
        await until(host, [MAIN], ['warm'], 180_000);
        await invariants(hostTrack, [MAIN]);
        await failsafeRunsOn(host);
        await waitFor(`the sidecar of ${LIVE.id} running on ${live}`, () => runningSidecar(LIVE, live), 120_000, 250);
        const liveCreated = await createdAt(live);
        const liveBound = liveCreated + (Math.max(LIVE.deadlineS, BLOCKED.deadlineS) + FAILSAFE_GRACE_S) * 1000;
        // DARK's bound must not come before LIVE's, so that the look that opens DARK's node has LIVE's overdue too.
        await sleep(Math.max(0, liveBound - (DARK.deadlineS + FAILSAFE_GRACE_S) * 1000 + 2_000 - Date.now()));
        const t0 = Date.now();
        const restore = withdrawRegistryImage(reconcilerImage);
        try {
          const darkTrack = await join(dark, [DARK]);
          const darkCreated = await waitFor(
            `${dark} registered`,
            async () => (await kube.getOpt(`/api/v1/nodes/${dark}`)) && createdAt(dark),
            60_000,
          );
          const darkBound = darkCreated + (DARK.deadlineS + FAILSAFE_GRACE_S) * 1000;
          const period = FAILSAFE_PERIOD_SECONDS * 1100;
          await waitFor(`the gate gone from ${dark}`, () => darkTrack.taintGoneAt, darkBound + period + 30_000 - Date.now(), 250);
          const goneAt = darkTrack.taintGoneAt as number;
          console.log(
            `(failsafe: ${dark}'s gate gone ${secs(goneAt - darkCreated)}s after its creation; bound ${secs(darkBound - darkCreated)}s, period ${FAILSAFE_PERIOD_SECONDS}s)`,
          );
          // 1. Within the bound plus one period (jittered by a tenth), and not before the bound;
          //    a few seconds of slack for the track's polling and the request's own time.
          expect(goneAt, 'the gate held until the fail-safe bound').toBeGreaterThanOrEqual(darkBound);
          expect(goneAt, 'the gate gone within the bound plus a period').toBeLessThanOrEqual(darkBound + period + 3_000);
          // 2. No sidecar ran there: the holder pod waits on the reconciler image.
          const sidecar = statuses(await holder(DARK, dark)).find((c) => c.name === SIDECAR_CONTAINER);
          expect(sidecar?.state?.waiting?.reason, JSON.stringify(sidecar)).toMatch(/ErrImagePull|ImagePullBackOff/);
          expect(started(sidecar as ContainerStatus), 'the sidecar never started').toBe(false);
          // 3. The fail-safe's Event on the node, naming the pool it did not wait for any longer.
          const uid = (await kube.get(`/api/v1/nodes/${dark}`)).metadata.uid as string;
          const events = await waitFor(
            `the ${EventReason.GateFailsafeOpened} Event on ${dark}`,
            async () => {
              const e = await prewarmEvents(dark, uid);
              return e.some((x) => x.reason === EventReason.GateFailsafeOpened) ? e : undefined;
            },
            10_000,
          );
          expect(events.map((e) => e.reason)).toEqual([EventReason.GateFailsafeOpened]);
          expect(parseNodeEvent(events[0]?.reason, events[0]?.message)?.gate).toBeDefined();
          expect(events[0]?.message).toContain(`pools not ready: ${DARK.id}`);
          // 4. The same look found LIVE's node past its bound too (DARK's bound is the later one),
          //    with the gate on and its sidecar running, and left it alone.
          expect(goneAt).toBeGreaterThanOrEqual(liveBound);
          const liveAtLook = liveTrack.samples.filter((x) => x.at >= liveBound && x.at <= goneAt);
          expect(liveAtLook.length, `${live} polled between its bound and the look`).toBeGreaterThan(0);
          expect(liveAtLook.filter((x) => !x.taint).map((x) => JSON.stringify(x))).toEqual([]);
          expect(await runningSidecar(LIVE, live), `the sidecar of ${LIVE.id} still running on ${live}`).toBeDefined();
          expect(((await kube.get(`/api/v1/nodes/${live}`)).spec?.taints as Taint[]).map((x) => x.key)).toContain(GATE.key);
          const liveEvents = await prewarmEvents(live);
          expect(liveEvents.filter((e) => e.reason === EventReason.GateFailsafeOpened)).toEqual([]);
          expect((await holder(BLOCKED, live)) === undefined, `${BLOCKED.id}'s holder pod was never admitted`).toBe(true);
        } finally {
          restore();
        }
        return t0;
      });
    },
  );
});
