/**
 * Which taint keys a pool may gate on, and so which taints a sidecar may ever remove. A spec is
 * untrusted (CI and Argo CD run synth on pull requests), and a gate key is a taint the privileged
 * sidecar strips from nodes, so the spec alone may only choose keys under `prewarm.dev/`, which
 * prewarm owns. Any other key must be allowed by the synth invocation (`--allow-gate-key`,
 * `SynthOptions.allowedGateKeys`), which is trusted. Synthesis checks every pool against this
 * before it renders the sidecar's environment, pools.json or the admission policy; the sidecar
 * checks its own key again at start-up.
 *
 * Pure and dependency-free, like the rest of the contract.
 */
import { DEFAULTS, GROUP } from './names.js';
import { tolerates, type Toleration } from './placement.js';

/** The prefix of the keys a spec may choose without any allowance. */
export const OWN_GATE_KEY_PREFIX = `${GROUP}/`;

/**
 * Domains whose taints belong to Kubernetes or Karpenter (and every subdomain of them): a spec may
 * never pick one on its own. `startup-taint.cluster-autoscaler.kubernetes.io/` lies here too; the
 * cluster autoscaler made it for taints that something else lifts at start-up, so an allowance
 * may open it.
 */
export const RESERVED_GATE_KEY_DOMAINS: readonly string[] = ['kubernetes.io', 'k8s.io', 'karpenter.sh'];

/**
 * Domains of the taints Kubernetes' own components set and lift: the node lifecycle controller and
 * kubelet (`node.kubernetes.io/not-ready`, `unschedulable`, the pressure taints), kubeadm's
 * control-plane taint, and the cloud controller manager's `uninitialized`. Lifting one would put
 * workloads on nodes that are not ready, cordoned or control-plane; no allowance unlocks them, and
 * the sidecar refuses to start with one.
 */
export const KUBERNETES_NODE_TAINT_DOMAINS: readonly string[] = [
  'node.kubernetes.io',
  'node-role.kubernetes.io',
  'node.cloudprovider.kubernetes.io',
];

/**
 * Extra time, past the longest deadline of the pools gating a node, before any sidecar on that
 * node removes the taint regardless of the other pools (doctor reports a taint past it). It is counted from the node's
 * creationTimestamp (immutable), not from Ready (which moves when the node flaps), and has to
 * cover the boot-to-Ready time that the per-pool deadlines (counted from Ready) do not.
 */
export const ABSOLUTE_GRACE_SECONDS = 600;

/**
 * The absolute bound of a gate (ms): `createdMs` (the node's creationTimestamp) plus the longest
 * of `deadlinesSeconds` (the pools gating the node with one key) plus `graceSeconds`. The default
 * deadline stands in when no pool gates the node, so a taint no pool will ever lift still has one.
 * The sidecars enforce it with {@link ABSOLUTE_GRACE_SECONDS}; the fail-safe with its own grace,
 * longer by default, so that where a sidecar runs it always acts first.
 */
export function absoluteBoundAt(createdMs: number, deadlinesSeconds: readonly number[], graceSeconds = ABSOLUTE_GRACE_SECONDS): number {
  const longest = deadlinesSeconds.length === 0 ? DEFAULTS.deadlineSeconds : Math.max(...deadlinesSeconds);
  return createdMs + (longest + graceSeconds) * 1000;
}

/** The effect of the gating taint prewarm documents (`prewarm.dev/warming:NoSchedule`). */
export const GATE_TAINT_EFFECT = 'NoSchedule';

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** Whether `key` is a qualified name as taint keys must be: optional DNS-subdomain prefix, `/`, name. */
export function isQualifiedKey(key: string): boolean {
  const slash = key.indexOf('/');
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) return false;
  return name.length <= 63 && NAME.test(name);
}

/** The domain of a key (`node.kubernetes.io/not-ready` → `node.kubernetes.io`); empty without one. */
function domainOf(key: string): string {
  const slash = key.indexOf('/');
  return slash < 0 ? '' : key.slice(0, slash);
}

function inDomain(domain: string, of: string): boolean {
  return domain === of || domain.endsWith(`.${of}`);
}

/** Whether `key` is one of Kubernetes' own node taints ({@link KUBERNETES_NODE_TAINT_DOMAINS}). */
export function isKubernetesNodeTaint(key: string): boolean {
  const domain = domainOf(key);
  return KUBERNETES_NODE_TAINT_DOMAINS.some((d) => inDomain(domain, d));
}

/** The reserved domain `key` lies in, if any ({@link RESERVED_GATE_KEY_DOMAINS}). */
export function reservedDomainOf(key: string): string | undefined {
  const domain = domainOf(key);
  return RESERVED_GATE_KEY_DOMAINS.find((d) => inDomain(domain, d));
}

/**
 * Why an allowance is not usable, or undefined when it is. An allowance is an exact taint key, or
 * a prefix ending in `/` (`example.com/`), which allows exactly the keys that start with it:
 * `example.com/` does not allow `gpu.example.com/x`.
 */
export function gateKeyAllowanceError(allowance: string): string | undefined {
  const prefix = allowance.endsWith('/');
  const valid = prefix ? DNS_SUBDOMAIN.test(allowance.slice(0, -1)) && allowance.length <= 254 : isQualifiedKey(allowance);
  if (!valid) return 'is neither a taint key (such as example.com/warming) nor a key prefix ending in "/" (such as example.com/)';
  if (isKubernetesNodeTaint(prefix ? `${allowance}x` : allowance)) {
    return `names taints that Kubernetes itself sets and lifts (${KUBERNETES_NODE_TAINT_DOMAINS.join(', ')}); prewarm never lifts them`;
  }
  return undefined;
}

/** Whether an allowance admits `key`: equal to it, or a prefix ending in `/` that it starts with. */
function allows(allowance: string, key: string): boolean {
  return allowance.endsWith('/') ? key.startsWith(allowance) : key === allowance;
}

/**
 * Whether a toleration tolerates the gating taint of `key`, whatever the taint's value: the gate
 * taint is `NoSchedule`, and its value is whatever the node's provisioner writes, so an `Equal`
 * toleration of the key tolerates the gate taint that carries its value. A toleration of another
 * effect does not (core/v1 `ToleratesTaint`).
 */
export function toleratesGateTaint(t: Toleration, key: string): boolean {
  return tolerates(t, { key, effect: GATE_TAINT_EFFECT, ...(t.operator === 'Equal' && t.value !== undefined ? { value: t.value } : {}) });
}

/**
 * Why a pool may not gate on `key`, or undefined when it may.
 * - Kubernetes' own node taints are always refused.
 * - A key outside `prewarm.dev/` needs an allowance; a key under a reserved domain says so.
 * - A key outside `prewarm.dev/` that the pool's own tolerations (as the spec gave them, before
 *   the gate toleration is added) tolerate is always refused: such a taint exists for a reason of
 *   its own (a GPU taint, a dedicated node group), the pool is placed there because of it, and
 *   lifting it would open those nodes to every workload. A toleration of every key counts.
 *   `prewarm.dev/` keys are exempt: prewarm owns that prefix, nothing else taints with it, and the
 *   pool's pods tolerate the gate taint anyway (kube-fledged input, which tolerates every taint,
 *   keeps its default gate this way).
 */
export function gateKeyRefusal(key: string, tolerations: readonly Toleration[], allowed: readonly string[]): string | undefined {
  if (!isQualifiedKey(key)) return `gate taint key "${key}" is not a valid taint key`;
  if (isKubernetesNodeTaint(key)) {
    return `gate taint key "${key}" is a taint that Kubernetes itself sets and lifts; prewarm never removes it, whatever --allow-gate-key says`;
  }
  if (key.startsWith(OWN_GATE_KEY_PREFIX)) return undefined;
  const tolerated = tolerations.find((t) => toleratesGateTaint(t, key));
  if (tolerated !== undefined) {
    const which = tolerated.key === undefined ? 'tolerates every taint' : `tolerates ${describeToleration(tolerated)}`;
    return (
      `the pool ${which}, so gate taint key "${key}" is one it is placed by: lifting it would open those nodes to every workload. ` +
      `Gate on a key of its own (under ${OWN_GATE_KEY_PREFIX}, or one allowed by --allow-gate-key) that no toleration of the pool tolerates`
    );
  }
  if (allowed.some((a) => allows(a, key))) return undefined;
  const reserved = reservedDomainOf(key);
  const why =
    reserved === undefined
      ? `is outside ${OWN_GATE_KEY_PREFIX}, the only keys a spec may choose on its own`
      : `is under ${reserved}, reserved for ${reserved === 'karpenter.sh' ? 'Karpenter' : 'Kubernetes'}`;
  return (
    `gate taint key "${key}" ${why}: the sidecar removes this taint from nodes, so only the synth invocation may allow it ` +
    `(--allow-gate-key ${key}, or a prefix such as --allow-gate-key ${domainOf(key) === '' ? key : `${domainOf(key)}/`})`
  );
}

function describeToleration(t: Toleration): string {
  const value = t.operator === 'Equal' ? `=${t.value ?? ''}` : '';
  return `${t.key ?? ''}${value}${t.effect === undefined ? '' : `:${t.effect}`} (operator ${t.operator})`;
}
