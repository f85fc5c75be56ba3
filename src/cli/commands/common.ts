/** Options shared by the commands, and the checks that hold option values to the rules of spec values. */
import type { Argv } from 'yargs';
import net from 'node:net';
import { checkDns1123Label, checkLabelValue, checkQualifiedName } from '../../imagecache/k8s-validation.js';
import { DURATION_FORM, isDurationForm, outsideRange, parseDuration, type DurationRange } from '../../imagecache/duration.js';
import { DEFAULT_NAMESPACE } from '../../imagecache/parse.js';
import { parseImageRef } from '../../oci/reference.js';
import { UsageError } from '../exit-codes.js';

/** Why an option value is wrong, or undefined when it is fine. */
export type OptionCheck = (value: string) => string | undefined;

/** A namespace: a DNS-1123 label, as `metadata.namespace` must be. */
export const isNamespace: OptionCheck = (value) => {
  const why = checkDns1123Label(value);
  return why === undefined ? undefined : `is not a valid namespace: it ${why}`;
};

/** An image reference, parsed like every image of a spec. */
export const isImage: OptionCheck = (value) => {
  const parsed = parseImageRef(value);
  return parsed.ok ? undefined : `is not a valid image reference: ${parsed.error}`;
};

/** A label as `key=value`, held to the rules of label keys and values. */
export const isLabel: OptionCheck = (value) => {
  const eq = value.indexOf('=');
  if (eq <= 0) return 'is not a label key=value, e.g. kubernetes.io/metadata.name=monitoring';
  const why = checkQualifiedName(value.slice(0, eq)) ?? checkLabelValue(value.slice(eq + 1));
  return why === undefined ? undefined : `is not a valid label: it ${why}`;
};

/** `key=value` options (each checked by {@link isLabel}) as a label map. */
export function labelMap(values: readonly string[] | undefined): Record<string, string> | undefined {
  if (values === undefined || values.length === 0) return undefined;
  return Object.fromEntries(values.map((v) => [v.slice(0, v.indexOf('=')), v.slice(v.indexOf('=') + 1)]));
}

/** An IPv4 or IPv6 CIDR, as a NetworkPolicy's `ipBlock.cidr` takes it. */
export const isCidr: OptionCheck = (value) => {
  const [address = '', prefix, extra] = value.split('/');
  const family = net.isIP(address);
  const bits = Number(prefix);
  const max = family === 6 ? 128 : 32;
  if (family === 0 || extra !== undefined || prefix === undefined || !/^\d{1,3}$/.test(prefix) || bits > max)
    return 'is not a CIDR, e.g. 10.0.0.0/16 or fd00::/64';
  return undefined;
};

/** A registry as an image reference names it: `host[:port]`. */
export const isRegistry: OptionCheck = (value) => {
  const parsed = parseImageRef(`${value}/x`);
  return parsed.ok && parsed.ref.domain === value ? undefined : 'is not a registry host[:port], e.g. localhost:5000';
};

/** Whole seconds of a duration option, held to `range`, or why not: `0` or `Infinity` would turn a wait into a busy loop or forever. */
export function durationSeconds(value: string, range: DurationRange): { seconds: number } | { error: string } {
  if (!isDurationForm(value)) return { error: `is not a duration: ${DURATION_FORM}` };
  const parsed = parseDuration(value);
  // Written as a duration, but past what a number holds exactly: too large for any range.
  const seconds = 'error' in parsed ? Infinity : parsed.seconds;
  const outside = outsideRange(seconds, range);
  return outside === undefined ? { seconds } : { error: outside };
}

/** A duration option within `range`: see {@link durationSeconds}. */
export const isDuration =
  (range: DurationRange): OptionCheck =>
  (value) => {
    const seconds = durationSeconds(value, range);
    return 'error' in seconds ? seconds.error : undefined;
  };

/** The seconds of an option {@link checkOptions} held to {@link isDuration}. */
export function optionSeconds(name: string, value: string, range: DurationRange): number {
  const seconds = durationSeconds(value, range);
  if ('error' in seconds) throw new UsageError(optionError(name, value, seconds.error));
  return seconds.seconds;
}

/** Positional arguments that {@link checkOptions} checks, and how a message names one of their values. */
const POSITIONALS: Readonly<Record<string, string>> = { paths: 'path' };

/** The usage error of a bad option value: `--name "value" why` (`path "value" why` for a positional). */
function optionError(name: string, value: string, why: string): string {
  return `${POSITIONALS[name] ?? `--${name}`} ${JSON.stringify(value)} ${why}`;
}

/** A path: anything but the empty string, which would silently mean the current folder. */
export const isPath: OptionCheck = (value) => (value === '' ? 'is empty: name a path' : undefined);

/** Milliseconds of a `--request-timeout` that {@link isDuration} accepted. */
export function durationMs(value: string): number {
  return optionSeconds('request-timeout', value, REQUEST_TIMEOUT) * 1000;
}

/** The bounds of `--request-timeout`: each request to an apiserver or registry ends within it. */
export const REQUEST_TIMEOUT = { default: '30s', min: 1, max: 3600 } as const;

/** `--request-timeout`, as kubectl names it. */
export function requestTimeoutOption<T>(y: Argv<T>) {
  return checkOptions(
    y.option('request-timeout', {
      type: 'string',
      default: REQUEST_TIMEOUT.default,
      describe: 'How long one request to the server may take in all, from connecting to the last byte, e.g. 10s or 2m (1s to 1h)',
    }),
    { 'request-timeout': isDuration(REQUEST_TIMEOUT) },
  );
}

/** `--from-cluster`, `--context` and `--request-timeout`, for a command that reads a cluster. */
export function fromClusterOptions<T>(y: Argv<T>, what: string) {
  return requestTimeoutOption(y)
    .option('from-cluster', { type: 'boolean', describe: `Read ${what} from the cluster of the kubeconfig instead, read-only` })
    .option('context', { type: 'string', describe: 'kubeconfig context (with --from-cluster)' });
}

/** The bounds of `--deadline`: a whole run's registry look-ups end within it. */
export const RUN_DEADLINE = { default: '2m', min: 1, max: 6 * 3600 } as const;

/** `--deadline`: all of a run's registry look-ups, helpers included; past it, the rest fail. */
export function deadlineOption<T>(y: Argv<T>, what: string) {
  return checkOptions(
    y.option('deadline', {
      type: 'string',
      default: RUN_DEADLINE.default,
      describe: `How long ${what} may take in all, registries and credential helpers together, e.g. 30s or 5m (1s to 6h)`,
    }),
    { deadline: isDuration(RUN_DEADLINE) },
  );
}

/** The signal of a `--deadline` that {@link deadlineOption} accepted: it aborts once the deadline has passed. */
export function deadlineSignal(value: string): AbortSignal {
  return AbortSignal.timeout(optionSeconds('deadline', value, RUN_DEADLINE) * 1000);
}

/**
 * Checks each named option before the handler (exit 2 on failure), and refuses one given twice
 * unless `repeatable`: yargs would hand over an array.
 */
export function checkOptions<T>(y: Argv<T>, checks: Readonly<Record<string, OptionCheck>>, repeatable: readonly string[] = []): Argv<T> {
  return y.check((argv) => {
    for (const [name, check] of Object.entries(checks)) {
      const value: unknown = argv[name];
      if (value === undefined) continue;
      if (Array.isArray(value) && !repeatable.includes(name)) throw new UsageError(`--${name} is given more than once`);
      // yargs hands over scalars here (string, number or boolean), which String() prints as given.
      for (const v of [value].flat() as (string | number | boolean)[]) {
        const text = String(v);
        const why = check(text);
        if (why !== undefined) throw new UsageError(optionError(name, text, why));
      }
    }
    return true;
  });
}

/** `<paths..>` plus `--namespace`, the namespace for ImageCaches whose metadata names none. */
export function specOptions(y: Argv) {
  const options = y
    .positional('paths', {
      type: 'string',
      array: true,
      demandOption: true,
      describe: 'Spec files or folders (searched for *.yaml, *.yml)',
    })
    .option('namespace', {
      alias: 'n',
      type: 'string',
      default: DEFAULT_NAMESPACE,
      describe: 'Namespace for ImageCaches that name none',
    });
  return checkOptions(options, { namespace: isNamespace, paths: isPath }, ['paths']);
}
