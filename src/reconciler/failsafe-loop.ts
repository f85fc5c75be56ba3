/**
 * The fail-safe's loop: every jittered period, one look, with no retries inside it, so it sends a
 * bounded number of requests per period whatever the apiserver answers.
 */
import { ApiError } from '../http/api-error.js';
import { FAILSAFE_PERIOD_SECONDS } from '../contract/failsafe.js';
import type { PoolsFile } from '../contract/pools-file.js';
import type { KPod } from './kube-types.js';
import { decideReleases, overdueGates } from './failsafe.js';
import type { Clock, EventSink, FailsafeKube, Logger } from './ports.js';

/** The ports of the fail-safe's loop. */
export interface FailsafePorts {
  readonly kube: FailsafeKube;
  readonly events: EventSink;
  readonly clock: Clock;
  readonly log: Logger;
}

/** What one look did, for logs and tests. */
export interface LookResult {
  readonly overdue: number;
  readonly released: readonly string[];
}

/** One look; never rejects. */
export async function look(ports: FailsafePorts, pools: PoolsFile, graceSeconds: number): Promise<LookResult> {
  const { kube, log } = ports;
  let nodes;
  try {
    nodes = await kube.listNodes();
  } catch (e) {
    log.warn('cannot list nodes; looking again next period', { error: e });
    return { overdue: 0, released: [] };
  }
  const overdue = overdueGates(nodes, pools, ports.clock.now(), graceSeconds);
  const holders = new Map<string, readonly KPod[]>();
  for (const o of overdue) {
    const name = o.node.metadata.name ?? '';
    try {
      holders.set(name, await kube.holdersOn(name));
    } catch (e) {
      log.warn('cannot list the holder pods on an overdue node; looking again next period', { node: name, error: e });
    }
  }
  const released: string[] = [];
  for (const r of decideReleases(overdue, holders, ports.clock.now())) {
    let after;
    try {
      after = await kube.patchNode(r.node, r.ops);
    } catch (e) {
      // A failed `test`: the taints changed since the list; the next look sees the node as it is.
      const fields = { node: r.node, key: r.key, error: e };
      if (e instanceof ApiError && (e.code === 409 || e.code === 422))
        log.info('gate taint changed meanwhile; looking again next period', fields);
      else log.warn('gate taint not removed; looking again next period', fields);
      continue;
    }
    released.push(r.node);
    log.warn('gate taint removed: no sidecar runs on the node past its bound', { node: r.node, key: r.key, message: r.event.message });
    await ports.events.emit(after, r.event).catch((e: unknown) => log.warn('event not posted', { node: r.node, error: e }));
  }
  return { overdue: overdue.length, released };
}

/** Looks every period until `signal` aborts, with pools.json as `pools` returns it at each look. */
export async function runFailsafe(ports: FailsafePorts, pools: () => PoolsFile, graceSeconds: number, signal: AbortSignal): Promise<void> {
  const period = FAILSAFE_PERIOD_SECONDS * 1000;
  while (!signal.aborted) {
    await look(ports, pools(), graceSeconds);
    // Jitter, so that two fail-safes of a rollout's overlap do not look in step.
    await ports.clock.sleep(period * (0.9 + 0.2 * ports.clock.random()), signal);
  }
}
