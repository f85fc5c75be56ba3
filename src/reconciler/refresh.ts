/**
 * The moved-tag refresh, a loop beside the controller's: when a tag moved, the sidecar sets that
 * container's image in its own pod to `tag@digest`, and the kubelet restarts that container alone
 * (docs/architecture.md, moved tags).
 */
import type { KPod } from './kube-types.js';
import { parseImageID } from '../contract/digest.js';
import { tagOf } from './observe.js';
import type { Clock, Logger, Registry, Restarter } from './ports.js';
import { tagMovedEvent, tagRefreshFailedEvent, type EventIntent } from '../contract/events.js';
import { excerpt } from '../text/quote.js';
import { RefreshOutcome, type Metrics } from './metrics.js';

/** How much of the apiserver's answer a TagRefreshFailed Event quotes. */
const MAX_REFUSAL_CHARS = 400;

/** A container whose tag can be checked against the registry. */
export interface RefreshCandidate {
  readonly container: string;
  /** The tag as written in the spec (`repo:tag`), without any digest the sidecar set. */
  readonly image: string;
  /** Digest of what runs now, from the container's imageID. */
  readonly running: string;
  /** The digest the sidecar last set on the container, if any: asked for, maybe not yet running. */
  readonly requested?: string;
}

/** True for `repo@sha256:…` references: they cannot move. */
export function isDigestPinned(image: string): boolean {
  return image.includes('@');
}

/** `image` pinned to `digest`, keeping its tag: what the sidecar sets to make the kubelet pull it. */
export function pinnedImage(tag: string, digest: string): string {
  return `${tag}@${digest}`;
}

/** Containers of our pod that run a tag under `Always` and report a repo digest (`repo@sha256:…`, not an image id). */
export function refreshCandidates(pod: KPod, sidecarName: string): { candidates: RefreshCandidate[]; skipped: string[] } {
  const statuses = new Map((pod.status?.containerStatuses ?? []).map((s) => [s.name, s]));
  const candidates: RefreshCandidate[] = [];
  const skipped: string[] = [];
  for (const c of pod.spec?.containers ?? []) {
    if (c.name === sidecarName || !c.image) continue;
    const always = c.imagePullPolicy === 'Always';
    // A digest from the spec never moves; one the sidecar set sits beside a tag under Always.
    if (!always && isDigestPinned(c.image)) continue;
    const tag = tagOf(c.image);
    if (tag === undefined) continue;
    const s = statuses.get(c.name);
    const id = parseImageID(s?.imageID);
    const running = id?.repoDigest === undefined ? undefined : id.digest;
    if (!always || !running) {
      skipped.push(c.name);
      continue;
    }
    const requested = isDigestPinned(c.image) ? parseImageID(c.image)?.digest : undefined;
    candidates.push({ container: c.name, image: tag, running, ...(requested === undefined ? {} : { requested }) });
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

/** The moved-tag refresh of one sidecar: restarts the containers whose tag moved, one Event each. */
export class Refresher {
  private warnedSkipped = false;
  /** Per container, the digest it could not be set to and was already reported: one Event each. */
  private readonly reportedFailures = new Map<string, string>();

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

  /** Sets `container` to `image`; the error when the apiserver refused or could not be reached. */
  private async restart(restarter: Restarter, container: string, image: string): Promise<unknown> {
    try {
      await restarter.restart(container, image);
      this.reportedFailures.delete(container);
      return undefined;
    } catch (e) {
      return e ?? new Error('unknown error');
    }
  }

  /** A moved tag the apiserver would not let us pin: a warning each pass, one Warning Event per container and digest. */
  private async refused(c: RefreshCandidate, current: string, image: string, err: unknown): Promise<void> {
    const { log, metrics } = this.deps;
    metrics.refreshChecks.inc({ pool: this.poolId, outcome: RefreshOutcome.RestartFailed });
    log.warn('could not set the image of a container whose tag moved', { container: c.container, image, err });
    if (this.reportedFailures.get(c.container) === current) return;
    this.reportedFailures.set(c.container, current);
    const why = excerpt(err instanceof Error ? err.message : String(err), MAX_REFUSAL_CHARS);
    await this.deps.report(tagRefreshFailedEvent(this.poolId, c.image, current, c.container, why));
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
      // Already asked for: the kubelet is restarting or failing to pull it.
      if (c.requested === current) continue;
      const image = pinnedImage(c.image, current);
      const err = restarter === undefined ? undefined : await this.restart(restarter, c.container, image);
      const ok = restarter !== undefined && err === undefined;
      log.info('tag moved', { image: c.image, running: c.running, registry: current, restarted: ok });
      if (err !== undefined) await this.refused(c, current, image, err);
      else if (ok) await this.deps.report(tagMovedEvent(pool, c.image, c.running, current, c.container, image));
    }
  }
}
