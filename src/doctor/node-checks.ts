/** Doctor's checks of each node: kubelet configuration, pod slots, the gating taint, the sidecars and the disk budget. */
import { SIDECAR_CONTAINER } from '../contract/names.js';
import { excerpt } from '../text/quote.js';
import { PULL_FAILURE_REASONS, statusOf, timeOf, type Pod } from '../contract/pod-status.js';
import { parseQuantity } from '../contract/quantity.js';
import { isHolder, isPuller, poolOf } from '../contract/roles.js';
import { ABSOLUTE_GRACE_SECONDS } from '../contract/gate-key.js';
import { byName, lanesOf, managed, type PoolView } from './pools.js';
import { checkDiskBudget } from './disk-budget.js';
import type { DoctorInput, DoctorNode, KubeletConfig } from './input.js';
import { fixFor, KUBELET_FIX, optionalFix, unread } from './reads.js';
import { Check, type Finding, type Level } from './report.js';

/** The longest message of a kubelet or apiserver that a finding quotes. */
const MAX_REMOTE_CHARS = 300;

/** Kubelet defaults of the fields doctor reads (KubeletConfiguration v1beta1). */
const KUBELET_DEFAULTS = { serializeImagePulls: true, imageGCHighThresholdPercent: 85, imageGCLowThresholdPercent: 80, maxPods: 110 };

/** Every node's checks; the pools on a node are those whose holder runs there. */
export function checkNodes(input: DoctorInput, pools: readonly PoolView[], add: (f: Finding) => void): void {
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
    const budget = checkDiskBudget(
      name,
      node,
      config.kind === 'ok' ? config.value : undefined,
      onNode,
      input.imageFs.get(name),
      input.imageSizes,
    );
    if (budget !== undefined) finding(Check.diskBudget, budget.level, budget.message, budget.fix);
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
    checkEarlyPull(kc, here, finding);
    checkRegisterTaint(kc, here, finding);
  }
}

type NodeFinding = (check: Check, level: Level, message: string, fix?: string) => void;

function checkSidecar(holders: readonly Pod[], finding: NodeFinding): void {
  for (const pod of holders) {
    const c = statusOf(pod, SIDECAR_CONTAINER);
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
    } else if (c.state?.running !== undefined && c.state.running !== null) {
      // Running, not ready: ready waits for its startup probe, which holds back the holder's image
      // containers while the node warms (src/reconciler/pool.ts releasesImages).
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
  const widest = [...here].sort((a, b) => lanesOf(b) - lanesOf(a))[0];
  const lanes = widest === undefined ? 1 : lanesOf(widest);
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

/**
 * Early pulling on this kubelet: with serial pulls the CNI's own image queues behind an early pull,
 * delaying Ready for every workload (an error).
 */
function checkEarlyPull(kc: KubeletConfig, here: readonly PoolView[], finding: NodeFinding): void {
  const serial = kc.serializeImagePulls ?? KUBELET_DEFAULTS.serializeImagePulls;
  const max = kc.maxParallelImagePulls;
  for (const pool of here.filter((p) => p.earlyPull)) {
    const name = `pool ${pool.id} pulls early (spec.earlyPull: true)`;
    if (serial) {
      finding(
        Check.imagePulls,
        'error',
        `${pullMode(kc)}: ${name}, so its pulls run before the node is Ready, one at a time with everything else: the CNI's own image ` +
          'can queue behind an early multi-gigabyte pull (unless the machine image already holds it), and Ready comes only after it',
        `set serializeImagePulls: false in the kubelet configuration (with maxParallelImagePulls above ${lanesOf(pool)}, or unset), ` +
          `or remove spec.earlyPull from the ImageCaches of pool ${pool.id}`,
      );
    } else if (max !== undefined && max <= lanesOf(pool)) {
      finding(
        Check.imagePulls,
        'warning',
        `${pullMode(kc)}: ${name} with ${lanesOf(pool)} pullers, which can take every pull slot before the node is Ready, so the CNI's image waits for one`,
        `raise maxParallelImagePulls above ${lanesOf(pool)}, or lower the pool's lanes`,
      );
    } else {
      finding(Check.imagePulls, 'ok', `${pullMode(kc)}: ${name}, beside the CNI's own pull`);
    }
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
  const pullers = here.reduce((n, p) => n + p.pullers, 0);
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
