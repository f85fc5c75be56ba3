/**
 * The moved-tag refresh: a loop of its own beside the controller's reconciles ({@link Refresher}),
 * and its pure part (which containers may be refreshed, how long to wait between passes).
 * Restarting the one container whose tag moved is the cheapest correct re-pull: no API call, no
 * extra RBAC, the pod and the node's label stay (src/reconciler/README.md, moved tags). Containers
 * under `IfNotPresent` are never restarted: the restart would find the old image under the tag.
 */
import type { KPod } from './kube-types.js';
import type { Metrics } from './metrics.js';
import { digestOf } from './observe.js';
import type { Clock, Logger, Registry, Restarter } from './ports.js';
import { EventReason, RefreshOutcome, type EventIntent } from './reasons.js';

/** A container whose tag can be checked against the registry. */
export interface RefreshCandidate {
  readonly container: string;
  readonly image: string;
  /** Digest of what runs now, from the container's imageID. */
  readonly running: string;
}

/** True for `repo@sha256:…` references: they cannot move. */
export function isDigestPinned(image: string): boolean {
  return image.includes('@');
}

/**
 * Containers of our pod that run a tag under `imagePullPolicy: Always` and report a repo digest.
 * The imageID must be `repo@sha256:…`: a bare `sha256:…` is the runtime's image (config) id,
 * which is not what the registry's manifest digest is compared with.
 */
export function refreshCandidates(pod: KPod, sidecarName: string): { candidates: RefreshCandidate[]; skipped: string[] } {
  const statuses = new Map((pod.status?.containerStatuses ?? []).map((s) => [s.name, s]));
  const candidates: RefreshCandidate[] = [];
  const skipped: string[] = [];
  for (const c of pod.spec?.containers ?? []) {
    if (c.name === sidecarName || !c.image || isDigestPinned(c.image)) continue;
    const s = statuses.get(c.name);
    const running = s?.imageID?.includes('@') ? digestOf(s.imageID) : undefined;
    if (c.imagePullPolicy !== 'Always' || !running) {
      skipped.push(c.name);
      continue;
    }
    candidates.push({ container: c.name, image: c.image, running });
  }
  return { candidates, skipped };
}

/** Delay before the next refresh: the interval plus up to 20% jitter, so nodes do not align. */
export function refreshDelayMs(refreshSeconds: number, random: number): number {
  return Math.round(refreshSeconds * 1000 * (1 + 0.2 * random));
}

/** What the refresh loop talks to. */
export interface RefresherDeps {
  readonly registry: Registry;
  /** Absent: a moved tag is counted and logged, never restarted. */
  readonly restarter?: Restarter;
  readonly clock: Clock;
  readonly log: Logger;
  readonly metrics: Metrics;
  /** Posts an Event about our node; best effort, never rejects. */
  readonly report: (e: EventIntent) => Promise<void>;
  /** Our pod as last observed, undefined until the first GET. */
  readonly pod: () => KPod | undefined;
}

/**
 * The moved-tag refresh of one sidecar: every {@link refreshDelayMs}, compare each tagged
 * container's running digest with the registry's, and restart the containers whose tag moved. It
 * reads our pod from the controller's watch and writes nothing to the apiserver but one Event per
 * restart.
 */
export class Refresher {
  private warnedSkipped = false;

  constructor(
    private readonly deps: RefresherDeps,
    private readonly poolId: string,
    private readonly refreshSeconds: number,
    private readonly sidecarName: string,
  ) {}

  /** Runs passes on the interval until `signal` aborts; the first pass comes after one interval. */
  async run(signal: AbortSignal): Promise<void> {
    const { clock } = this.deps;
    while (!signal.aborted) {
      await clock.sleep(refreshDelayMs(this.refreshSeconds, clock.random()), signal);
      if (signal.aborted || !this.deps.pod()) continue;
      await this.once();
    }
  }

  /** One pass over our pod's tagged containers. */
  async once(): Promise<void> {
    const { registry, restarter, metrics, log } = this.deps;
    const pool = this.poolId;
    const pod = this.deps.pod();
    if (!pod) return;
    const { candidates, skipped } = refreshCandidates(pod, this.sidecarName);
    if (skipped.length) {
      metrics.refreshChecks.inc({ pool, outcome: RefreshOutcome.Skipped }, skipped.length);
      if (!this.warnedSkipped)
        log.warn('refresh skips containers: they need imagePullPolicy Always and a repo digest in imageID', { containers: skipped });
      this.warnedSkipped = true;
    }
    for (const c of candidates) {
      let current: string;
      try {
        current = await registry.digest(c.image);
      } catch (e) {
        metrics.refreshChecks.inc({ pool, outcome: RefreshOutcome.Error });
        log.warn('registry digest check failed', { image: c.image, err: e });
        continue;
      }
      if (current === c.running) {
        metrics.refreshChecks.inc({ pool, outcome: RefreshOutcome.Unchanged });
        continue;
      }
      metrics.refreshChecks.inc({ pool, outcome: RefreshOutcome.Moved });
      const ok = (await restarter?.restart(c.container)) ?? false;
      log.info('tag moved', { image: c.image, running: c.running, registry: current, restarted: ok });
      if (ok) {
        await this.deps.report({
          reason: EventReason.TagMoved,
          message: `pool ${pool}: ${c.image} moved from ${c.running} to ${current}; restarted container ${c.container} to pull it`,
        });
      }
    }
  }
}
