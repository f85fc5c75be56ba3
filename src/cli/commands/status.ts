/**
 * `prewarm status`: pools and nodes, warm or not, read from the cluster; exit 0 only when all warm.
 * `prewarm status --node NODE`: that node's warm-up as a timeline (src/status/timeline.ts).
 */
import type { Argv } from 'yargs';
import { stringify } from 'yaml';
import { buildReport, renderTable, type StatusFormat, type StatusReport } from '../../status/report.js';
import { buildTimeline, type Timeline, type TimelineEvent } from '../../status/timeline.js';
import { renderTimelineSvg, renderTimelineText } from '../../status/timeline-render.js';
import { EVENTS_NAMESPACE, LABEL_MANAGED_BY, MANAGED_BY } from '../../contract/names.js';
import { CliError, ExitCode, UsageError } from '../exit-codes.js';
import type { Io } from '../io.js';
import { apiFailure } from '../api-failure.js';
import { kubeClient, type KubeClientOptions } from '../kube.js';
import { checkOptions, durationMs, isDuration, isNamespace, optionSeconds, requestTimeoutOption } from './common.js';

interface StatusArgs {
  readonly output: StatusFormat | 'svg';
  readonly node?: string | undefined;
  readonly watch?: boolean | undefined;
  readonly timeout?: string | undefined;
  readonly interval: string;
  readonly context?: string | undefined;
  readonly namespace?: string | undefined;
  readonly requestTimeout: string;
}

/** How `status` reads the cluster; a port so tests can count and fake calls. */
export interface StatusSource {
  read(): Promise<StatusReport>;
}

/** `--interval`: at least a second between reads, so a watch never floods the apiserver. */
export const INTERVAL_RANGE = { min: 1, max: 3600 } as const;
/** `--timeout`: a watch that gives up within a day at the latest. */
export const TIMEOUT_RANGE = { min: 1, max: 86_400 } as const;

/** The default of `--output`, typed so yargs infers the choices and not a plain string. */
const DEFAULT_FORMAT: StatusFormat = 'table';

/** Registers the command. */
export function statusCommand(io: Io, isTty: () => boolean = () => process.stdout.isTTY) {
  return {
    command: 'status',
    describe: 'Show desired and warm nodes per pool, and failing images per node; exit 3 unless all are warm',
    builder: (y: Argv) =>
      requestTimeoutOption(
        checkOptions(y, { namespace: isNamespace, timeout: isDuration(TIMEOUT_RANGE), interval: isDuration(INTERVAL_RANGE) }),
      )
        .option('output', {
          alias: 'o',
          choices: ['table', 'wide', 'json', 'yaml', 'svg'] as const,
          default: DEFAULT_FORMAT,
          describe: 'Output format (svg: only with --node)',
        })
        .option('node', { type: 'string', describe: "One node's warm-up as a timeline: pods, pulls, warm, the taint removed" })
        .option('watch', { alias: 'w', type: 'boolean', describe: 'Keep watching until every node is warm (or --timeout)' })
        .option('timeout', {
          type: 'string',
          describe: 'With --watch: give up after this long in all, requests included, e.g. 15m or 1h30m (1s to 24h)',
        })
        .option('interval', { type: 'string', default: '2s', describe: 'With --watch: time between reads, e.g. 5s or 1m (1s to 1h)' })
        .option('context', { type: 'string', describe: 'kubeconfig context' })
        .option('namespace', { alias: 'n', type: 'string', describe: 'Only pools in this namespace' })
        .example('$0 status -o wide', 'every node of every pool')
        .example('$0 status --watch --timeout 15m', 'CI gate: wait until warm')
        .example('$0 status --node gpu-node-1', "one node's warm-up, bars scaled to time"),
    handler: async (args: StatusArgs) => {
      if (args.node !== undefined) {
        if (args.watch === true) throw new UsageError('--node shows one timeline; it does not --watch');
        const timeline = await readTimeline(args.node, args.context, args.namespace, durationMs(args.requestTimeout));
        io.stdout(renderTimeline(timeline, args.output, process.stdout.columns));
        return;
      }
      if (args.output === 'svg') throw new UsageError('-o svg draws one node: use it with --node');
      const timeoutMs = args.timeout === undefined ? undefined : optionSeconds('timeout', args.timeout, TIMEOUT_RANGE) * 1000;
      const intervalMs = optionSeconds('interval', args.interval, INTERVAL_RANGE) * 1000;
      // --timeout bounds the whole watch: it also ends the requests in flight when it passes.
      const deadline = timeoutMs === undefined || args.watch !== true ? undefined : new AbortController();
      const timer = deadline === undefined ? undefined : setTimeout(() => deadline.abort(), timeoutMs);
      try {
        const source = await clusterSource({
          context: args.context,
          namespace: args.namespace,
          requestTimeoutMs: durationMs(args.requestTimeout),
          signal: deadline?.signal,
        });
        const report =
          args.watch === true
            ? await watch(source, { output: args.output, intervalMs }, timeoutMs, io, isTty(), deadline?.signal)
            : await source.read();
        if (args.watch !== true) io.stdout(render(report, args.output));
        if (!report.allWarm) throw new CliError('not every node is warm', ExitCode.NotReady);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** Renders a node's timeline: text bars fitted to the terminal, JSON, YAML or an SVG waterfall. */
export function renderTimeline(timeline: Timeline, format: StatusFormat | 'svg', columns: number | undefined): string {
  switch (format) {
    case 'json':
      return `${JSON.stringify(timeline, null, 2)}\n`;
    case 'yaml':
      return stringify(timeline);
    case 'svg':
      return renderTimelineSvg(timeline);
    case 'table':
    case 'wide':
      return renderTimelineText(timeline, Math.max(20, Math.min(120, (columns ?? 120) - 70)));
  }
}

/** Reads what one node's timeline needs: the node, prewarm's pods and DaemonSets, and their Events. */
async function readTimeline(
  node: string,
  context: string | undefined,
  namespace: string | undefined,
  requestTimeoutMs: number,
): Promise<Timeline> {
  const { k8s, api } = await kubeClient({ context, requestTimeoutMs });
  const apps = api(k8s.AppsV1Api);
  const core = api(k8s.CoreV1Api);
  const managed = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;
  try {
    const [n, pods, daemonSets] = await Promise.all([
      core.readNode({ name: node }),
      core.listPodForAllNamespaces({ labelSelector: managed, fieldSelector: `spec.nodeName=${node}` }),
      namespace === undefined
        ? apps.listDaemonSetForAllNamespaces({ labelSelector: managed })
        : apps.listNamespacedDaemonSet({ namespace, labelSelector: managed }),
    ]);
    const namespaces = [...new Set(daemonSets.items.map((d) => d.metadata?.namespace ?? ''))].filter((x) => x !== '').sort();
    const lists = await Promise.all([
      ...namespaces.map((ns) => core.listNamespacedEvent({ namespace: ns })),
      core.listNamespacedEvent({ namespace: EVENTS_NAMESPACE, fieldSelector: `involvedObject.kind=Node,involvedObject.name=${node}` }),
    ]);
    const events: TimelineEvent[] = lists.flatMap((l) => l.items);
    return buildTimeline({
      node: n,
      pods: pods.items,
      events,
      daemonSets: daemonSets.items,
      now: new Date(),
    });
  } catch (err) {
    const code = (err as { code?: number }).code;
    if (code === 404) throw new CliError(`node ${node} not found`, ExitCode.NotReady);
    throw new CliError(`cannot read the cluster: ${apiFailure(err).message}`, ExitCode.Internal);
  }
}

/** Renders in the chosen format. JSON and YAML carry the whole report. */
export function render(report: StatusReport, format: StatusFormat | 'svg'): string {
  switch (format) {
    case 'json':
      return `${JSON.stringify(report, null, 2)}\n`;
    case 'yaml':
      return stringify(report);
    case 'wide':
      return renderTable(report, true);
    case 'table':
    case 'svg':
      return renderTable(report, false);
  }
}

/**
 * Re-reads every `intervalMs` until all is warm or the timeout passes: on a TTY redrawn in place,
 * elsewhere printed only when changed. `deadline` cuts a read short with the last report.
 */
export async function watch(
  source: StatusSource,
  args: { readonly output: StatusArgs['output']; readonly intervalMs: number },
  timeoutMs: number | undefined,
  io: Io,
  tty: boolean,
  deadline?: AbortSignal,
): Promise<StatusReport> {
  const started = Date.now();
  let last = '';
  let previous: StatusReport | undefined;
  // Set when the last sleep ran to the timeout: the read after it is the last. Date.now() is not
  // asked again then, since a timer may fire a millisecond before the wall clock says it is due.
  let atTimeout = false;
  for (;;) {
    let report: StatusReport;
    try {
      report = await source.read();
    } catch (err) {
      if (deadline?.aborted !== true) throw err;
      if (previous !== undefined) return previous;
      throw new CliError(`the cluster did not answer within --timeout (${(timeoutMs ?? 0) / 1000}s)`, ExitCode.Internal);
    }
    previous = report;
    const text = render(report, args.output);
    if (text !== last) {
      io.stdout(tty ? `\u001b[H\u001b[2J${text}` : `${text}\n`);
      last = text;
    }
    if (report.allWarm || atTimeout) return report;
    const left = timeoutMs === undefined ? Infinity : started + timeoutMs - Date.now();
    if (left <= 0) return report;
    atTimeout = left <= args.intervalMs;
    await new Promise((r) => setTimeout(r, Math.min(args.intervalMs, left)));
  }
}

/** Reads DaemonSets, their pods and the nodes through @kubernetes/client-node: three lists per read. */
async function clusterSource(o: KubeClientOptions & { readonly namespace?: string | undefined }): Promise<StatusSource> {
  const { namespace } = o;
  const { k8s, api } = await kubeClient(o);
  const apps = api(k8s.AppsV1Api);
  const core = api(k8s.CoreV1Api);
  const managed = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;
  return {
    async read() {
      try {
        const [daemonSets, pods, nodes] = await Promise.all([
          namespace === undefined
            ? apps.listDaemonSetForAllNamespaces({ labelSelector: managed })
            : apps.listNamespacedDaemonSet({ namespace, labelSelector: managed }),
          namespace === undefined
            ? core.listPodForAllNamespaces({ labelSelector: managed })
            : core.listNamespacedPod({ namespace, labelSelector: managed }),
          core.listNode(),
        ]);
        return buildReport(daemonSets.items, pods.items, nodes.items);
      } catch (err) {
        throw new CliError(`cannot read the cluster: ${apiFailure(err).message}`, ExitCode.Internal);
      }
    },
  };
}
