/**
 * What `prewarm doctor` finds, computed from what the cluster shows: the apiserver version, the
 * admission policy, the pools' pull secrets and DaemonSet rollouts, and per node its kubelet
 * configuration (`/configz`), pod slots, gating taint and sidecar. Pure: the CLI reads the objects
 * (each read may be refused, which is reported and never stops the other checks) and renders the
 * findings.
 */
import { DEFAULTS, ENV, LABEL_MANAGED_BY, MANAGED_BY, SIDECAR_CONTAINER } from '../contract/names.js';
import { PULL_FAILURE_REASONS, timeOf, type Pod } from '../contract/pod-status.js';
import { isHolder, isPuller, poolOf } from '../contract/roles.js';
import { ABSOLUTE_GRACE_SECONDS } from '../reconciler/gate.js';
import { ACCESS_NAMES } from '../synth/access.js';
import { table } from '../status/report.js';
import { excerpt, plural } from '../imagecache/errors.js';
import { compareStrings } from '../contract/order.js';
import { parseQuantity } from '../contract/quantity.js';

type Opt<T> = T | undefined;
type Labels = Opt<Readonly<Record<string, string>>>;

/**
 * One read from the cluster: the object, or why there is none. `denied` (401/403) is the user's
 * missing permission, reported as such; `missing` is a 404; `failed` is anything else.
 */
export type ClusterRead<T> =
  | { readonly kind: 'ok'; readonly value: T }
  | { readonly kind: 'missing' }
  | { readonly kind: 'denied'; readonly message: string }
  | { readonly kind: 'failed'; readonly message: string };

/** The apiserver's `/version`. */
export interface ObservedVersion {
  readonly major: string;
  /** As the apiserver says it: `36`, or `30+` on some managed clusters. */
  readonly minor: string;
  readonly gitVersion: string;
}

/** The fields of a container (template) that doctor reads. */
interface ObservedContainer {
  readonly name: string;
  readonly image?: Opt<string>;
  readonly env?: Opt<readonly { readonly name: string; readonly value?: Opt<string> }[]>;
}

/** The fields of a DaemonSet that doctor reads (client-node's V1DaemonSet fits). */
export interface DoctorDaemonSet {
  readonly metadata?: Opt<{
    readonly name?: Opt<string>;
    readonly namespace?: Opt<string>;
    readonly labels?: Labels;
    readonly generation?: Opt<number>;
  }>;
  readonly spec?: Opt<{
    readonly selector?: Opt<{ readonly matchLabels?: Labels }>;
    readonly template?: Opt<{
      readonly spec?: Opt<{
        readonly containers?: Opt<readonly ObservedContainer[]>;
        readonly imagePullSecrets?: Opt<readonly { readonly name?: Opt<string> }[]>;
      }>;
    }>;
  }>;
  readonly status?: Opt<{
    readonly desiredNumberScheduled?: Opt<number>;
    readonly updatedNumberScheduled?: Opt<number>;
    readonly numberAvailable?: Opt<number>;
    readonly observedGeneration?: Opt<number>;
  }>;
}

/** The fields of a node that doctor reads (client-node's V1Node fits). */
export interface DoctorNode {
  readonly metadata?: Opt<{ readonly name?: Opt<string>; readonly creationTimestamp?: Opt<Date | string> }>;
  readonly spec?: Opt<{ readonly taints?: Opt<readonly { readonly key: string; readonly effect?: Opt<string> }[]> }>;
  readonly status?: Opt<{
    readonly capacity?: Opt<Readonly<Record<string, string>>>;
    readonly allocatable?: Opt<Readonly<Record<string, string>>>;
    readonly images?: Opt<readonly { readonly sizeBytes?: Opt<number> }[]>;
  }>;
}

/** The KubeletConfiguration fields doctor reads, as `/configz` returns them (`kubeletconfig`). */
export interface KubeletConfig {
  readonly serializeImagePulls?: boolean;
  readonly maxParallelImagePulls?: number;
  readonly imageGCHighThresholdPercent?: number;
  readonly imageGCLowThresholdPercent?: number;
  readonly maxPods?: number;
  readonly registerWithTaints?: readonly { readonly key: string; readonly effect?: string }[];
}

/** Everything doctor looked at. Secrets and kubelet configs are read for what the rest names. */
export interface DoctorInput {
  /** Milliseconds since the epoch, when the cluster was read. */
  readonly now: number;
  readonly version: ClusterRead<ObservedVersion>;
  readonly policy: ClusterRead<unknown>;
  readonly policyBinding: ClusterRead<unknown>;
  /** DaemonSets labelled `app.kubernetes.io/managed-by: prewarm`, holders and pullers. */
  readonly daemonSets: ClusterRead<readonly DoctorDaemonSet[]>;
  /** Every pod that is neither Succeeded nor Failed, in every namespace. */
  readonly pods: ClusterRead<readonly Pod[]>;
  readonly nodes: ClusterRead<readonly DoctorNode[]>;
  /** By `namespace/name`, for each name {@link pullSecretsOf} returns. */
  readonly secrets: ReadonlyMap<string, ClusterRead<unknown>>;
  /** By node name. */
  readonly kubeletConfigs: ReadonlyMap<string, ClusterRead<KubeletConfig>>;
}

/**
 * How bad a finding is. `unknown`: the check could not run (not allowed, or the apiserver or
 * kubelet failed to answer); it is never a pass.
 */
export type Level = 'ok' | 'info' | 'unknown' | 'warning' | 'error';

/** The checks doctor runs; a fixed set, so scripts can select on them. */
export const Check = {
  apiserverVersion: 'apiserver-version',
  admissionPolicy: 'admission-policy',
  pullSecret: 'pull-secret',
  rollout: 'rollout',
  kubeletConfig: 'kubelet-config',
  imagePulls: 'image-pulls',
  imageGc: 'image-gc',
  podSlots: 'pod-slots',
  registerTaint: 'register-taint',
  gateTaint: 'gate-taint',
  reconcilerImage: 'reconciler-image',
} as const;
/** One of {@link Check}. */
export type Check = (typeof Check)[keyof typeof Check];

/** One finding: what was checked where, what was seen, and how to fix it when it is a problem. */
export interface Finding {
  /** `cluster`, `pool <namespace>/<id>`, `daemonset <namespace>/<name>` or `node <name>`. */
  readonly scope: string;
  readonly check: Check;
  readonly level: Level;
  readonly message: string;
  readonly fix?: string;
}

/** The whole report. */
export interface DoctorReport {
  /** Sorted: cluster first, then by scope and check. */
  readonly findings: readonly Finding[];
  readonly errors: number;
  readonly warnings: number;
  /** Findings of level `unknown`: checks that could not run. */
  readonly unchecked: number;
}

/** Oldest Kubernetes minor the synthesized output works on (see src/synth/access.ts). */
export const MIN_KUBERNETES_MINOR = 30;

/**
 * A DaemonSet whose rollout is incomplete is called stuck once one of its pods has been unready
 * this long (DaemonSets have no progressDeadlineSeconds; this is a Deployment's default).
 */
export const STUCK_AFTER_SECONDS = 600;

/** Waiting reasons that keep a container from ever starting without someone acting. */
const STUCK_REASONS: ReadonlySet<string> = new Set([
  ...PULL_FAILURE_REASONS,
  'CrashLoopBackOff',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);

/** Kubelet defaults of the fields doctor reads (KubeletConfiguration v1beta1). */
const KUBELET_DEFAULTS = { serializeImagePulls: true, imageGCHighThresholdPercent: 85, imageGCLowThresholdPercent: 80, maxPods: 110 };

/** A pool as doctor sees it, from its holder DaemonSet and its pullers. */
interface PoolView {
  readonly id: string;
  readonly namespace: string;
  /** 1 + its burst puller DaemonSets. */
  readonly lanes: number;
  /** Empty: the pool does not gate (or runs no sidecar). */
  readonly gateTaintKey: string;
  readonly deadlineSeconds: number;
  readonly sidecar: boolean;
  readonly pullSecrets: readonly string[];
}

const byName = <T extends { readonly name: string }>(a: T, b: T): number => compareStrings(a.name, b.name);
const managed = (labels: Labels): boolean => labels?.[LABEL_MANAGED_BY] === MANAGED_BY;

/** The pools of the prewarm DaemonSets: one per holder. */
function poolsOf(daemonSets: readonly DoctorDaemonSet[]): PoolView[] {
  const pools: PoolView[] = [];
  for (const ds of daemonSets) {
    const labels = ds.metadata?.labels;
    const id = isHolder(labels) ? poolOf(labels) : undefined;
    if (!managed(labels) || id === undefined) continue;
    const namespace = ds.metadata?.namespace ?? '';
    const podSpec = ds.spec?.template?.spec;
    const sidecar = podSpec?.containers?.find((c) => c.name === SIDECAR_CONTAINER);
    const env = (name: string): string | undefined => sidecar?.env?.find((e) => e.name === name)?.value ?? undefined;
    const pullers = daemonSets.filter(
      (d) => d.metadata?.namespace === namespace && isPuller(d.metadata.labels) && poolOf(d.metadata.labels) === id,
    ).length;
    pools.push({
      id,
      namespace,
      lanes: 1 + pullers,
      gateTaintKey: env(ENV.gateTaintKey) ?? '',
      deadlineSeconds: Number(env(ENV.deadlineSeconds) ?? DEFAULTS.deadlineSeconds) || DEFAULTS.deadlineSeconds,
      sidecar: sidecar !== undefined,
      pullSecrets: [...new Set((podSpec?.imagePullSecrets ?? []).flatMap((s) => (s.name ? [s.name] : [])))].sort(),
    });
  }
  return pools.sort((a, b) => compareStrings(`${a.namespace}/${a.id}`, `${b.namespace}/${b.id}`));
}

/** `namespace/name` of every pull secret the prewarm DaemonSets name: what the CLI reads for {@link DoctorInput.secrets}. */
export function pullSecretsOf(daemonSets: readonly DoctorDaemonSet[]): string[] {
  return [...new Set(poolsOf(daemonSets).flatMap((p) => p.pullSecrets.map((s) => `${p.namespace}/${s}`)))].sort();
}

/** The one-line reason a read gave nothing, for a finding of level `unknown`. */
function unread(what: string, r: Exclude<ClusterRead<unknown>, { kind: 'ok' }>): string {
  if (r.kind === 'missing') return `${what} not found; skipped`;
  return r.kind === 'denied' ? `not allowed to read ${what} (${r.message}); skipped` : `could not read ${what}: ${r.message}; skipped`;
}

/** What to do about a failed read that is not the user's permission. */
const APISERVER_FIX =
  "the apiserver failed to answer (not a permission problem): check its health with `kubectl get --raw='/readyz?verbose'` and run doctor again";

/** What to do about a failed read through a node's proxy: the kubelet did not answer well. */
const KUBELET_FIX =
  'the kubelet did not answer through the node proxy (not a permission problem): check that the node is Ready and its kubelet runs (`kubectl describe node NAME`), then run doctor again';

/**
 * The advice for a read that gave nothing, matching why: the missing permission (`grant`) for a
 * refusal, `failure` when the apiserver or kubelet failed, none for a 404.
 */
function fixFor(r: Exclude<ClusterRead<unknown>, { kind: 'ok' }>, grant: string, failure: string = APISERVER_FIX): string | undefined {
  if (r.kind === 'missing') return undefined;
  return r.kind === 'denied' ? grant : failure;
}

/** `{fix}` when there is one: a finding has no `fix` field rather than an undefined one. */
function optionalFix(fix: string | undefined): { fix?: string } {
  return fix === undefined ? {} : { fix };
}

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
  checkSecrets(input, pools, add);
  if (input.daemonSets.kind === 'ok') checkRollouts(input.daemonSets.value, input.pods, input.now, add);
  checkNodes(input, pools, add);

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

/** The minor version as a number: `30+` (some managed clusters) counts as 30. */
export function minorOf(v: ObservedVersion): number | undefined {
  const m = /^(\d+)/.exec(v.minor);
  return v.major === '1' && m ? Number(m[1]) : undefined;
}

function checkVersion(version: ClusterRead<ObservedVersion>, cluster: (c: Check, l: Level, m: string, f?: string) => void): void {
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
      `Kubernetes ${version.value.gitVersion}: the synthesized admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and the node-name claim of pod-bound tokens need 1.${MIN_KUBERNETES_MINOR}`,
      `upgrade the control plane to 1.${MIN_KUBERNETES_MINOR} or later; until then the policy does not apply and the sidecars' node writes are not narrowed`,
    );
  } else {
    cluster(Check.apiserverVersion, 'ok', `Kubernetes ${version.value.gitVersion}`);
  }
}

function checkPolicy(input: DoctorInput, pools: readonly PoolView[], cluster: (c: Check, l: Level, m: string, f?: string) => void): void {
  // Without a sidecar (--no-reconciler) nothing writes nodes, and synth emits no policy.
  if (input.daemonSets.kind === 'ok' && !pools.some((p) => p.sidecar)) return;
  const fix = 'apply prewarm-cluster.k8s.yaml from the same `prewarm synth` output as the pools (server-side, as cluster admin)';
  for (const [kind, read] of [
    ['ValidatingAdmissionPolicy', input.policy],
    ['ValidatingAdmissionPolicyBinding', input.policyBinding],
  ] as const) {
    const what = `${kind} ${ACCESS_NAMES.policy}`;
    if (read.kind === 'ok') cluster(Check.admissionPolicy, 'ok', `${what} is installed`);
    else if (read.kind === 'missing')
      cluster(Check.admissionPolicy, 'error', `${what} is not installed: the sidecars may change any label or taint of any node`, fix);
    else
      cluster(
        Check.admissionPolicy,
        'unknown',
        unread(what, read),
        fixFor(read, 'grant get on admissionregistration.k8s.io validatingadmissionpolicies and bindings'),
      );
  }
}

function checkSecrets(input: DoctorInput, pools: readonly PoolView[], add: (f: Finding) => void): void {
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
  for (const c of pod.status?.containerStatuses ?? []) {
    const reason = c.state?.waiting?.reason;
    if (reason !== undefined && reason !== null && STUCK_REASONS.has(reason)) return { reason: `${c.name}: ${reason}`, stuck: true };
  }
  const unscheduled = pod.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False');
  return { reason: unscheduled === true ? 'unschedulable' : (pod.status?.phase ?? 'not ready'), stuck: false };
}

function checkRollouts(
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

function checkNodes(input: DoctorInput, pools: readonly PoolView[], add: (f: Finding) => void): void {
  if (input.nodes.kind !== 'ok') {
    add({
      scope: 'cluster',
      check: Check.kubeletConfig,
      level: 'unknown',
      message: `${unread('nodes', input.nodes)}: no node checks`,
      ...optionalFix(fixFor(input.nodes, 'grant list on nodes')),
    });
    return;
  }
  const pods = input.pods.kind === 'ok' ? input.pods.value : undefined;
  if (input.pods.kind !== 'ok')
    add({
      scope: 'cluster',
      check: Check.podSlots,
      level: 'unknown',
      message: `${unread('pods in every namespace', input.pods)}: no pod slot, gate or sidecar checks`,
      ...optionalFix(fixFor(input.pods, 'grant list on pods in every namespace')),
    });
  const nodes = input.nodes.value.map((n) => ({ name: n.metadata?.name ?? '', node: n })).sort(byName);
  for (const { name, node } of nodes) {
    const scope = `node ${name}`;
    const finding = (check: Check, level: Level, message: string, fix?: string): void =>
      add({ scope, check, level, message, ...optionalFix(fix) });
    const onNode = (pods ?? []).filter((p) => p.spec?.nodeName === name);
    // The pools on this node: those whose holder runs here.
    const holders = onNode.filter((p) => managed(p.metadata?.labels) && isHolder(p.metadata?.labels));
    const here = pools.filter((pool) =>
      holders.some((h) => h.metadata?.namespace === pool.namespace && poolOf(h.metadata?.labels) === pool.id),
    );
    checkSidecar(holders, finding);
    checkGateTaint(node, here.length > 0 ? here : pools, input.now, finding);
    const config = input.kubeletConfigs.get(name) ?? { kind: 'failed', message: 'not read' };
    if (config.kind !== 'ok') {
      finding(
        Check.kubeletConfig,
        'unknown',
        unread('the kubelet configuration (/configz)', config),
        fixFor(config, 'grant get on nodes/proxy to read /api/v1/nodes/NAME/proxy/configz', KUBELET_FIX),
      );
      checkPodSlots(node, undefined, onNode, here, pods !== undefined, finding);
      continue;
    }
    const kc = config.value;
    checkImageGc(kc, node, finding);
    checkPodSlots(node, kc, onNode, here, pods !== undefined, finding);
    if (pods === undefined) {
      // Which pools run here is read from the pods: without them, only the settings are shown.
      finding(Check.imagePulls, 'info', `${pullMode(kc)}; the pools on this node are unknown (pods not readable)`);
      continue;
    }
    checkImagePulls(kc, here, finding);
    checkRegisterTaint(kc, here, finding);
  }
}

type NodeFinding = (check: Check, level: Level, message: string, fix?: string) => void;

function checkSidecar(holders: readonly Pod[], finding: NodeFinding): void {
  for (const pod of holders) {
    const c = pod.status?.containerStatuses?.find((x) => x.name === SIDECAR_CONTAINER);
    const reason = c?.state?.waiting?.reason;
    if (c === undefined) continue;
    const where = `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
    if (reason !== undefined && reason !== null && PULL_FAILURE_REASONS.has(reason)) {
      const message = c.state?.waiting?.message;
      finding(
        Check.reconcilerImage,
        'error',
        `the reconciler image ${c.image ?? ''} cannot be pulled here (${where}: ${reason}${message ? `: ${excerpt(message, MAX_REMOTE_CHARS)}` : ''}): nothing marks this node warm, and its gating taint stays`,
        "check --reconciler-image, that nodes reach its registry, and the pool's imagePullSecrets; then the DaemonSet retries by itself",
      );
    } else if (c.ready === true) {
      finding(Check.reconcilerImage, 'ok', `reconciler running in ${where}`);
    }
  }
}

function checkGateTaint(node: DoctorNode, pools: readonly PoolView[], now: number, finding: NodeFinding): void {
  const keys = new Set(pools.map((p) => p.gateTaintKey).filter((k) => k !== ''));
  const created = timeOf(node.metadata?.creationTimestamp);
  for (const taint of node.spec?.taints ?? []) {
    if (!keys.has(taint.key) || created === undefined) continue;
    // The bound every sidecar on the node enforces (src/reconciler/gate.ts): creation + longest
    // deadline of the pools gating with this key + the absolute grace.
    const longest = Math.max(...pools.filter((p) => p.gateTaintKey === taint.key).map((p) => p.deadlineSeconds));
    const bound = created + (longest + ABSOLUTE_GRACE_SECONDS) * 1000;
    const past = Math.round((now - bound) / 1000);
    if (past > 0) {
      finding(
        Check.gateTaint,
        'error',
        `gating taint ${taint.key} is still on the node ${past}s past its absolute bound (created + ${longest}s deadline + ${ABSOLUTE_GRACE_SECONDS}s grace): no sidecar on this node is acting`,
        `see the reconciler-image and rollout findings; \`kubectl taint node NAME ${taint.key}-\` lets workloads in now`,
      );
    } else {
      finding(Check.gateTaint, 'info', `gating taint ${taint.key} is on the node; the sidecars remove it at the latest in ${-past}s`);
    }
  }
}

/** How the kubelet pulls, in words. */
function pullMode(kc: KubeletConfig): string {
  return (kc.serializeImagePulls ?? KUBELET_DEFAULTS.serializeImagePulls)
    ? 'serializeImagePulls: true (one pull at a time)'
    : `parallel pulls (maxParallelImagePulls: ${kc.maxParallelImagePulls ?? 'unlimited'})`;
}

function checkImagePulls(kc: KubeletConfig, here: readonly PoolView[], finding: NodeFinding): void {
  const serial = kc.serializeImagePulls ?? KUBELET_DEFAULTS.serializeImagePulls;
  const max = kc.maxParallelImagePulls;
  const widest = [...here].sort((a, b) => b.lanes - a.lanes)[0];
  const lanes = widest?.lanes ?? 1;
  const mode = pullMode(kc);
  if (lanes > 1 && serial) {
    finding(
      Check.imagePulls,
      'warning',
      `${mode}: pool ${widest?.id ?? ''} has ${lanes} lanes, which here overlap container starts with pulls but never pull in parallel`,
      `set serializeImagePulls: false (and maxParallelImagePulls >= ${lanes}) in the kubelet configuration, or use lanes: 1 for pools on such nodes`,
    );
  } else if (lanes > 1 && max !== undefined && max < lanes) {
    finding(
      Check.imagePulls,
      'warning',
      `${mode}: pool ${widest?.id ?? ''} has ${lanes} lanes, so at most ${max} of them pull at once`,
      `raise maxParallelImagePulls to ${lanes} or more, or lower lanes`,
    );
  } else {
    finding(
      Check.imagePulls,
      lanes > 1 ? 'ok' : 'info',
      `${mode}${lanes > 1 ? `; ${lanes} lanes pull in parallel here` : '; no pool with lanes here'}`,
    );
  }
}

const gib = (b: number): string => `${(b / 2 ** 30).toFixed(1)} GiB`;

function checkImageGc(kc: KubeletConfig, node: DoctorNode, finding: NodeFinding): void {
  const high = kc.imageGCHighThresholdPercent ?? KUBELET_DEFAULTS.imageGCHighThresholdPercent;
  const low = kc.imageGCLowThresholdPercent ?? KUBELET_DEFAULTS.imageGCLowThresholdPercent;
  const capacity = node.status?.capacity?.['ephemeral-storage'];
  const disk = capacity === undefined ? undefined : parseQuantity(capacity);
  // The kubelet lists at most nodeStatusMaxImages (50 by default) images: a lower bound.
  const images = (node.status?.images ?? []).reduce((n, i) => n + (i.sizeBytes ?? 0), 0);
  const thresholds = `image GC from ${high}% down to ${low}% of the image disk`;
  if (high >= 100) {
    finding(Check.imageGc, 'info', `${thresholds}: image GC is off`);
  } else if (disk !== undefined && images >= (disk * high) / 100) {
    finding(
      Check.imageGc,
      'warning',
      `${thresholds}; images take at least ${gib(images)} of ${gib(disk)}: GC runs, and removes every image no container uses (pooled images stay, others are re-pulled)`,
      'give nodes a larger image disk, or cache fewer images per node',
    );
  } else {
    finding(Check.imageGc, 'ok', `${thresholds}${disk === undefined ? '' : `; images take at least ${gib(images)} of ${gib(disk)}`}`);
  }
}

function checkPodSlots(
  node: DoctorNode,
  kc: KubeletConfig | undefined,
  onNode: readonly Pod[],
  here: readonly PoolView[],
  podsRead: boolean,
  finding: NodeFinding,
): void {
  if (!podsRead) return;
  const allocatable = Number(node.status?.allocatable?.['pods']);
  const maxPods = kc?.maxPods ?? (Number.isFinite(allocatable) && allocatable > 0 ? allocatable : KUBELET_DEFAULTS.maxPods);
  const used = onNode.length;
  // Pullers are created while a node warms; those already here hold their slot.
  const present = onNode.filter((p) => managed(p.metadata?.labels) && isPuller(p.metadata?.labels)).length;
  const pullers = here.reduce((n, p) => n + p.lanes - 1, 0);
  const need = Math.max(0, pullers - present);
  const free = maxPods - used;
  const counts = `${used} of ${maxPods} pod slots used`;
  if (need > free) {
    finding(
      Check.podSlots,
      'warning',
      `${counts}: the burst pullers need ${need} more while the node warms, and those that do not fit stay Pending (warm-up is then as slow as lanes: 1)`,
      'raise maxPods (and the pod IPs the CNI gives a node), or lower lanes',
    );
  } else {
    // Said the same way whether or not pullers are here now (a warm node's leave within seconds).
    finding(Check.podSlots, 'ok', pullers > 0 ? `${counts}; room for the ${pullers} burst pullers of a warm-up` : counts);
  }
}

function checkRegisterTaint(kc: KubeletConfig, here: readonly PoolView[], finding: NodeFinding): void {
  const keys = [...new Set(here.map((p) => p.gateTaintKey).filter((k) => k !== ''))].sort();
  const registered = new Set((kc.registerWithTaints ?? []).map((t) => t.key));
  for (const key of keys) {
    if (registered.has(key)) finding(Check.registerTaint, 'ok', `the kubelet registers the node with the gating taint ${key}`);
    else
      finding(
        Check.registerTaint,
        'warning',
        `the kubelet registers the node without the gating taint ${key}: unless something else taints it at creation, workloads land before its images are warm`,
        `add {key: ${key}, effect: NoSchedule} to registerWithTaints (--register-with-taints=${key}:NoSchedule), e.g. in the node group's taints`,
      );
  }
}

/** The longest message of a kubelet or apiserver that a finding quotes. */
const MAX_REMOTE_CHARS = 300;

/** The longest table cell: a last bound for names and messages read from the cluster. */
const MAX_CELL_CHARS = 1000;

/** `1 error, 2 warnings, 3 checks could not run`: the counts a run ends with. */
export function summary(report: DoctorReport): string {
  const counts = [plural(report.errors, 'error'), plural(report.warnings, 'warning')];
  if (report.unchecked > 0) counts.push(`${plural(report.unchecked, 'check')} could not run`);
  return counts.join(', ');
}

/** Output formats of `prewarm doctor`. */
export type DoctorFormat = 'table' | 'wide' | 'json';

/**
 * Renders the report as a table of findings, then how to fix each problem. Without `wide`, `ok`
 * and `info` findings are counted, not listed.
 */
export function renderDoctorTable(report: DoctorReport, wide: boolean): string {
  const shown = report.findings.filter((f) => wide || !(f.level === 'ok' || f.level === 'info'));
  // Names and messages come from the cluster: each cell is one line without terminal escapes.
  const cell = (text: string): string => excerpt(text, MAX_CELL_CHARS);
  const rows = [['LEVEL', 'SCOPE', 'CHECK', 'FINDING'], ...shown.map((f) => [f.level, cell(f.scope), f.check, cell(f.message)])];
  const hidden = report.findings.length - shown.length;
  let out = shown.length > 0 ? table(rows) : '';
  if (hidden > 0) out += `${shown.length > 0 ? '\n' : ''}${hidden} checks passed or are informational (-o wide lists them)\n`;
  const fixes = shown.filter((f) => f.fix !== undefined && (f.level === 'error' || f.level === 'warning' || f.level === 'unknown'));
  if (fixes.length > 0) out += `\nTo fix:\n${fixes.map((f) => `  ${cell(f.scope)} ${f.check}: ${cell(f.fix ?? '')}\n`).join('')}`;
  out += `\n${summary(report)}\n`;
  return out;
}
