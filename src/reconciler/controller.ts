/**
 * The sidecar's loop: feeds observed state to the pure core and applies its intents through the
 * ports. It keeps no decision state of its own; every reconcile re-reads the node. Reconciles run on
 * a pod event, at the core's next deadline, and on a slow resync; they never overlap.
 */
import { podPinnedBytes } from '../contract/node-images.js';
import type { ReconcilerConfig } from '../contract/sidecar-env.js';
import { decideGate, mergeEvents, nextCheckAt } from './gate.js';
import type { KNode, KPod } from './kube-types.js';
import { metadataPatch, taintRemovalPatch } from './patches.js';
import { decidePool, type PoolDecision } from './pool.js';
import {
  type Clock,
  type EventSink,
  type Logger,
  type NodePort,
  type PodSource,
  type PodWatchEvent,
  type PoolPodSource,
  type Registry,
  type Restarter,
} from './ports.js';
import { ApiError } from '../http/api-error.js';
import type { EventIntent } from '../contract/events.js';
import { type IgnoredReason, type Metrics, WatchName, WatchRestart } from './metrics.js';
import { Refresher } from './refresh.js';
import type { PoolsFile } from '../contract/pools-file.js';

/** Everything the loop talks to. */
export interface ControllerDeps {
  readonly pods: PodSource;
  /** The pool's other pods on this node, whose started containers count too. @default - only our own pod is observed */
  readonly poolPods?: PoolPodSource;
  readonly nodes: NodePort;
  readonly events: EventSink;
  readonly clock: Clock;
  readonly log: Logger;
  readonly metrics: Metrics;
  /** Required when `config.refreshSeconds > 0`. */
  readonly registry?: Registry;
  readonly restarter?: Restarter;
}

/** Tunables of the loop, separate from the pod's configuration so tests can shorten them. */
export interface ControllerOptions {
  readonly sidecarName: string;
  /** Re-read the node this often without pod events. @default 300000; 30000 while our gate taint is on the node */
  readonly resyncMs?: number;
  readonly gateResyncMs?: number;
  /** @default 1000 */
  readonly backoffInitialMs?: number;
  /** @default 60000 */
  readonly backoffMaxMs?: number;
}

/** A watch that ends sooner than this after it opened is restarted only after a backoff: client-go's "very short watch" (ms). */
export const SHORT_WATCH_MS = 1000;

/** A watch loop's backoff restarts from its first step only this long after its last began, as client-go's reflector (ms). */
export const BACKOFF_RESET_MS = 120_000;

/** The most pool pods of this node kept as peers: the holder's burst and early pullers. */
export const MAX_PEERS = 256;

/** How long cleanup on SIGTERM keeps retrying (ms). */
export const CLEANUP_BUDGET_MS = 15_000;

/** Exponential backoff with full jitter (AWS architecture blog), reset on success. */
export class Backoff {
  private attempt = 0;
  constructor(
    private readonly initialMs: number,
    private readonly maxMs: number,
    private readonly random: () => number,
  ) {}
  next(): number {
    const cap = Math.min(this.maxMs, this.initialMs * 2 ** this.attempt);
    this.attempt = Math.min(this.attempt + 1, 30);
    return Math.max(1, Math.round(cap * (0.5 + 0.5 * this.random())));
  }
  reset(): void {
    this.attempt = 0;
  }
}

/** A level-triggered wake-up: any number of kicks before a wait collapse into one. */
class Kick {
  private pending = false;
  private waiter: (() => void) | undefined;
  kick(): void {
    this.pending = true;
    this.waiter?.();
  }
  /** Resolves on a kick (past or future), after `ms`, or on abort. */
  async wait(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
    // An abort that happened during the reconcile before this wait fires no listener any more.
    if (this.pending || signal.aborted) {
      this.pending = false;
      return;
    }
    const inner = new AbortController();
    const onAbort = (): void => inner.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    this.waiter = () => inner.abort();
    try {
      await clock.sleep(ms, inner.signal);
    } finally {
      this.waiter = undefined;
      signal.removeEventListener('abort', onAbort);
      this.pending = false;
    }
  }
}

/** The reconciler of one pull pod's sidecar. */
export class Controller {
  private pod: KPod | undefined;
  private peers = new Map<string, KPod>();
  /** Whether the first list of the pool's pods has answered: the first reconcile waits for it. */
  private peersListed: boolean;
  private readonly kick = new Kick();
  private readonly resyncMs: number;
  private readonly gateResyncMs: number;
  private readonly backoff: Backoff;
  private readonly refresher: Refresher | undefined;
  private lastDecision: PoolDecision | undefined;
  /** Whether the holder's image containers may start; once true, it stays so ({@link imagesReleased}). */
  private released = false;
  /** When this process began to judge, for the startup probe's own deadline. */
  private readonly startedAt: number;
  constructor(
    private readonly deps: ControllerDeps,
    private readonly config: ReconcilerConfig,
    private readonly pools: PoolsFile,
    private readonly opts: ControllerOptions,
  ) {
    this.peersListed = deps.poolPods === undefined;
    this.startedAt = deps.clock.now();
    this.resyncMs = opts.resyncMs ?? 300_000;
    this.gateResyncMs = opts.gateResyncMs ?? 30_000;
    this.backoff = new Backoff(opts.backoffInitialMs ?? 1000, opts.backoffMaxMs ?? 60_000, () => deps.clock.random());
    this.refresher =
      config.refreshSeconds > 0 && deps.registry
        ? new Refresher(
            {
              registry: deps.registry,
              ...(deps.restarter ? { restarter: deps.restarter } : {}),
              clock: deps.clock,
              log: deps.log,
              metrics: deps.metrics,
              report: (e) => this.report(e),
              pod: () => this.pod,
            },
            config.poolId,
            config.refreshSeconds,
            opts.sidecarName,
          )
        : undefined;
  }

  /** Runs until `signal` aborts (SIGTERM), then removes our label and annotation from the node. */
  async run(signal: AbortSignal): Promise<void> {
    const { log } = this.deps;
    const stop = new AbortController();
    signal.addEventListener('abort', () => stop.abort(), { once: true });
    const watch = Promise.all([this.watchPod(stop.signal), this.watchPeers(stop.signal)]);
    const refresh = this.refresher?.run(stop.signal) ?? Promise.resolve();
    let deleted = false;
    while (!stop.signal.aborted) {
      let wait = this.resyncMs;
      try {
        if (this.pod && this.peersListed) {
          const r = await this.reconcile(false);
          wait = r.waitMs;
          deleted = r.deleted;
          this.backoff.reset();
        }
      } catch (e) {
        wait = this.backoff.next();
        this.apiError('reconcile', e);
        log.warn('reconcile failed; retrying', { err: e, retryInMs: wait });
      }
      // Once the pod is being deleted we have cleaned up; only SIGTERM (or the kill) follows.
      if (deleted) wait = this.resyncMs;
      await this.kick.wait(this.deps.clock, wait, stop.signal);
    }
    stop.abort();
    await Promise.allSettled([watch, refresh]);
    await this.cleanup();
  }

  /** The startup probe: once released, or once the deadline passed since we started. */
  imagesReleased(): boolean {
    if (!this.released && this.deps.clock.now() >= this.startedAt + this.config.deadlineSeconds * 1000) this.release('deadline');
    return this.released;
  }

  private release(why: string): void {
    this.released = true;
    this.deps.log.info('image containers released', { why });
  }

  /** One reconcile; returns how long to wait before the next one absent any pod event. */
  async reconcile(terminating: boolean): Promise<{ waitMs: number; deleted: boolean }> {
    const { nodes, clock, log, metrics } = this.deps;
    const pod = this.pod as KPod;
    let node = await nodes.get();
    const now = clock.now();
    const peers = [...this.peers.values()];
    const d = decidePool({
      pod,
      node,
      pools: this.pools,
      config: this.config,
      now,
      terminating,
      sidecarName: this.opts.sidecarName,
      peers,
    });
    // Before the write: the kubelet's next probe starts the holder's containers meanwhile.
    if (d.releaseImages && !this.released) this.release(d.state);
    const patch = metadataPatch(this.config, d);
    if (patch) {
      node = await nodes.patchMerge(patch);
      log.info('node metadata written', { state: d.state, label: d.label, annotationBytes: d.annotation?.length ?? 0 });
    }
    if (d.state === 'terminating') return { waitMs: this.resyncMs, deleted: true };
    // Phase 2 on the node returned by our own write: see decideGate for the race this settles.
    let gate = decideGate(node, this.pools, this.config, d.state, now);
    if (gate.removeTaintKey) {
      const removed = await this.removeTaint(node, gate.removeTaintKey);
      node = removed.node;
      if (removed.done) {
        metrics.gateOpened.inc({ pool: this.config.poolId, outcome: gate.outcome ?? 'ready' });
        log.info('gate taint removed', { taint: gate.removeTaintKey, outcome: gate.outcome, waitingFor: gate.waitingFor });
      } else gate = { waitingFor: gate.waitingFor };
    }
    for (const e of mergeEvents(d.events, gate)) await this.emit(node, e);
    this.observe(d);
    this.observePinned(pod, node);
    const next = nextCheckAt(d, gate);
    const taintPresent = this.config.gateTaintKey !== '' && (node.spec?.taints ?? []).some((t) => t.key === this.config.gateTaintKey);
    const resync = taintPresent ? this.gateResyncMs : this.resyncMs;
    return { waitMs: Math.max(1, Math.min(resync, next === undefined ? resync : next - now + 1)), deleted: false };
  }

  /** Removes the taint with a test-guarded JSON patch, re-reading on a failed test a bounded number of times. */
  private async removeTaint(start: KNode, key: string): Promise<{ node: KNode; done: boolean }> {
    let node = start;
    for (let i = 0; i < 5; i++) {
      const ops = taintRemovalPatch(node, key);
      if (!ops) return { node, done: false };
      try {
        return { node: await this.deps.nodes.patchJson(ops), done: true };
      } catch (e) {
        if (!(e instanceof ApiError) || (e.code !== 409 && e.code !== 422)) throw e;
        node = await this.deps.nodes.get();
      }
    }
    throw new ApiError(409, `taint ${key} kept changing under us`, 'Conflict');
  }

  /** {@link emit} about the node as it is now: for Events outside a reconcile (the refresh). */
  private async report(e: EventIntent): Promise<void> {
    try {
      await this.emit(await this.deps.nodes.get(), e);
    } catch (err) {
      this.apiError('event', err);
    }
  }

  private async emit(node: KNode, e: EventIntent): Promise<void> {
    try {
      await this.deps.events.emit(node, e);
      this.deps.log.info('event', { reason: e.reason, message: e.message });
    } catch (err) {
      this.apiError('event', err);
      this.deps.log.warn('event not posted', { reason: e.reason, err });
    }
  }

  private observe(d: PoolDecision): void {
    const { metrics } = this.deps;
    const pool = this.config.poolId;
    if (d.timeToWarmSeconds !== undefined) metrics.timeToWarm.observe({ pool }, d.timeToWarmSeconds);
    metrics.warm.set({ pool }, d.state === 'warm' ? 1 : 0);
    metrics.partial.set({ pool }, d.state === 'partial' ? 1 : 0);
    metrics.imagesTotal.set({ pool }, d.images.length);
    metrics.imagesPresent.set({ pool }, d.images.filter((i) => i.phase === 'present').length);
    metrics.imagesFailing.clear({ pool });
    for (const i of d.images) if (i.phase === 'failing') metrics.imagesFailing.inc({ pool, reason: i.reason ?? 'Unknown' });
    if (this.lastDecision?.state !== d.state) this.deps.log.info('pool state', { state: d.state, images: d.images.length });
    this.lastDecision = d;
  }

  /** The bytes our pod's images pin, from the node this reconcile read anyway: no request of its own. */
  private observePinned(pod: KPod, node: KNode): void {
    const pool = this.config.poolId;
    const pinned = podPinnedBytes(pod, node.status?.images ?? []);
    this.deps.metrics.pinnedBytes.clear({ pool });
    this.deps.metrics.pinnedBytes.set({ pool, complete: String(pinned.complete) }, pinned.bytes);
  }

  private apiError(op: string, e: unknown): void {
    this.deps.metrics.apiErrors.inc({ pool: this.config.poolId, op, code: e instanceof ApiError ? String(e.code) : 'other' });
  }

  /** List our pod by name, then watch it; anything that is not our pod ({@link ownPodProblem}) is ignored. */
  private watchPod(signal: AbortSignal): Promise<void> {
    const { pods, clock } = this.deps;
    const ignored = this.ignoredCounter(WatchName.Pod);
    return this.watchLoop(
      WatchName.Pod,
      async () => {
        const listed = await pods.list();
        if (listed.pod === undefined) throw new ApiError(404, 'the list of our pod is empty', 'NotFound');
        const problem = this.ownPodProblem(listed.pod);
        if (problem !== undefined) throw new ApiError(0, `the list of our pod answered ${problem}`, 'Invalid');
        this.pod = listed.pod;
        return listed.resourceVersion;
      },
      (rv, onEvent) => pods.watch(rv, onEvent, signal),
      (e) => {
        const problem = this.ownPodProblem(e.pod);
        if (problem !== undefined) return void ignored('invalid', problem);
        if (e.type !== 'DELETED') this.pod = e.pod;
        else
          this.pod = {
            ...e.pod,
            metadata: { ...e.pod.metadata, deletionTimestamp: e.pod.metadata.deletionTimestamp ?? new Date(clock.now()).toISOString() },
          };
      },
      signal,
    );
  }

  /** Why `p` cannot be our own pod: a foreign object would have the pool judged from no images, i.e. warm. */
  private ownPodProblem(p: KPod): string | undefined {
    const md = p.metadata;
    const mine = this.config;
    if (md.name !== mine.podName || md.namespace !== mine.podNamespace) return `a pod that is not ours (${md.namespace}/${md.name})`;
    if (p.spec?.nodeName !== mine.nodeName) return `our pod on another node (${p.spec?.nodeName ?? 'none'})`;
    if ((p.spec.containers ?? []).length === 0) return 'our pod without containers';
    return undefined;
  }

  /** List then watch the pool's other pods on this node; pods of other nodes (a broken proxy) and beyond {@link MAX_PEERS} are ignored. */
  private watchPeers(signal: AbortSignal): Promise<void> {
    const source = this.deps.poolPods;
    if (source === undefined) return Promise.resolve();
    const ignored = this.ignoredCounter(WatchName.PoolPods);
    /** Whether `p` may be kept as a peer; counts and reports why not. */
    const admit = (p: KPod): boolean => {
      if (p.metadata.name === this.config.podName) return false;
      if (p.spec?.nodeName !== this.config.nodeName)
        return ignored('other-node', `pod ${p.metadata.name ?? ''} of node ${p.spec?.nodeName ?? 'none'}`);
      return true;
    };
    return this.watchLoop(
      WatchName.PoolPods,
      async () => {
        const listed = await source.list().catch((e: unknown) => {
          // A failed first list must not hold the loop: it goes on from our pod alone, as before.
          if (!this.peersListed) {
            this.peersListed = true;
            this.kick.kick();
          }
          throw e;
        });
        const kept = listed.pods.filter(admit);
        if (kept.length > MAX_PEERS) ignored('over-cap', `${kept.length} pods listed`);
        this.peers = new Map(kept.slice(0, MAX_PEERS).map((p) => [p.metadata.name ?? '', p]));
        this.peersListed = true; // the loop kicks once we return
        return listed.resourceVersion;
      },
      (rv, onEvent) => source.watch(rv, onEvent, signal),
      (e) => {
        const name = e.pod.metadata.name ?? '';
        if (e.type === 'DELETED') return void this.peers.delete(name);
        if (!admit(e.pod)) return void this.peers.delete(name);
        if (!this.peers.has(name) && this.peers.size >= MAX_PEERS) return void ignored('over-cap', `pod ${name}`);
        this.peers.set(name, e.pod);
      },
      signal,
    );
  }

  /** Counts an object a watch ignored, logging the first of each reason; false, for a filter. */
  private ignoredCounter(watch: WatchName): (reason: IgnoredReason, detail: string) => false {
    const logged = new Set<IgnoredReason>();
    return (reason, detail) => {
      this.deps.metrics.watchIgnored.inc({ pool: this.config.poolId, watch, reason });
      if (!logged.has(reason)) {
        logged.add(reason);
        this.deps.log.warn(`${watch} watch: ignored what the apiserver sent (logged once per reason)`, { reason, detail });
      }
      return false;
    };
  }

  /**
   * List, then watch from the list's version, kicking a reconcile per event, as client-go's
   * reflector does: a 410, a failure or a short watch waits with backoff before the next try.
   */
  private async watchLoop(
    what: WatchName,
    relist: () => Promise<string>,
    watch: (rv: string, onEvent: (e: PodWatchEvent) => void) => Promise<void>,
    apply: (e: PodWatchEvent) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const { clock, log, metrics } = this.deps;
    const backoff = new Backoff(this.opts.backoffInitialMs ?? 1000, this.opts.backoffMaxMs ?? 60_000, () => clock.random());
    let rv: string | undefined;
    /** Delayed restarts in a row: the current episode, 0 when healthy. */
    let troubled = 0;
    /** When the last backoff wait began. */
    let backedOffAt = Number.NEGATIVE_INFINITY;
    while (!signal.aborted) {
      let opened: number | undefined;
      let cause: WatchRestart;
      let err: unknown;
      try {
        if (rv === undefined) {
          rv = await relist();
          this.kick.kick();
        }
        opened = clock.now();
        await watch(rv, (e) => {
          rv = e.pod.metadata.resourceVersion ?? rv;
          if (e.type === 'BOOKMARK') return;
          apply(e);
          this.kick.kick();
        });
        cause = WatchRestart.Ended;
      } catch (e) {
        if (signal.aborted) return;
        err = e;
        if (e instanceof ApiError && e.code === 410) {
          rv = undefined;
          cause = WatchRestart.Expired;
        } else {
          this.apiError('watch', e);
          cause = WatchRestart.Error;
        }
      }
      if (signal.aborted) return;
      const ranLong = opened !== undefined && clock.now() - opened >= SHORT_WATCH_MS;
      if (cause !== WatchRestart.Error && !ranLong) cause = WatchRestart.Short;
      metrics.watchRestarts.inc({ pool: this.config.poolId, watch: what, cause });
      if (ranLong && clock.now() - backedOffAt >= BACKOFF_RESET_MS) {
        backoff.reset();
        if (troubled > 0) log.info(`${what} watch healthy again`, { delayedRestarts: troubled });
        troubled = 0;
      }
      if (cause === WatchRestart.Ended) continue;
      const wait = backoff.next();
      backedOffAt = clock.now();
      if (cause !== WatchRestart.Expired || troubled > 0) {
        if (troubled++ === 0)
          log.warn(`${what} watch restarting with backoff (logged once until it recovers)`, { cause, err, retryInMs: wait });
      }
      await clock.sleep(wait, signal);
    }
  }

  /** Removes our label and annotation within {@link CLEANUP_BUDGET_MS}; one left behind is only stale. */
  async cleanup(): Promise<void> {
    if (!this.pod) return;
    const t0 = this.deps.clock.now();
    for (let i = 0; i < 5 && this.deps.clock.now() - t0 < CLEANUP_BUDGET_MS; i++) {
      try {
        await this.reconcile(true);
        this.deps.log.info('cleaned up node label and annotation');
        return;
      } catch (e) {
        this.apiError('cleanup', e);
        this.deps.log.warn('cleanup failed', { err: e, attempt: i + 1 });
        await this.deps.clock.sleep(200 * 2 ** i, new AbortController().signal);
      }
    }
  }
}
