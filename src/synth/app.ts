/**
 * A bundle → a cdk8s App of charts. Pure except for `App.synth()`, which the caller points at a
 * directory of its choosing (the CLI uses a temporary one and moves it into place).
 */
import { App, YamlOutputType, type Chart } from 'cdk8s';
import type { Diagnostic } from '../imagecache/errors.js';
import type { Bundle } from '../imagecache/model.js';
import { ClusterChart, NamespaceChart } from './charts.js';
import { checkOutput, checkPoolNames, settle, type Manifest } from './checks.js';
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
 * Throws a SpecError, before anything can be written, when the output would be wrong: two pools
 * or two containers sharing a name.
 */
export function addPrewarmCharts(app: App, bundle: Bundle, options: SynthOptions = {}): void {
  settle(checkPoolNames(bundle, options.reconciler !== undefined));
  const charts: Chart[] = [new ClusterChart(app, CLUSTER_CHART_ID, { bundle, reconciler: options.reconciler !== undefined })];
  for (const namespace of bundle.namespaces) {
    charts.push(
      new NamespaceChart(app, namespaceChartId(namespace), {
        namespace,
        pools: bundle.pools.filter((p) => p.namespace === namespace),
        allPools: bundle.pools,
        ...(options.reconciler === undefined ? {} : { reconciler: options.reconciler }),
      }),
    );
  }
  checkOutput(
    charts.flatMap((c) => c.toJson() as Manifest[]),
    bundle,
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
