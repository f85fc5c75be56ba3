/** Doctor's pool and cluster checks: pools, apiserver version, admission policy, pull secrets, rollouts. */
import { isSleeperArch, LABEL_NAMESPACE_NAME } from '../contract/names.js';
import { plural } from '../text/plural.js';
import { excerpt } from '../text/quote.js';
import { allStatuses, PULL_FAILURE_REASONS, timeOf, type Pod } from '../contract/pod-status.js';
import { poolOf } from '../contract/roles.js';
import { ACCESS_NAMES } from '../contract/access-names.js';
import { compareStrings } from '../contract/order.js';
import type { ClusterRead, DoctorDaemonSet, DoctorInput, EarlyPullBinding, Labels, ObservedVersion } from './input.js';
import { managed, type PoolView } from './pools.js';
import { fixFor, optionalFix, unread } from './reads.js';
import { Check, type Finding, type Level } from './report.js';

/** Oldest Kubernetes minor the synthesized output works on (see src/synth/access.ts). */
export const MIN_KUBERNETES_MINOR = 30;

/** A rollout is stuck once one of its pods has been unready this long (a Deployment's default deadline). */
export const STUCK_AFTER_SECONDS = 600;

/** Waiting reasons that keep a container from ever starting without someone acting. */
const STUCK_REASONS: ReadonlySet<string> = new Set([
  ...PULL_FAILURE_REASONS,
  'CrashLoopBackOff',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);

/** The longest architecture name a finding quotes (real ones are a few characters: `amd64`). */
const MAX_ARCH_CHARS = 16;

/**
 * The sleeper of each pool against its nodes' architectures: a mismatch cannot start (an error);
 * a helper pool whose nodes all have a sleeper could skip the init container (information).
 */
export function checkSleeper(input: DoctorInput, pools: readonly PoolView[], add: (f: Finding) => void): void {
  if (input.nodes.kind !== 'ok' || pools.length === 0) return;
  // Nodes whose kubelet reports no architecture are left out: neither wrong nor one of a kind.
  const archOf = new Map(
    input.nodes.value.flatMap((n) => {
      const arch = n.status?.nodeInfo?.architecture;
      return arch ? [[n.metadata?.name ?? '', arch] as const] : [];
    }),
  );
  const pods = input.pods.kind === 'ok' ? input.pods.value : [];
  const arches = archOf.size === input.nodes.value.length ? new Set(archOf.values()) : new Set<string>();
  for (const pool of pools) {
    const scope = `pool ${pool.namespace}/${pool.id}`;
    if (pool.sleep.kind === 'helper') {
      const [only] = arches;
      if (arches.size === 1 && only !== undefined && isSleeperArch(only))
        add({
          scope,
          check: Check.sleeper,
          level: 'info',
          message: `its pods copy busybox in with the helper init container, though every node is ${only}`,
          fix: `synth with --node-arch ${only} (or name kubernetes.io/arch in the pool's nodeSelector): its pods then run the sleeper and start without the helper, about 2 s sooner per join`,
        });
      continue;
    }
    const sleeperArch = pool.sleep.arch;
    // Both read from the cluster: quoted short, as anything the cluster sent.
    const arch = excerpt(sleeperArch, MAX_ARCH_CHARS);
    const wrong = [
      ...new Set(
        pods
          .filter((p) => managed(p.metadata?.labels) && p.metadata?.namespace === pool.namespace && poolOf(p.metadata?.labels) === pool.id)
          .map((p) => p.spec?.nodeName ?? '')
          .filter((node) => archOf.has(node) && archOf.get(node) !== sleeperArch),
      ),
    ].sort(compareStrings);
    add(
      wrong.length === 0
        ? { scope, check: Check.sleeper, level: 'ok', message: `its pods run the ${arch} sleeper, on ${arch} nodes only` }
        : {
            scope,
            check: Check.sleeper,
            level: 'error',
            message: `its pods run the ${arch} sleeper, but ${plural(wrong.length, 'node')} of another architecture run${wrong.length === 1 ? 's' : ''} them (${wrong
              .slice(0, 5)
              .map((n) => `${excerpt(n, MAX_ARCH_CHARS * 4)}: ${excerpt(archOf.get(n) ?? '', MAX_ARCH_CHARS)}`)
              .join(', ')}${wrong.length > 5 ? ', …' : ''}): their image containers cannot start (exec format error)`,
            fix: 'synth with the --node-arch of every node, or without --node-arch when the cluster mixes architectures (or name kubernetes.io/arch in the nodeSelector of a pool of one architecture)',
          },
    );
  }
}

/** The minor version as a number: `30+` (some managed clusters) counts as 30. */
export function minorOf(v: ObservedVersion): number | undefined {
  const m = /^(\d+)/.exec(v.minor);
  return v.major === '1' && m ? Number(m[1]) : undefined;
}

/** The apiserver is new enough for the synthesized output. */
export function checkVersion(version: ClusterRead<ObservedVersion>, cluster: (c: Check, l: Level, m: string, f?: string) => void): void {
  if (version.kind !== 'ok') {
    cluster(Check.apiserverVersion, 'unknown', unread('/version', version), fixFor(version, 'grant get on the /version non-resource URL'));
    return;
  }
  const minor = minorOf(version.value);
  if (minor === undefined) {
    cluster(Check.apiserverVersion, 'unknown', `cannot tell the Kubernetes minor version from ${version.value.gitVersion}`);
  } else if (minor < MIN_KUBERNETES_MINOR) {
    cluster(
      Check.apiserverVersion,
      'error',
      `Kubernetes ${version.value.gitVersion}: the synthesized admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and the node-name claim of pod-bound tokens need 1.${MIN_KUBERNETES_MINOR} (and the sidecar, a native sidecar, 1.29)`,
      `upgrade the control plane to 1.${MIN_KUBERNETES_MINOR} or later; until then the policy does not apply and the sidecars' node writes are not narrowed`,
    );
  } else {
    cluster(Check.apiserverVersion, 'ok', `Kubernetes ${version.value.gitVersion}`);
  }
}

/** How to install the admission policies synth writes. */
const APPLY_CLUSTER_OBJECTS =
  'apply prewarm-cluster.k8s.yaml from the same `prewarm synth` output as the pools (server-side, as cluster admin)';
/** What lets doctor read the admission policies. */
const GRANT_POLICY_READ = 'grant get on admissionregistration.k8s.io validatingadmissionpolicies and bindings';

/** The sidecar's admission policy and its binding are in place when a pool runs the sidecar. */
export function checkPolicy(
  input: DoctorInput,
  pools: readonly PoolView[],
  cluster: (c: Check, l: Level, m: string, f?: string) => void,
): void {
  // Without a sidecar (--no-reconciler) nothing writes nodes, and synth emits no policy.
  if (input.daemonSets.kind === 'ok' && !pools.some((p) => p.sidecar)) return;
  const fix = APPLY_CLUSTER_OBJECTS;
  for (const [kind, read] of [
    ['ValidatingAdmissionPolicy', input.policy],
    ['ValidatingAdmissionPolicyBinding', input.policyBinding],
  ] as const) {
    const what = `${kind} ${ACCESS_NAMES.policy}`;
    if (read.kind === 'ok') cluster(Check.admissionPolicy, 'ok', `${what} is installed`);
    else if (read.kind === 'missing')
      cluster(Check.admissionPolicy, 'error', `${what} is not installed: the sidecars may change any label or taint of any node`, fix);
    else cluster(Check.admissionPolicy, 'unknown', unread(what, read), fixFor(read, GRANT_POLICY_READ));
  }
}

/** The namespaces a binding's selector surely selects as synth writes it; undefined for another shape. */
export function boundNamespaces(binding: EarlyPullBinding): ReadonlySet<string> | undefined {
  const sel = binding.spec?.matchResources?.namespaceSelector;
  const exprs = sel?.matchExpressions ?? [];
  if (!sel || Object.keys(sel.matchLabels ?? {}).length > 0 || exprs.length !== 1) return undefined;
  const e = exprs[0];
  return e?.key === LABEL_NAMESPACE_NAME && e.operator === 'In' ? new Set(e.values ?? []) : undefined;
}

/** Where a pool pulls early, the early pullers' admission policy must be installed and bound to its namespace. */
export function checkEarlyPullPolicy(
  input: DoctorInput,
  pools: readonly PoolView[],
  cluster: (c: Check, l: Level, m: string, f?: string) => void,
): void {
  const early = pools.filter((p) => p.earlyPull);
  if (early.length === 0) return;
  const namespaces = [...new Set(early.map((p) => p.namespace))].sort(compareStrings);
  const risk = `namespace${namespaces.length > 1 ? 's' : ''} ${namespaces.join(', ')} enforce${namespaces.length > 1 ? '' : 's'} Pod Security privileged for early pullers, so without it any pod there may run privileged, with host paths, ports or namespaces`;
  const fix = APPLY_CLUSTER_OBJECTS;
  const name = ACCESS_NAMES.earlyPullPolicy;
  const policy = input.earlyPullPolicy;
  if (policy.kind === 'missing')
    cluster(Check.admissionPolicy, 'error', `ValidatingAdmissionPolicy ${name} is not installed: ${risk}`, fix);
  else if (policy.kind !== 'ok')
    cluster(Check.admissionPolicy, 'unknown', unread(`ValidatingAdmissionPolicy ${name}`, policy), fixFor(policy, GRANT_POLICY_READ));
  else cluster(Check.admissionPolicy, 'ok', `ValidatingAdmissionPolicy ${name} is installed`);
  const binding = input.earlyPullPolicyBinding;
  const what = `ValidatingAdmissionPolicyBinding ${name}`;
  if (binding.kind === 'missing') {
    cluster(Check.admissionPolicy, 'error', `${what} is not installed: ${risk}`, fix);
    return;
  }
  if (binding.kind !== 'ok') {
    cluster(Check.admissionPolicy, 'unknown', unread(what, binding), fixFor(binding, GRANT_POLICY_READ));
    return;
  }
  const bound = boundNamespaces(binding.value);
  const uncovered = bound === undefined ? [] : namespaces.filter((n) => !bound.has(n));
  if (bound === undefined)
    cluster(
      Check.admissionPolicy,
      'warning',
      `${what} selects namespaces in a way prewarm does not write; check that it covers ${namespaces.join(', ')}`,
      fix,
    );
  else if (uncovered.length > 0)
    cluster(
      Check.admissionPolicy,
      'error',
      `${what} does not cover namespace${uncovered.length > 1 ? 's' : ''} ${uncovered.join(', ')}, where early pullers run: Pod Security there is privileged and nothing else checks the pods`,
      fix,
    );
  else cluster(Check.admissionPolicy, 'ok', `${what} covers ${namespaces.join(', ')}`);
}

/** Every pull secret a pool names exists in its namespace. */
export function checkSecrets(input: DoctorInput, pools: readonly PoolView[], add: (f: Finding) => void): void {
  for (const pool of pools) {
    for (const name of pool.pullSecrets) {
      const read = input.secrets.get(`${pool.namespace}/${name}`) ?? { kind: 'failed', message: 'not read' };
      const scope = `pool ${pool.namespace}/${pool.id}`;
      if (read.kind === 'ok') add({ scope, check: Check.pullSecret, level: 'ok', message: `pull secret ${name} exists` });
      else if (read.kind === 'missing')
        add({
          scope,
          check: Check.pullSecret,
          level: 'error',
          message: `pull secret ${name} does not exist in namespace ${pool.namespace}: the kubelet pulls without it, and private images fail with ErrImagePull`,
          fix: `kubectl -n ${pool.namespace} create secret docker-registry ${name} --docker-server=… --docker-username=… --docker-password=…`,
        });
      else {
        const fix = fixFor(read, `grant get on secrets in namespace ${pool.namespace}`);
        add({
          scope,
          check: Check.pullSecret,
          level: 'unknown',
          message: unread(`secret ${pool.namespace}/${name}`, read),
          ...optionalFix(fix),
        });
      }
    }
  }
}

function labelsMatch(selector: Labels, labels: Labels): boolean {
  const entries = Object.entries(selector ?? {});
  return entries.length > 0 && entries.every(([k, v]) => labels?.[k] === v);
}

/** Why a pod is not ready: the first stuck waiting reason of its containers, or `not ready`. */
function podTrouble(pod: Pod): { reason: string; stuck: boolean } | undefined {
  if (pod.status?.phase === 'Running' && pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) return undefined;
  for (const c of allStatuses(pod)) {
    const reason = c.state?.waiting?.reason;
    if (reason !== undefined && reason !== null && STUCK_REASONS.has(reason)) return { reason: `${c.name}: ${reason}`, stuck: true };
  }
  const unscheduled = pod.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False');
  return { reason: unscheduled === true ? 'unschedulable' : (pod.status?.phase ?? 'not ready'), stuck: false };
}

/** Each prewarm DaemonSet's rollout: complete, progressing, or stuck on pods that will not become ready. */
export function checkRollouts(
  daemonSets: readonly DoctorDaemonSet[],
  pods: ClusterRead<readonly Pod[]>,
  now: number,
  add: (f: Finding) => void,
): void {
  for (const ds of daemonSets) {
    if (!managed(ds.metadata?.labels)) continue;
    const scope = `daemonset ${ds.metadata?.namespace ?? ''}/${ds.metadata?.name ?? ''}`;
    const s = ds.status ?? {};
    const desired = s.desiredNumberScheduled ?? 0;
    const updated = s.updatedNumberScheduled ?? 0;
    const available = s.numberAvailable ?? 0;
    const observed = (s.observedGeneration ?? 0) >= (ds.metadata?.generation ?? 0);
    const counts = `${updated}/${desired} updated, ${available}/${desired} available`;
    if (observed && updated >= desired && available >= desired) {
      add({ scope, check: Check.rollout, level: 'ok', message: `rolled out: ${counts}` });
      continue;
    }
    if (pods.kind !== 'ok') {
      add({ scope, check: Check.rollout, level: 'info', message: `rolling out: ${counts}; ${unread('pods', pods)}` });
      continue;
    }
    const own = pods.value.filter(
      (p) => p.metadata?.namespace === ds.metadata?.namespace && labelsMatch(ds.spec?.selector?.matchLabels, p.metadata?.labels),
    );
    const troubled = own.flatMap((p) => {
      const t = podTrouble(p);
      if (t === undefined) return [];
      const age = (now - (timeOf(p.metadata?.creationTimestamp) ?? now)) / 1000;
      return t.stuck || age >= STUCK_AFTER_SECONDS ? [`${p.metadata?.name ?? '?'} on ${p.spec?.nodeName ?? 'no node'} (${t.reason})`] : [];
    });
    if (troubled.length === 0) {
      add({ scope, check: Check.rollout, level: 'info', message: `rolling out: ${counts}` });
      continue;
    }
    const shown = troubled.slice(0, 3).join(', ') + (troubled.length > 3 ? ` and ${troubled.length - 3} more` : '');
    add({
      scope,
      check: Check.rollout,
      level: 'error',
      message: `rollout stuck: ${counts}; pods that will not become ready by themselves or have been unready for over ${STUCK_AFTER_SECONDS / 60}m: ${shown}`,
      fix: `kubectl -n ${ds.metadata?.namespace ?? ''} describe pod ${troubled[0]?.split(' ')[0] ?? ''}; a failing image needs fixing in the spec (or \`prewarm pin\`), an unschedulable pod needs room or a toleration`,
    });
  }
}
