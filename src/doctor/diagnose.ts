/**
 * What `prewarm doctor` finds, computed from what the cluster shows: the apiserver version, the
 * admission policy, the pools' pull secrets and DaemonSet rollouts (./checks.ts), and per node its
 * kubelet configuration (`/configz`), pod slots, gating taint and sidecar (./node-checks.ts).
 * Pure: the CLI reads the objects (each read may be refused, which is reported and never stops the
 * other checks) and renders the findings (./report.ts).
 */
import { compareStrings } from '../contract/order.js';
import { checkEarlyPullPolicy, checkPolicy, checkRollouts, checkSecrets, checkSleeper, checkVersion } from './checks.js';
import { poolsOf } from './pools.js';
import type { DoctorInput } from './input.js';
import { checkNodes } from './node-checks.js';
import { fixFor, optionalFix, unread } from './reads.js';
import { Check, type DoctorReport, type Finding, type Level } from './report.js';

/** Runs every check on what was read. */
export function diagnose(input: DoctorInput): DoctorReport {
  const findings: Finding[] = [];
  const add = (f: Finding): void => void findings.push(f);
  const cluster = (check: Check, level: Level, message: string, fix?: string): void =>
    add({ scope: 'cluster', check, level, message, ...optionalFix(fix) });

  checkVersion(input.version, cluster);

  const pools = input.daemonSets.kind === 'ok' ? poolsOf(input.daemonSets.value) : [];
  if (input.daemonSets.kind !== 'ok') {
    cluster(
      Check.rollout,
      'unknown',
      `${unread('DaemonSets', input.daemonSets)}: no pool checks`,
      fixFor(input.daemonSets, 'grant list on apps/daemonsets'),
    );
  } else if (pools.length === 0) {
    cluster(
      Check.rollout,
      'info',
      'no prewarm pull DaemonSet in the cluster: nothing is warmed yet',
      'apply the output of `prewarm synth`',
    );
  }

  checkPolicy(input, pools, cluster);
  checkEarlyPullPolicy(input, pools, cluster);
  checkSecrets(input, pools, add);
  if (input.daemonSets.kind === 'ok') checkRollouts(input.daemonSets.value, input.pods, input.now, add);
  checkNodes(input, pools, add);
  checkSleeper(input, pools, add);

  const order: Record<string, number> = { cluster: 0, pool: 1, daemonset: 2, node: 3 };
  findings.sort((a, b) => {
    const ka = order[a.scope.split(' ')[0] ?? ''] ?? 9;
    const kb = order[b.scope.split(' ')[0] ?? ''] ?? 9;
    if (ka !== kb) return ka - kb;
    return compareStrings(a.scope, b.scope) || compareStrings(a.check, b.check);
  });
  return {
    findings,
    errors: findings.filter((f) => f.level === 'error').length,
    warnings: findings.filter((f) => f.level === 'warning').length,
    unchecked: findings.filter((f) => f.level === 'unknown').length,
  };
}
