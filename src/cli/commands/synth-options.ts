/**
 * The options that decide what synth emits, shared by `synth` and `validate`: validate runs the
 * same synthesis and writes nothing, so a CI gate on validate refuses exactly what synth refuses,
 * for the same invocation. These options are the trusted side of the trust boundary (the README's
 * untrusted-input section): a spec can never set any of them.
 */
import type { Argv } from 'yargs';
import { gateKeyAllowanceError } from '../../contract/gate-key.js';
import { formatDiagnostic, SpecError } from '../../imagecache/errors.js';
import type { Bundle } from '../../imagecache/model.js';
import { synthYaml, type SynthOptions } from '../../synth/app.js';
import { ownedNamespaceError } from '../../synth/charts.js';
import { SLEEPER_ARCHITECTURES, type SleeperArch } from '../../contract/names.js';
import { DEFAULT_RECONCILER_IMAGE } from '../../version.js';
import { UsageError } from '../exit-codes.js';
import type { Io } from '../io.js';
import { invalidInput } from '../specs.js';
import { checkOptions, isDuration, isImage, optionSeconds, type OptionCheck } from './common.js';
import { FAILSAFE_GRACE_RANGE } from '../../contract/failsafe.js';

/** The parsed options of {@link synthOptions}. */
export interface SynthOptionArgs {
  readonly reconciler: boolean;
  readonly reconcilerImage: string;
  readonly ownNamespace?: readonly string[] | undefined;
  readonly podMonitor?: boolean | undefined;
  readonly allowGateKey?: readonly string[] | undefined;
  readonly nodeArch?: SleeperArch | undefined;
  readonly failsafeGrace?: string | undefined;
}

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

/** Adds the options that shape synth's output. */
export function synthOptions<T>(y: Argv<T>) {
  const options = y
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
    })
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
    .option('failsafe-grace', {
      type: 'string',
      requiresArg: true,
      describe:
        "How long past the longest gate deadline, from a node's creation, the cluster's fail-safe waits before it lifts the gate of a node where no sidecar runs (default 11m: the sidecars' own bound plus a minute)",
    })
    .check((argv) => {
      if (argv['pod-monitor'] === true && !argv.reconciler)
        throw new UsageError('--pod-monitor needs the sidecar: without it there are no metrics to scrape (drop --no-reconciler)');
      return true;
    });
  return checkOptions(
    options,
    { 'reconciler-image': isImage, 'allow-gate-key': isGateKeyAllowance, 'failsafe-grace': isDuration(FAILSAFE_GRACE_RANGE) },
    ['allow-gate-key'],
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
    ...(allowed.length === 0 ? {} : { allowedGateKeys: allowed }),
    ...(args.nodeArch === undefined ? {} : { nodeArch: args.nodeArch }),
    onWarning: (d) => io.stderr(`${formatDiagnostic(d)}\n`),
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
