/** A bundle → a cdk8s App of charts. Pure except for `App.synth()`, into the caller's directory. */
import { ApiObject, App, YamlOutputType, type Chart } from 'cdk8s';
import type { Diagnostic } from '../imagecache/errors.js';
import type { Bundle, Pool } from '../imagecache/model.js';
import { ClusterChart, failsafeNamespace, NamespaceChart } from './charts.js';
import { BOUND_DEFAULTS, priorityClassAllowanceError, type InvocationBounds } from './bounds.js';
import { addCheck, checkBundle, checkOutput, diagnosticsOf, settle, type OutputFacts } from './checks/index.js';
import type { Manifest } from './checks/output.js';
import { gateKeyAllowanceError } from '../contract/gate-key.js';
import { DEFAULT_HELPER_IMAGE, PullDaemonSet } from './pull-daemonset.js';
import { parseImageRef } from '../oci/reference.js';
import { CLUSTER_CHART_ID, namespaceChartId } from './naming.js';
import type { ReconcilerProps } from './pull-daemonset.js';
import type { SleeperArch } from '../contract/names.js';
import type { ReconcilerNetworkPolicyProps } from './network-policy.js';

/** Options of a synth run. */
export interface SynthOptions {
  /** The sidecar reconciler of every pull pod. @default - no sidecar */
  readonly reconciler?: ReconcilerProps;
  /** Namespaces emitted with Pod Security enforced and pruned with the specs (docs/cli.md). @default - none */
  readonly ownedNamespaces?: readonly string[];
  /** Emit a PodMonitor per namespace; needs `reconciler` and the Prometheus Operator's CRDs. @default false */
  readonly podMonitor?: boolean;
  /** Emit a NetworkPolicy per namespace admitting only the node and this scraper to the sidecars' port. @default - none */
  readonly networkPolicy?: ReconcilerNetworkPolicyProps;
  /** Gate taint keys (exact, or prefixes ending in `/`) a spec may choose beyond `prewarm.dev/`. @default - none */
  readonly allowedGateKeys?: readonly string[];
  /** Every node's architecture, so every pool runs the sleeper. A wrong one breaks pods, so a spec never sets it. @default - not stated */
  readonly nodeArch?: SleeperArch;
  /** `--helper-image`: code every image container runs, so never a spec's choice. @default DEFAULT_HELPER_IMAGE */
  readonly helperImage?: string;
  /** `--allow-priority-class`: the classes a spec may choose among, never `system-`. @default - none */
  readonly allowedPriorityClasses?: readonly string[];
  /** `--max-node-memory`: bytes all pull pods on one warming node may request. @default BOUND_DEFAULTS (src/synth/bounds.ts) */
  readonly maxNodeMemoryBytes?: number;
  /** The shortest `spec.refresh.interval` a spec may set, in seconds. @default BOUND_DEFAULTS (src/synth/bounds.ts) */
  readonly minRefreshSeconds?: number;
  /** Receives each warning: what the apiserver accepts but a user would regret. Errors throw. @default - warnings are dropped */
  readonly onWarning?: (warning: Diagnostic) => void;
}

/** Adds prewarm's charts for `bundle` to an existing App; throws a SpecError before anything is written. */
export function addPrewarmCharts(app: App, bundle: Bundle, options: SynthOptions = {}): void {
  if (options.podMonitor === true && options.reconciler === undefined)
    throw new Error('podMonitor needs a reconciler: without the sidecar there are no metrics');
  if (options.networkPolicy !== undefined && options.reconciler === undefined)
    throw new Error('networkPolicy needs a reconciler: without the sidecar there is no port to guard');
  const allowed = options.allowedGateKeys ?? [];
  for (const allowance of allowed) {
    const invalid = gateKeyAllowanceError(allowance);
    if (invalid !== undefined) throw new Error(`allowedGateKeys: "${allowance}" ${invalid}`);
  }
  const owned = options.ownedNamespaces ?? [];
  const helperImage = canonicalHelperImage(options.helperImage);
  const bounds = invocationBounds(options);
  settle(checkBundle(bundle, { allowedGateKeys: allowed, bounds, ownedNamespaces: owned, reconciler: options.reconciler !== undefined }));
  const charts: Chart[] = [
    new ClusterChart(app, CLUSTER_CHART_ID, { bundle, ownedNamespaces: owned, reconciler: options.reconciler !== undefined, helperImage }),
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
        ...(options.networkPolicy === undefined ? {} : { networkPolicy: options.networkPolicy }),
        failsafe: namespace === failsafe,
        ...(options.nodeArch === undefined ? {} : { nodeArch: options.nodeArch }),
        ...(bundle.imageBytes === undefined ? {} : { imageBytes: bundle.imageBytes }),
        helperImage,
      }),
    );
  }
  // What no single construct knows, checked over the whole output; cdk8s reruns it at every synth.
  const [cluster] = charts;
  if (cluster !== undefined) addCheck(cluster, () => checkOutput(outputFacts(charts), bundle, owned, bounds.maxNodeMemoryBytes));
  settle(
    charts.flatMap((c) => diagnosticsOf(c)),
    options.onWarning,
  );
}

/** The helper image as pods name it: canonical, so admission compares one spelling. */
function canonicalHelperImage(image: string = DEFAULT_HELPER_IMAGE): string {
  const parsed = parseImageRef(image);
  if (!parsed.ok) throw new Error(`helperImage: "${image}" is not a valid image reference: ${parsed.error}`);
  return parsed.ref.canonical;
}

/** What the whole-output checks read of the charts: names, shared objects, each pool's memory. */
function outputFacts(charts: readonly Chart[]): OutputFacts {
  const constructs = charts.flatMap((c) => c.node.findAll());
  const daemonSets = constructs.filter((c): c is PullDaemonSet => c instanceof PullDaemonSet);
  const poolOf = new Map<unknown, Pool>(daemonSets.map((ds) => [ApiObject.of(ds.workload), ds.pool]));
  const objects = constructs.filter((c): c is ApiObject => ApiObject.isApiObject(c));
  return {
    names: objects.map((o) => ({
      apiVersion: o.apiVersion,
      kind: o.kind,
      metadata: { name: o.name, namespace: o.metadata.namespace },
      pool: poolOf.get(o),
    })),
    shared: objects.filter((o) => !poolOf.has(o)).map((o) => o.toJson() as Manifest),
    memory: daemonSets.map((ds) => ({ pool: ds.pool, bytes: ds.memoryRequest() })),
  };
}

/** The bounds of `options`, defaults resolved; a bound no invocation could set is a programming error. */
function invocationBounds(options: SynthOptions): InvocationBounds {
  const bounds: InvocationBounds = {
    allowedPriorityClasses: options.allowedPriorityClasses ?? BOUND_DEFAULTS.allowedPriorityClasses,
    maxNodeMemoryBytes: options.maxNodeMemoryBytes ?? BOUND_DEFAULTS.maxNodeMemoryBytes,
    minRefreshSeconds: options.minRefreshSeconds ?? BOUND_DEFAULTS.minRefreshSeconds,
  };
  for (const name of bounds.allowedPriorityClasses) {
    const invalid = priorityClassAllowanceError(name);
    if (invalid !== undefined) throw new Error(`allowedPriorityClasses: "${name}" ${invalid}`);
  }
  if (!(bounds.maxNodeMemoryBytes > 0)) throw new Error(`maxNodeMemoryBytes: ${bounds.maxNodeMemoryBytes} is not a positive number`);
  if (!Number.isSafeInteger(bounds.minRefreshSeconds) || bounds.minRefreshSeconds < 1)
    throw new Error(`minRefreshSeconds: ${bounds.minRefreshSeconds} is not a whole number of seconds, at least 1`);
  return bounds;
}

/** A fresh App holding prewarm's charts; every setting explicit, so the environment cannot change the output. */
export function createApp(bundle: Bundle, options: SynthOptions = {}, outdir = 'dist'): App {
  const app = new App({ outdir, yamlOutputType: YamlOutputType.FILE_PER_CHART, recordConstructMetadata: false });
  addPrewarmCharts(app, bundle, options);
  return app;
}

/** The whole bundle as one YAML stream, documents separated by `---`. */
export function synthYaml(bundle: Bundle, options: SynthOptions = {}): string {
  return createApp(bundle, options).synthYaml();
}
