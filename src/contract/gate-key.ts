/**
 * Which taint keys a pool may gate on, and so which taints the sidecar may remove: a spec alone only
 * `prewarm.dev/` keys; any other needs the invocation's `--allow-gate-key`.
 */
import { DEFAULTS, GROUP } from './names.js';
import { tolerates, type Toleration } from './placement.js';

/** The prefix of the keys a spec may choose without any allowance. */
export const OWN_GATE_KEY_PREFIX = `${GROUP}/`;

/** Kubernetes' and Karpenter's domains: only an allowance may name one. */
export const RESERVED_GATE_KEY_DOMAINS: readonly string[] = ['kubernetes.io', 'k8s.io', 'karpenter.sh'];

/** Taints Kubernetes' own components set and lift: lifting one would open unready or cordoned nodes. */
export const KUBERNETES_NODE_TAINT_DOMAINS: readonly string[] = [
  'node.kubernetes.io',
  'node-role.kubernetes.io',
  'node.cloudprovider.kubernetes.io',
];

/** Grace past the longest deadline, from creationTimestamp, before any sidecar lifts the taint (docs/architecture.md). */
export const ABSOLUTE_GRACE_SECONDS = 600;

/** The absolute bound of a gate (ms): creation + longest deadline (or the default) + `graceSeconds`. */
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

/** Why an allowance (an exact key, or a prefix ending in `/`) is not usable, or undefined. */
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

/** Whether a toleration tolerates the `NoSchedule` gate taint of `key`, whatever value the provisioner wrote (core/v1 `ToleratesTaint`). */
export function toleratesGateTaint(t: Toleration, key: string): boolean {
  return tolerates(t, { key, effect: GATE_TAINT_EFFECT, ...(t.operator === 'Equal' && t.value !== undefined ? { value: t.value } : {}) });
}

/**
 * Why a pool may not gate on `key`, or undefined: Kubernetes' own node taints never; a key outside
 * `prewarm.dev/` only with an allowance, and never one the pool itself tolerates (that taint keeps
 * other workloads off for a reason of its own).
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
