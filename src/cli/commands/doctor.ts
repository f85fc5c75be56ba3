/**
 * `prewarm doctor`: reads the cluster for the pure checks; a failed read is a finding, not the end.
 * Exit 0 all ran and passed; 3 an error or a check could not run; 70 the cluster answers no read.
 */
import type { Argv } from 'yargs';
import { pullSecretsOf } from '../../doctor/pools.js';
import { diagnose } from '../../doctor/diagnose.js';
import { imageFsOf, imagesToSize, nodesWithPools, type ImageToSize } from '../../doctor/disk-budget.js';
import type { ClusterRead, DoctorInput, ImageFsStats, KubeletConfig } from '../../doctor/input.js';
import { ApiError } from '../../http/api-error.js';
import { askRegistries, OciRegistry } from '../../oci/client.js';
import { DockerConfigError, loadRegistryCredentials } from '../../oci/docker-config.js';
import { VERSION } from '../../version.js';
import { renderDoctorTable, type DoctorFormat, type DoctorReport } from '../../doctor/report.js';
import { plural } from '../../text/plural.js';
import { LABEL_MANAGED_BY, MANAGED_BY } from '../../contract/names.js';
import { ACCESS_NAMES } from '../../contract/access-names.js';
import { apiFailure } from '../api-failure.js';
import { CliError, ExitCode } from '../exit-codes.js';
import type { Io } from '../io.js';
import { kubeClient } from '../kube.js';
import { checkOptions, deadlineOption, deadlineSignal, durationMs, isPath, isRegistry, requestTimeoutOption } from './common.js';

interface DoctorArgs {
  readonly output: DoctorFormat;
  readonly context?: string | undefined;
  readonly requestTimeout: string;
  readonly deadline: string;
  readonly plainHttp?: readonly string[] | undefined;
  readonly dockerConfig?: string | undefined;
}

/** How doctor reaches registries, for the sizes of images a node does not list. */
export interface DoctorRegistryOptions {
  readonly plainHttp: readonly string[];
  readonly dockerConfig?: string | undefined;
  /** `--deadline`, as the specs write durations: the size look-ups end within it. */
  readonly deadline: string;
}

/** How `doctor` reads the cluster; a port so tests can fake it. */
export interface DoctorSource {
  read(): Promise<DoctorInput>;
}

/** Typed so yargs infers the choices. */
const DEFAULT_FORMAT: DoctorFormat = 'table';

/** Kubelet configurations read at once: each is a round trip through the apiserver to a kubelet. */
const CONFIGZ_CONCURRENCY = 8;

/** The largest `/stats/summary` read: past it, a kubelet or proxy that streams without end. */
export const MAX_SUMMARY_BODY = 8 << 20;

/** Images sized from registries in one run at the most: the rest are reported as not asked. */
export const MAX_REGISTRY_SIZES = 100;

export function doctorCommand(
  io: Io,
  source: (context: string | undefined, requestTimeoutMs: number, registry: DoctorRegistryOptions) => Promise<DoctorSource> = clusterSource,
) {
  return {
    command: 'doctor',
    describe: 'Check what prewarm needs, per cluster and per node, and say how to fix each problem; exit 3 on an error',
    builder: (y: Argv) =>
      deadlineOption(
        requestTimeoutOption(checkOptions(y, { 'plain-http': isRegistry, 'docker-config': isPath }, ['plain-http'])),
        'the image size look-ups',
      )
        .option('output', {
          alias: 'o',
          choices: ['table', 'wide', 'json'] as const,
          default: DEFAULT_FORMAT,
          describe: 'Output format (table lists problems only; wide lists every check)',
        })
        .option('context', { type: 'string', describe: 'kubeconfig context' })
        .option('plain-http', {
          type: 'string',
          array: true,
          nargs: 1,
          describe: 'A registry (host:port) spoken to over plain HTTP, for image sizes; repeat for more',
        })
        .option('docker-config', {
          type: 'string',
          describe:
            'Docker config with registry credentials, for image sizes [default: $DOCKER_CONFIG/config.json or ~/.docker/config.json]',
        })
        .example('$0 doctor', 'problems and how to fix them')
        .example('$0 doctor -o json', 'every finding, for scripts'),
    handler: async (args: DoctorArgs) => {
      const registry = { plainHttp: args.plainHttp ?? [], dockerConfig: args.dockerConfig, deadline: args.deadline };
      const report = diagnose(await (await source(args.context, durationMs(args.requestTimeout), registry)).read());
      io.stdout(renderDoctor(report, args.output));
      const outcome = outcomeOf(report);
      if (outcome !== undefined) throw outcome;
    },
  };
}

/** How a run ends when it does not end well: see the exit codes above. */
export function outcomeOf(report: DoctorReport): CliError | undefined {
  const unchecked = plural(report.unchecked, 'check');
  if (report.findings.length > 0 && report.unchecked === report.findings.length)
    return new CliError(`cannot run any doctor check (${unchecked}): see why in each finding`, ExitCode.Internal);
  if (report.errors > 0) {
    const also = report.unchecked > 0 ? `; ${unchecked} could not run` : '';
    return new CliError(`doctor found ${plural(report.errors, 'error')}${also}`, ExitCode.NotReady);
  }
  if (report.unchecked > 0) return new CliError(`doctor could not run ${unchecked}; the others found no error`, ExitCode.NotReady);
  return undefined;
}

/** Renders in the chosen format; JSON carries every finding. */
export function renderDoctor(report: DoctorReport, format: DoctorFormat): string {
  return format === 'json' ? `${JSON.stringify(report, null, 2)}\n` : renderDoctorTable(report, format === 'wide');
}

/** A failed call as a {@link ClusterRead}: 404 `missing`, 401/403 `denied`, else `failed`, bounded. */
export function readFailure(err: unknown): Exclude<ClusterRead<never>, { kind: 'ok' }> {
  const failure = apiFailure(err);
  if (failure.code === 404) return { kind: 'missing' };
  if (failure.code === 401 || failure.code === 403) return { kind: 'denied', message: failure.message };
  return { kind: 'failed', message: failure.message };
}

export async function attempt<T>(call: () => Promise<T>): Promise<ClusterRead<T>> {
  try {
    return { kind: 'ok', value: await call() };
  } catch (err) {
    return readFailure(err);
  }
}

/** The first read: without an HTTP answer nothing else is tried (exit 70). */
export async function firstRead<T>(call: () => Promise<T>): Promise<ClusterRead<T>> {
  try {
    return { kind: 'ok', value: await call() };
  } catch (err) {
    const failure = apiFailure(err);
    if (failure.code === undefined) throw new CliError(`cannot reach the cluster: ${failure.message}`, ExitCode.Internal);
    return readFailure(err);
  }
}

/** `kubeletconfig` of a `/configz` answer (client-node hands it over parsed, or as text). */
export function kubeletConfigOf(answer: ClusterRead<unknown>): ClusterRead<KubeletConfig> {
  if (answer.kind !== 'ok') return answer;
  let parsed: unknown = answer.value;
  try {
    if (typeof parsed === 'string') parsed = JSON.parse(parsed);
  } catch {
    return { kind: 'failed', message: 'the answer is not JSON' };
  }
  const config = (parsed as { kubeletconfig?: unknown } | null)?.kubeletconfig;
  return typeof config === 'object' && config !== null
    ? { kind: 'ok', value: config }
    : { kind: 'failed', message: 'the answer holds no kubeletconfig' };
}

/** `items` of each of `inputs`, `limit` at a time, in input order. */
async function mapLimit<T, R>(inputs: readonly T[], limit: number, fn: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(inputs.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < inputs.length) {
      const i = next++;
      out[i] = await fn(inputs[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, inputs.length) }, worker));
  return out;
}

/**
 * Each image's compressed size from its registry, as `pin` reaches it; bounded per registry and by
 * {@link MAX_REGISTRY_SIZES}. Never rejects: each failure is that image's read.
 */
export async function readImageSizes(
  wanted: readonly ImageToSize[],
  o: DoctorRegistryOptions,
  requestTimeoutMs: number,
): Promise<Map<string, ClusterRead<number>>> {
  const sizes = new Map<string, ClusterRead<number>>();
  if (wanted.length === 0) return sizes;
  // Started before the docker config is read: the deadline bounds the look-ups as a whole.
  const signal = deadlineSignal(o.deadline);
  let registry: OciRegistry;
  let prepare: (host: string) => Promise<void>;
  try {
    const credentials = await loadRegistryCredentials(o.dockerConfig);
    prepare = (host) => credentials.prepare(host, signal);
    registry = new OciRegistry({
      keyring: credentials.keyring,
      userAgent: `prewarm-cli/${VERSION}`,
      plainHttp: new Set(o.plainHttp),
      timeoutMs: requestTimeoutMs,
      signal,
    });
  } catch (err) {
    if (!(err instanceof DockerConfigError)) throw err;
    for (const w of wanted) sizes.set(w.key, { kind: 'failed', message: err.message });
    return sizes;
  }
  const asked = await askRegistries(
    wanted.slice(0, MAX_REGISTRY_SIZES),
    (w) => w.image,
    (w) => registry.compressedSize(w.image, w.platform),
    { signal, prepare },
  );
  wanted.forEach((w, i) => {
    const a = asked[i];
    if (a === undefined) sizes.set(w.key, { kind: 'failed', message: `not asked: over ${MAX_REGISTRY_SIZES} images to size` });
    else if (a.kind === 'answered') sizes.set(w.key, { kind: 'ok', value: a.value });
    else if (a.kind === 'skipped') sizes.set(w.key, { kind: 'failed', message: `not asked: ${a.host} did not answer` });
    else if (a.kind === 'deadline') sizes.set(w.key, { kind: 'failed', message: `not answered within --deadline ${o.deadline}` });
    else {
      // The registry's words are untrusted: one escaped, bounded line, as api-failure.ts cuts them.
      const status = a.error instanceof ApiError ? a.error.code : 0;
      const failure = apiFailure(a.error instanceof ApiError ? new Error(a.error.message) : a.error);
      sizes.set(
        w.key,
        status === 404 ? { kind: 'missing' } : { kind: status === 401 || status === 403 ? 'denied' : 'failed', message: failure.message },
      );
    }
  });
  return sizes;
}

/** Reads the cluster through @kubernetes/client-node, with the one client of src/cli/kube.ts. */
async function clusterSource(
  context: string | undefined,
  requestTimeoutMs: number,
  registry: DoctorRegistryOptions,
): Promise<DoctorSource> {
  const { k8s, api } = await kubeClient({ context, requestTimeoutMs });
  const core = api(k8s.CoreV1Api);
  const summaries = api(k8s.CoreV1Api, MAX_SUMMARY_BODY);
  const apps = api(k8s.AppsV1Api);
  const admission = api(k8s.AdmissionregistrationV1Api);
  const version = api(k8s.VersionApi);
  return {
    async read() {
      try {
        return await readCluster();
      } catch (err) {
        if (err instanceof CliError) throw err;
        // Only a cluster that cannot be reached at all gets here (see readFailure).
        throw new CliError(`cannot read the cluster: ${(err as Error).message}`, ExitCode.Internal);
      }
    },
  };

  async function readCluster(): Promise<DoctorInput> {
    const now = Date.now();
    const observedVersion = await firstRead(() => version.getCode());
    const [policy, policyBinding, earlyPullPolicy, earlyPullPolicyBinding, daemonSets, pods, nodes] = await Promise.all([
      attempt(() => admission.readValidatingAdmissionPolicy({ name: ACCESS_NAMES.policy })),
      attempt(() => admission.readValidatingAdmissionPolicyBinding({ name: ACCESS_NAMES.policy })),
      attempt(() => admission.readValidatingAdmissionPolicy({ name: ACCESS_NAMES.earlyPullPolicy })),
      attempt(() => admission.readValidatingAdmissionPolicyBinding({ name: ACCESS_NAMES.earlyPullPolicy })),
      attempt(async () => (await apps.listDaemonSetForAllNamespaces({ labelSelector: `${LABEL_MANAGED_BY}=${MANAGED_BY}` })).items),
      attempt(async () => (await core.listPodForAllNamespaces({ fieldSelector: 'status.phase!=Succeeded,status.phase!=Failed' })).items),
      attempt(async () => (await core.listNode()).items),
    ]);
    const secrets = new Map<string, ClusterRead<unknown>>();
    for (const key of daemonSets.kind === 'ok' ? pullSecretsOf(daemonSets.value) : []) {
      const [namespace, name] = key.split('/') as [string, string];
      // Existence only: the Secret's data is never looked at, printed or kept.
      secrets.set(
        key,
        await attempt(async () => {
          await core.readNamespacedSecret({ namespace, name });
          return true;
        }),
      );
    }
    const names = nodes.kind === 'ok' ? nodes.value.map((n) => n.metadata?.name ?? '').filter((n) => n !== '') : [];
    const configs = await mapLimit(names, CONFIGZ_CONCURRENCY, (name) =>
      attempt(() => core.connectGetNodeProxyWithPath({ name, path: 'configz' })).then(kubeletConfigOf),
    );
    // Only the nodes a pool runs on have a disk budget to judge.
    const pooled = pods.kind === 'ok' ? nodesWithPools(pods.value).filter((n) => names.includes(n)) : [];
    const fs = await mapLimit(pooled, CONFIGZ_CONCURRENCY, (name) =>
      // As `stats%2Fsummary`, which the apiserver proxies; the `?path=` form is answered with a 301.
      attempt(() => summaries.connectGetNodeProxyWithPath({ name, path: 'stats/summary' })).then(imageFsOf),
    );
    const wanted = pods.kind === 'ok' && nodes.kind === 'ok' ? imagesToSize(pods.value, nodes.value) : [];
    return {
      now,
      version: observedVersion,
      policy,
      policyBinding,
      earlyPullPolicy,
      earlyPullPolicyBinding,
      daemonSets,
      pods,
      nodes,
      secrets,
      kubeletConfigs: new Map(names.map((n, i) => [n, configs[i] as ClusterRead<KubeletConfig>])),
      imageFs: new Map(pooled.map((n, i) => [n, fs[i] as ClusterRead<ImageFsStats>])),
      imageSizes: await readImageSizes(wanted, registry, requestTimeoutMs),
    };
  }
}
