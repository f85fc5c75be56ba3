/**
 * OpenKruise in the benchmarks: built (`harness/cluster/build.sh kruise`, cached by version) and
 * installed on the harness cluster the way its chart installs it (harness/cluster/kruise.ts), and a
 * join whose node runs kruise-daemon from the moment it joins, as a DaemonSet pod would once
 * scheduled (a little sooner: no pod to start).
 */
import { buildComponents } from '../../harness/cluster/build.js';
import { ADMIN_KUBECONFIG } from '../../harness/cluster/cluster.js';
import type { CniStandInOptions } from '../../harness/cluster/cni-stand-in.js';
import { installKruise, startKruiseDaemon, uninstallKruise } from '../../harness/cluster/kruise.js';
import { loadSpec } from '../../harness/cluster/node.js';
import type { NodeTimes, NodeWatch } from '../../harness/nodes.js';
import { join, type KubeletKind } from './cluster.js';
import { log } from './stats.js';

/** Builds OpenKruise if its cache has no build of the pinned version (a cold build takes minutes). */
export function buildKruise(): void {
  const t0 = Date.now();
  buildComponents(['kruise']);
  log(`OpenKruise ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

/** Installs OpenKruise and starts kruise-manager; {@link stopKruise} takes its webhooks away again. */
export async function startKruise(): Promise<void> {
  const t0 = Date.now();
  await installKruise(ADMIN_KUBECONFIG);
  log(`kruise-manager up, webhooks answering (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}

/** Stops kruise-manager and removes its webhooks, so that later configurations run without them. */
export async function stopKruise(): Promise<void> {
  await uninstallKruise(ADMIN_KUBECONFIG);
}

/** {@link join}, then kruise-daemon on the new node. */
export async function joinWithKruise(
  watch: NodeWatch,
  name: string,
  labels: Record<string, string>,
  kubelet: KubeletKind,
  cniStandIn?: CniStandInOptions,
): Promise<NodeTimes> {
  const t = await join(watch, name, labels, kubelet, cniStandIn);
  const spec = loadSpec(name);
  if (!spec) throw new Error(`node ${name} has no spec after joining`);
  startKruiseDaemon(name, spec.index);
  return t;
}
