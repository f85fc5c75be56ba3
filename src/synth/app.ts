/**
 * A bundle → a cdk8s App of charts. Pure except for `App.synth()`, which the caller points at a
 * directory of its choosing (the CLI uses a temporary one and moves it into place).
 */
import { App, YamlOutputType, type Chart } from 'cdk8s';
import type { Diagnostic } from '../imagecache/errors.js';
import type { Bundle } from '../imagecache/model.js';
import { ClusterChart, NamespaceChart } from './charts.js';
import { checkBundleSize } from './budget.js';
import { gateKeyAllowanceError } from '../contract/gate-key.js';
import {
  checkGateKeys,
  checkLimits,
  checkManifestNames,
  checkOwnedNamespaces,
  checkPoolNames,
  checkPoolSelectors,
  settle,
  type Manifest,
} from './checks.js';
import { CLUSTER_CHART_ID, namespaceChartId } from './naming.js';
import type { ReconcilerProps } from './pull-daemonset.js';

/** Options of a synth run. */
export interface SynthOptions {
  /**
   * The sidecar reconciler of every pull pod.
   * @default - no sidecar
   */
  readonly reconciler?: ReconcilerProps;
  /**
   * Namespaces prewarm owns. An owned namespace is emitted with Pod Security `restricted`
   * enforced, and, like any object in the output, a GitOps prune deletes it with everything in
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
   * Receives each warning about the output: what the apiserver accepts but a user would regret
   * (see LIMITS in checks.ts). Errors are thrown instead, as a SpecError.
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
 * a gate key the spec may not choose, two pools or two containers sharing a name, an object over
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
  settle([
    ...checkBundleSize(bundle),
    ...checkGateKeys(bundle, allowed),
    ...checkPoolSelectors(bundle),
    ...checkPoolNames(bundle, options.reconciler !== undefined),
  ]);
  const owned = options.ownedNamespaces ?? [];
  const charts: Chart[] = [
    new ClusterChart(app, CLUSTER_CHART_ID, { bundle, ownedNamespaces: owned, reconciler: options.reconciler !== undefined }),
  ];
  for (const namespace of bundle.namespaces) {
    charts.push(
      new NamespaceChart(app, namespaceChartId(namespace), {
        namespace,
        pools: bundle.pools.filter((p) => p.namespace === namespace),
        allPools: bundle.pools,
        ...(options.reconciler === undefined ? {} : { reconciler: options.reconciler }),
        podMonitor: options.podMonitor === true,
      }),
    );
  }
  const manifests = charts.flatMap((c) => c.toJson() as Manifest[]);
  settle(
    [...checkManifestNames(manifests, bundle), ...checkLimits(manifests, bundle), ...checkOwnedNamespaces(bundle, owned)],
    options.onWarning,
  );
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
