/** The pools as doctor sees them, from their holder DaemonSets and pullers: the view every check of src/doctor/ starts from. */
import { DEFAULTS, HELPER_VOLUME, LABEL_MANAGED_BY, MANAGED_BY, SIDECAR_CONTAINER } from '../contract/names.js';
import { parseSidecarGate, type SidecarGate } from '../contract/sidecar-env.js';
import { runningContainers } from '../contract/pod-status.js';
import { isEarlyPuller, isHolder, isPuller, poolOf } from '../contract/roles.js';
import { compareStrings } from '../contract/order.js';
import type { DoctorDaemonSet, Labels } from './input.js';

/** A pool as doctor sees it, from its holder DaemonSet and its pullers. */
export interface PoolView {
  readonly id: string;
  readonly namespace: string;
  /** Its burst puller DaemonSets (one per lane that has images, and an early pool's lane 0 of the sidecar's image). */
  readonly pullers: number;
  /** Whether its pullers pull early, on the host network before the node is Ready (`spec.earlyPull`). */
  readonly earlyPull: boolean;
  /** Empty: the pool does not gate (or runs no sidecar). */
  readonly gateTaintKey: string;
  readonly deadlineSeconds: number;
  readonly sidecar: boolean;
  readonly pullSecrets: readonly string[];
  /**
   * The sleep binary of its pods: the sleeper of an architecture (src/synth/sleeper.ts), or the
   * busybox the helper init container copies in.
   */
  readonly sleep: { readonly kind: 'sleeper'; readonly arch: string } | { readonly kind: 'helper' };
}

/** Pods pulling a pool's images at once while a node warms: its pullers, or the holder alone. */
export const lanesOf = (pool: PoolView): number => Math.max(1, pool.pullers);

/** Orders objects by name, in code-point order. */
export const byName = <T extends { readonly name: string }>(a: T, b: T): number => compareStrings(a.name, b.name);
/** Whether labels say prewarm manages the object. */
export const managed = (labels: Labels): boolean => labels?.[LABEL_MANAGED_BY] === MANAGED_BY;

/** The gate a sidecar's template environment states; one the sidecar would refuse to start with counts as no gate. */
function sidecarGate(env: readonly { readonly name: string; readonly value?: string | undefined }[]): SidecarGate {
  try {
    return parseSidecarGate(Object.fromEntries(env.map((e) => [e.name, e.value ?? undefined])));
  } catch {
    return { gateTaintKey: '', deadlineSeconds: DEFAULTS.deadlineSeconds };
  }
}

/** The pools of the prewarm DaemonSets: one per holder. */
export function poolsOf(daemonSets: readonly DoctorDaemonSet[]): PoolView[] {
  const pools: PoolView[] = [];
  for (const ds of daemonSets) {
    const labels = ds.metadata?.labels;
    const id = isHolder(labels) ? poolOf(labels) : undefined;
    if (!managed(labels) || id === undefined) continue;
    const namespace = ds.metadata?.namespace ?? '';
    const podSpec = ds.spec?.template?.spec;
    const sidecar = runningContainers(podSpec).find((c) => c.name === SIDECAR_CONTAINER);
    const gate = sidecarGate(sidecar?.env ?? []);
    const pullers = daemonSets.filter(
      (d) => d.metadata?.namespace === namespace && isPuller(d.metadata.labels) && poolOf(d.metadata.labels) === id,
    );
    pools.push({
      id,
      namespace,
      pullers: pullers.length,
      earlyPull: pullers.some((d) => isEarlyPuller(d.metadata?.labels, d.spec?.template?.spec)),
      ...gate,
      sidecar: sidecar !== undefined,
      sleep: sleepOf(podSpec),
      pullSecrets: [...new Set((podSpec?.imagePullSecrets ?? []).flatMap((s) => (s.name ? [s.name] : [])))].sort(),
    });
  }
  return pools.sort((a, b) => compareStrings(`${a.namespace}/${a.id}`, `${b.namespace}/${b.id}`));
}

/** How a pod template gives its image containers a sleep: the sleeper's architecture, or the helper. */
function sleepOf(
  spec: NonNullable<NonNullable<NonNullable<DoctorDaemonSet['spec']>['template']>['spec']> | null | undefined,
): PoolView['sleep'] {
  const arch = spec?.volumes?.find((v) => v.name === HELPER_VOLUME)?.configMap?.items?.[0]?.key;
  return arch === undefined ? { kind: 'helper' } : { kind: 'sleeper', arch };
}

/** `namespace/name` of every pull secret the prewarm DaemonSets name: what the CLI reads for {@link DoctorInput.secrets}. */
export function pullSecretsOf(daemonSets: readonly DoctorDaemonSet[]): string[] {
  return [...new Set(poolsOf(daemonSets).flatMap((p) => p.pullSecrets.map((s) => `${p.namespace}/${s}`)))].sort();
}
