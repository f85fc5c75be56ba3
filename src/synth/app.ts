/**
 * A bundle → a cdk8s App of charts. Pure except for `App.synth()`, which the caller points at a
 * directory of its choosing (the CLI uses a temporary one and moves it into place).
 */
import { ApiObject, App, YamlOutputType, type Chart } from 'cdk8s';
import type { Diagnostic } from '../imagecache/errors.js';
import type { Bundle, Pool } from '../imagecache/model.js';
import { ClusterChart, failsafeNamespace, NamespaceChart } from './charts.js';
import { checkBundleSize } from './budget.js';
import { gateKeyAllowanceError } from '../contract/gate-key.js';
import { checkEarlyPull, checkGateKeys, checkOwnedNamespaces, checkPoolNames, checkPoolSelectors } from './checks.js';
import { settle } from './diagnostics.js';
import { checkNodeMemory } from './memory.js';
import { checkObjectNames, checkSharedObjects, type Manifest } from './output-checks.js';
import { PullDaemonSet } from './pull-daemonset.js';
import { addCheck, diagnosticsOf } from './validation.js';
import { CLUSTER_CHART_ID, namespaceChartId } from './naming.js';
import type { ReconcilerProps } from './pull-daemonset.js';
import type { SleeperArch } from '../contract/names.js';

/** Options of a synth run. */
export interface SynthOptions {
  /**
   * The sidecar reconciler of every pull pod.
   * @default - no sidecar
   */
  readonly reconciler?: ReconcilerProps;
  /**
   * Namespaces prewarm owns. An owned namespace is emitted with Pod Security `restricted`
   * enforced (or, holding a pool with `earlyPull`, `privileged` enforced under an admission policy
   * that holds its pods to restricted and its host-network pods to the early-puller shape: see
   * src/synth/early-pull.ts; such a pool may be in no other namespace), and, like any object in the output, a GitOps prune deletes it with everything in
   * it once no ImageCache names it. Own only namespaces that hold nothing but prewarm's pull pods,
   * such as a dedicated `prewarm`.
   *
   * Every other namespace an ImageCache names is still emitted, so the output applies to a fresh
   * cluster, but bare: no labels, so no Pod Security level is imposed on workloads prewarm knows
   * nothing of (kube-fledged's Jobs, an application's own pods), and annotated so that neither
   * Argo CD nor Flux ever prunes or deletes it. `default`, `kube-system`, `kube-public` and
   * `kube-node-lease` are never emitted, and can never be owned.
   * @default - none: prewarm owns no namespace
   */
  readonly ownedNamespaces?: readonly string[];
  /**
   * Emit a Prometheus Operator PodMonitor (`monitoring.coreos.com/v1`) per namespace for the
   * sidecars' metrics port. Needs `reconciler`, and the Prometheus Operator's CRDs in the cluster.
   * @default false
   */
  readonly podMonitor?: boolean;
  /**
   * Gate taint keys a spec may choose beyond those under `prewarm.dev/`, which are always allowed:
   * each an exact key, or a prefix ending in `/` that admits the keys starting with it (e.g.
   * `startup-taint.cluster-autoscaler.kubernetes.io/`). A gate key is a taint the sidecars remove
   * from nodes, and a spec is untrusted, so only the caller may widen this (as `--allow-gate-key`).
   * Never admitted, whatever is allowed: a key the pool's own tolerations tolerate, and Kubernetes'
   * own node taints (`node.kubernetes.io/`, `node-role.kubernetes.io/`,
   * `node.cloudprovider.kubernetes.io/`). See src/contract/gate-key.ts.
   * @default - none: only `prewarm.dev/` keys
   */
  readonly allowedGateKeys?: readonly string[];
  /**
   * The architecture (`kubernetes.io/arch`) of every node in the cluster, stated by the caller (as
   * `--node-arch`). With it, every pool's pods run the sleeper mounted from a ConfigMap and need no
   * helper init container (src/synth/sleeper.ts); without it, only the pools whose nodeSelector
   * names the architecture do. A pool whose nodeSelector names another architecture keeps that
   * one. A wrong statement leaves the pods of other nodes failing to start (`exec format error`),
   * so the spec never makes it.
   * @default - not stated
   */
  readonly nodeArch?: SleeperArch;
  /**
   * Receives each warning about the output: what the apiserver accepts but a user would regret
   * (see OUTPUT_LIMITS in limits.ts). Errors are thrown instead, as a SpecError.
   * @default - warnings are dropped
   */
  readonly onWarning?: (warning: Diagnostic) => void;
}

/**
 * Adds prewarm's charts for `bundle` to an existing cdk8s App: one without a namespace for
 * cluster-scoped objects, then one per namespace. Charts are added in sorted
 * order, so output is byte-identical for the same bundle.
 *
 * Throws a SpecError, before anything can be written, when the output would be wrong or refused:
 * a gate key the spec may not choose, early pulling outside an owned namespace or without pullers, two pools or two containers sharing a name, an object over
 * the apiserver's size limits, a bundle too large to build in memory (src/synth/budget.ts).
 */
export function addPrewarmCharts(app: App, bundle: Bundle, options: SynthOptions = {}): void {
  if (options.podMonitor === true && options.reconciler === undefined)
    throw new Error('podMonitor needs a reconciler: without the sidecar there are no metrics');
  const allowed = options.allowedGateKeys ?? [];
  for (const allowance of allowed) {
    const invalid = gateKeyAllowanceError(allowance);
    if (invalid !== undefined) throw new Error(`allowedGateKeys: "${allowance}" ${invalid}`);
  }
  const owned = options.ownedNamespaces ?? [];
  settle([
    ...checkBundleSize(bundle),
    ...checkGateKeys(bundle, allowed),
    ...checkPoolSelectors(bundle),
    ...checkPoolNames(bundle, options.reconciler !== undefined),
    ...checkEarlyPull(bundle, owned),
  ]);
  const charts: Chart[] = [
    new ClusterChart(app, CLUSTER_CHART_ID, { bundle, ownedNamespaces: owned, reconciler: options.reconciler !== undefined }),
  ];
  const failsafe = failsafeNamespace(bundle.namespaces, owned);
  for (const namespace of bundle.namespaces) {
    charts.push(
      new NamespaceChart(app, namespaceChartId(namespace), {
        namespace,
        pools: bundle.pools.filter((p) => p.namespace === namespace),
        allPools: bundle.pools,
        ...(options.reconciler === undefined ? {} : { reconciler: options.reconciler }),
        podMonitor: options.podMonitor === true,
        failsafe: namespace === failsafe,
        ...(options.nodeArch === undefined ? {} : { nodeArch: options.nodeArch }),
      }),
    );
  }
  // What no single construct knows, checked over the whole output by the cluster chart; each
  // pull DaemonSet checks itself. cdk8s runs these again at every synth.
  const [cluster] = charts;
  if (cluster !== undefined) addCheck(cluster, () => checkOutput(charts, bundle, owned));
  settle(
    charts.flatMap((c) => diagnosticsOf(c)),
    options.onWarning,
  );
}

/**
 * Checks of the whole output of `charts`: object names unique across it, the objects no pool made
 * (the pools ConfigMap of each namespace alike, once), the memory a warming node's pull pods
 * request, counting every holder and puller, and owned namespaces left without an ImageCache.
 */
function checkOutput(charts: readonly Chart[], bundle: Bundle, owned: readonly string[]): Diagnostic[] {
  const constructs = charts.flatMap((c) => c.node.findAll());
  const daemonSets = constructs.filter((c): c is PullDaemonSet => c instanceof PullDaemonSet);
  const poolOf = new Map<unknown, Pool>(daemonSets.map((ds) => [ApiObject.of(ds.workload), ds.pool]));
  const objects = constructs.filter((c): c is ApiObject => ApiObject.isApiObject(c));
  // A pull DaemonSet renders (and checks) itself; its identity is all that is read of it here.
  const shared = objects.filter((o) => !poolOf.has(o)).map((o) => o.toJson() as Manifest);
  const names = objects.map((o) => ({
    apiVersion: o.apiVersion,
    kind: o.kind,
    metadata: { name: o.name, namespace: o.metadata.namespace },
    pool: poolOf.get(o),
  }));
  return [
    ...checkObjectNames(names),
    ...checkSharedObjects(shared, bundle.pools.length),
    ...checkNodeMemory(daemonSets.map((ds) => ({ pool: ds.pool, bytes: ds.memoryRequest() }))),
    ...checkOwnedNamespaces(bundle, owned),
  ];
}

/**
 * A fresh App holding prewarm's charts. Every App setting that cdk8s would otherwise take from
 * the environment is set explicitly, so the environment cannot change the output.
 */
export function createApp(bundle: Bundle, options: SynthOptions = {}, outdir = 'dist'): App {
  const app = new App({ outdir, yamlOutputType: YamlOutputType.FILE_PER_CHART, recordConstructMetadata: false });
  addPrewarmCharts(app, bundle, options);
  return app;
}

/** The whole bundle as one YAML stream, documents separated by `---`. */
export function synthYaml(bundle: Bundle, options: SynthOptions = {}): string {
  return createApp(bundle, options).synthYaml();
}
