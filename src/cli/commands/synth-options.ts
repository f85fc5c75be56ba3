/**
 * The options that decide what synth emits, shared by `synth` and `validate`: validate runs the
 * same synthesis and writes nothing, so a CI gate on validate refuses exactly what synth refuses,
 * for the same invocation. These options are the trusted side of the trust boundary (docs/security.md): a spec can never set any of them.
 */
import type { Argv } from 'yargs';
import { gateKeyAllowanceError } from '../../contract/gate-key.js';
import { formatDiagnostic, SpecError } from '../../imagecache/errors.js';
import type { Bundle } from '../../imagecache/model.js';
import { synthYaml, type SynthOptions } from '../../synth/app.js';
import { ownedNamespaceError } from '../../synth/charts.js';
import type { ReconcilerNetworkPolicyProps } from '../../synth/network-policy.js';
import { SLEEPER_ARCHITECTURES, type SleeperArch } from '../../contract/names.js';
import { DEFAULT_RECONCILER_IMAGE } from '../../version.js';
import { DEFAULT_HELPER_IMAGE } from '../../synth/pull-daemonset.js';
import { UsageError } from '../exit-codes.js';
import type { Io } from '../io.js';
import { invalidInput } from '../specs.js';
import { checkOptions, isCidr, isDuration, isImage, isLabel, labelMap, optionSeconds, type OptionCheck } from './common.js';
import { BOUND_DEFAULTS, NODE_MEMORY_RANGE, priorityClassAllowanceError } from '../../synth/bounds.js';
import { parseQuantity } from '../../contract/quantity.js';
import { LIMITS } from '../../contract/names.js';
import { formatDuration } from '../../imagecache/duration.js';
import { size } from '../../synth/checks/limits.js';
import { FAILSAFE_GRACE_RANGE } from '../../contract/failsafe.js';

/** The parsed options of {@link synthOptions}. */
export interface SynthOptionArgs {
  readonly reconciler: boolean;
  readonly reconcilerImage: string;
  readonly ownNamespace?: readonly string[] | undefined;
  readonly podMonitor?: boolean | undefined;
  readonly networkPolicy?: boolean | undefined;
  readonly scraperNamespaceLabel?: readonly string[] | undefined;
  readonly scraperPodLabel?: readonly string[] | undefined;
  readonly nodeCidr?: readonly string[] | undefined;
  readonly allowGateKey?: readonly string[] | undefined;
  readonly nodeArch?: SleeperArch | undefined;
  readonly helperImage: string;
  readonly allowPriorityClass?: readonly string[] | undefined;
  readonly maxNodeMemory: string;
  readonly minRefreshInterval: string;
  readonly failsafeGrace?: string | undefined;
}

/** A PriorityClass specs may name: a valid name, never a `system-` class. */
const isPriorityAllowance: OptionCheck = (value) => priorityClassAllowanceError(value);

/** `--max-node-memory`: a memory quantity within {@link NODE_MEMORY_RANGE}. */
const isNodeMemory: OptionCheck = (value) => {
  const bytes = parseQuantity(value);
  if (bytes === undefined) return 'is not a memory quantity, e.g. 1Gi or 1536Mi';
  const { min, max } = NODE_MEMORY_RANGE;
  return bytes < min || bytes > max ? `must be between ${size(min, false)} and ${size(max, false)}` : undefined;
};

/** The range of `--min-refresh-interval`: what a spec's interval may be, bar 0. */
const REFRESH_FLOOR = { min: 1, max: LIMITS.refreshSeconds.max } as const;

/** `--own-namespace`, once or repeated, as a list; a name that cannot be owned is a usage error. */
function ownedNamespaces(value: string | string[]): string[] {
  const names = [value].flat();
  for (const name of names) {
    const invalid = ownedNamespaceError(name);
    if (invalid !== undefined) throw new UsageError(`--own-namespace: ${invalid}`);
  }
  return names;
}

/** An allowance of gate keys: an exact taint key, or a prefix ending in `/`. */
const isGateKeyAllowance: OptionCheck = (value) => gateKeyAllowanceError(value);

/** The sidecar and what watches it: its image, owned namespaces, the PodMonitor. */
function sidecarOptions<T>(y: Argv<T>) {
  return y
    .option('reconciler', { type: 'boolean', default: true, describe: 'Add the sidecar reconciler (--no-reconciler to omit)' })
    .option('reconciler-image', { type: 'string', default: DEFAULT_RECONCILER_IMAGE, describe: 'Image of the sidecar reconciler' })
    .option('own-namespace', {
      type: 'string',
      requiresArg: true,
      describe:
        'A namespace prewarm owns: emitted with Pod Security restricted, pruned with the output; repeat for more. Others are emitted bare and protected from GitOps pruning',
      coerce: ownedNamespaces,
    })
    .option('pod-monitor', {
      type: 'boolean',
      describe: "Add a Prometheus Operator PodMonitor per namespace for the sidecars' metrics (needs its CRDs in the cluster)",
    });
}

/** The NetworkPolicy that guards the sidecars' port, and whom it admits. */
function networkPolicyOptions<T>(y: Argv<T>) {
  return y
    .option('network-policy', {
      type: 'boolean',
      describe:
        "Add a NetworkPolicy per namespace that admits to the sidecars' metrics and probe port only the node (the kubelet's probes) and the scraper (--scraper-*); needs a network plugin that enforces NetworkPolicy",
    })
    .option('scraper-namespace-label', {
      type: 'string',
      requiresArg: true,
      describe: 'With --network-policy: a label key=value of the namespaces the metrics scraper runs in; repeat for more',
      coerce: (value: string | string[]) => [value].flat(),
    })
    .option('scraper-pod-label', {
      type: 'string',
      requiresArg: true,
      describe: "With --network-policy: a label key=value of the metrics scraper's pods; repeat for more",
      coerce: (value: string | string[]) => [value].flat(),
    })
    .option('node-cidr', {
      type: 'string',
      requiresArg: true,
      describe:
        "With --network-policy: a CIDR of the nodes, admitted too, for network plugins that filter a node's own traffic to its pods; repeat for more",
      coerce: (value: string | string[]) => [value].flat(),
    });
}

/** What specs may choose for the pull pods (gate keys, priority classes) and how those pods sleep. */
function podOptions<T>(y: Argv<T>) {
  return y
    .option('allow-gate-key', {
      type: 'string',
      requiresArg: true,
      describe:
        'A gate taint key specs may choose besides those under prewarm.dev/: an exact key, or a prefix ending in "/" (e.g. startup-taint.cluster-autoscaler.kubernetes.io/); repeat for more',
      coerce: (value: string | string[]) => [value].flat(),
    })
    .option('node-arch', {
      type: 'string',
      requiresArg: true,
      choices: SLEEPER_ARCHITECTURES,
      describe:
        'The architecture of every node in the cluster: pull pods then run a static sleep from a ConfigMap and need no helper init container (pools whose nodeSelector names kubernetes.io/arch do anyway)',
    })
    .option('helper-image', {
      type: 'string',
      default: DEFAULT_HELPER_IMAGE,
      describe:
        'Image with a static /bin/busybox that pools without the sleeper copy into their pods; every image container runs it, so only the invocation chooses it (pin a digest)',
    })
    .option('allow-priority-class', {
      type: 'string',
      requiresArg: true,
      describe:
        'A PriorityClass specs may name in priorityClassName (never a system- class); repeat for more. Without it, a spec that names one is refused',
      coerce: (value: string | string[]) => [value].flat(),
    });
}

/** The bounds the invocation sets on every spec: node memory, refresh interval, the fail-safe's grace. */
function boundOptions<T>(y: Argv<T>) {
  return y
    .option('max-node-memory', {
      type: 'string',
      requiresArg: true,
      default: `${BOUND_DEFAULTS.maxNodeMemoryBytes / 2 ** 20}Mi`,
      describe: 'The most memory the pull pods of all pools may request on one warming node, e.g. 2Gi; more is an error',
    })
    .option('min-refresh-interval', {
      type: 'string',
      requiresArg: true,
      default: formatDuration(BOUND_DEFAULTS.minRefreshSeconds),
      describe:
        'The shortest spec.refresh.interval specs may set, e.g. 15m (1s to 720h): every node asks the registry about every tag once per interval',
    })
    .option('failsafe-grace', {
      type: 'string',
      requiresArg: true,
      describe:
        "How long past the longest gate deadline, from a node's creation, the cluster's fail-safe waits before it lifts the gate of a node where no sidecar runs (default 11m: the sidecars' own bound plus a minute)",
    });
}

/** Adds the options that shape synth's output. */
export function synthOptions<T>(y: Argv<T>) {
  const options = boundOptions(podOptions(networkPolicyOptions(sidecarOptions(y)))).check((argv) => {
    if (argv['pod-monitor'] === true && !argv.reconciler)
      throw new UsageError('--pod-monitor needs the sidecar: without it there are no metrics to scrape (drop --no-reconciler)');
    if (argv['network-policy'] === true && !argv.reconciler)
      throw new UsageError('--network-policy needs the sidecar: without it there is no port to guard (drop --no-reconciler)');
    for (const dependent of ['scraper-namespace-label', 'scraper-pod-label', 'node-cidr'])
      if (argv[dependent] !== undefined && argv['network-policy'] !== true) throw new UsageError(`--${dependent} needs --network-policy`);
    return true;
  });
  return checkOptions(
    options,
    {
      'reconciler-image': isImage,
      'helper-image': isImage,
      'allow-gate-key': isGateKeyAllowance,
      'allow-priority-class': isPriorityAllowance,
      'max-node-memory': isNodeMemory,
      'min-refresh-interval': isDuration(REFRESH_FLOOR),
      'scraper-namespace-label': isLabel,
      'scraper-pod-label': isLabel,
      'node-cidr': isCidr,
      'failsafe-grace': isDuration(FAILSAFE_GRACE_RANGE),
    },
    ['allow-gate-key', 'allow-priority-class', 'scraper-namespace-label', 'scraper-pod-label', 'node-cidr'],
  );
}

/** The library options for parsed {@link synthOptions}; warnings go to stderr. */
export function toSynthOptions(args: SynthOptionArgs, io: Io): SynthOptions {
  const allowed = args.allowGateKey ?? [];
  return {
    ...(args.reconciler
      ? {
          reconciler: {
            image: args.reconcilerImage,
            ...(args.failsafeGrace === undefined
              ? {}
              : { failsafeGraceSeconds: optionSeconds('failsafe-grace', args.failsafeGrace, FAILSAFE_GRACE_RANGE) }),
          },
        }
      : {}),
    ...(args.ownNamespace === undefined ? {} : { ownedNamespaces: args.ownNamespace }),
    ...(args.podMonitor === true ? { podMonitor: true } : {}),
    ...(args.networkPolicy === true ? { networkPolicy: networkPolicyOf(args) } : {}),
    ...(allowed.length === 0 ? {} : { allowedGateKeys: allowed }),
    ...(args.nodeArch === undefined ? {} : { nodeArch: args.nodeArch }),
    helperImage: args.helperImage,
    ...(args.allowPriorityClass === undefined ? {} : { allowedPriorityClasses: args.allowPriorityClass }),
    maxNodeMemoryBytes: parseQuantity(args.maxNodeMemory) ?? BOUND_DEFAULTS.maxNodeMemoryBytes,
    minRefreshSeconds: optionSeconds('min-refresh-interval', args.minRefreshInterval, REFRESH_FLOOR),
    onWarning: (d) => io.stderr(`${formatDiagnostic(d)}\n`),
  };
}

/** The NetworkPolicy's props from `--scraper-namespace-label`, `--scraper-pod-label` and `--node-cidr`. */
function networkPolicyOf(args: SynthOptionArgs): ReconcilerNetworkPolicyProps {
  const namespaces = labelMap(args.scraperNamespaceLabel);
  const pods = labelMap(args.scraperPodLabel);
  return {
    ...(namespaces === undefined ? {} : { scraperNamespaceLabels: namespaces }),
    ...(pods === undefined ? {} : { scraperPodLabels: pods }),
    ...(args.nodeCidr === undefined ? {} : { nodeCidrs: args.nodeCidr }),
  };
}

/** Runs `make`; a SpecError (output the apiserver would refuse) becomes invalid input, exit 1. */
export function checkedSynth<T>(make: () => T, io: Io): T {
  try {
    return make();
  } catch (err) {
    throw err instanceof SpecError ? invalidInput(err, io) : err;
  }
}

/** The whole synthesis of `bundle`, thrown away: every check synth makes, and nothing written. */
export function synthWithoutWriting(bundle: Bundle, options: SynthOptions, io: Io): void {
  checkedSynth(() => synthYaml(bundle, options), io);
}
