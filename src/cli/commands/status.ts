/**
 * `prewarm status`: pools and nodes, warm or not, read from the cluster; exit 0 only when all warm.
 * `prewarm status --node NODE`: that node's warm-up as a timeline (src/status/timeline.ts).
 */
import type { Argv } from 'yargs';
import { stringify } from 'yaml';
import { parseDuration } from '../../imagecache/duration.js';
import { buildReport, renderTable, type StatusFormat, type StatusReport } from '../../status/report.js';
import { buildTimeline, type Timeline, type TimelineEvent } from '../../status/timeline.js';
import { renderTimelineSvg, renderTimelineText } from '../../status/timeline-render.js';
import { EVENTS_NAMESPACE, LABEL_MANAGED_BY, MANAGED_BY } from '../../contract/names.js';
import { CliError, ExitCode, UsageError } from '../exit-codes.js';
import type { Io } from '../io.js';
import { kubeClient } from '../kube.js';
import { checkOptions, isNamespace } from './common.js';

interface StatusArgs {
  readonly output: StatusFormat | 'svg';
  readonly node?: string | undefined;
  readonly watch?: boolean | undefined;
  readonly timeout?: string | undefined;
  readonly interval: number;
  readonly context?: string | undefined;
  readonly namespace?: string | undefined;
}

/** How `status` reads the cluster; a port so tests can count and fake calls. */
export interface StatusSource {
  read(): Promise<StatusReport>;
}

/** The default of `--output`, typed so yargs infers the choices and not a plain string. */
const DEFAULT_FORMAT: StatusFormat = 'table';

/** Registers the command. */
export function statusCommand(io: Io, isTty: () => boolean = () => process.stdout.isTTY) {
  return {
    command: 'status',
    describe: 'Show desired and warm nodes per pool, and failing images per node; exit 3 unless all are warm',
    builder: (y: Argv) =>
      checkOptions(y, { namespace: isNamespace })
        .option('output', {
          alias: 'o',
          choices: ['table', 'wide', 'json', 'yaml', 'svg'] as const,
          default: DEFAULT_FORMAT,
          describe: 'Output format (svg: only with --node)',
        })
        .option('node', { type: 'string', describe: "One node's warm-up as a timeline: pods, pulls, warm, the taint removed" })
        .option('watch', { alias: 'w', type: 'boolean', describe: 'Keep watching until every node is warm (or --timeout)' })
        .option('timeout', { type: 'string', describe: 'With --watch: give up after this long, e.g. 15m or 1h30m' })
        .option('interval', { type: 'number', default: 2, describe: 'With --watch: seconds between reads' })
        .option('context', { type: 'string', describe: 'kubeconfig context' })
        .option('namespace', { alias: 'n', type: 'string', describe: 'Only pools in this namespace' })
        .example('$0 status -o wide', 'every node of every pool')
        .example('$0 status --watch --timeout 15m', 'CI gate: wait until warm')
        .example('$0 status --node gpu-node-1', "one node's warm-up, bars scaled to time"),
    handler: async (args: StatusArgs) => {
      if (args.node !== undefined) {
        if (args.watch === true) throw new UsageError('--node shows one timeline; it does not --watch');
        const timeline = await readTimeline(args.node, args.context, args.namespace);
        io.stdout(renderTimeline(timeline, args.output, process.stdout.columns));
        return;
      }
      if (args.output === 'svg') throw new UsageError('-o svg draws one node: use it with --node');
      const timeoutMs = args.timeout === undefined ? undefined : parseTimeout(args.timeout);
      const source = await clusterSource(args.context, args.namespace);
      const report = args.watch === true ? await watch(source, args, timeoutMs, io, isTty()) : await source.read();
      if (args.watch !== true) io.stdout(render(report, args.output));
      if (!report.allWarm) throw new CliError('not every node is warm', ExitCode.NotReady);
    },
  };
}

/** `--timeout` in milliseconds, written as the specs write durations (`90s`, `15m`, `1h30m`). */
export function parseTimeout(text: string): number {
  const parsed = parseDuration(text);
  if ('error' in parsed) throw new UsageError(`--timeout: ${parsed.error}`);
  return parsed.seconds * 1000;
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

/**
 * Reads what one node's timeline needs: the node, prewarm's pods on it, prewarm's DaemonSets, and
 * the Events of their namespaces and of the sidecars (about the node): 3 + one list per namespace.
 */
async function readTimeline(node: string, context: string | undefined, namespace: string | undefined): Promise<Timeline> {
  const { k8s, config } = await kubeClient(context);
  const apps = config.makeApiClient(k8s.AppsV1Api);
  const core = config.makeApiClient(k8s.CoreV1Api);
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
    throw new CliError(`cannot read the cluster: ${(err as Error).message}`, ExitCode.Internal);
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
 * Re-reads every `interval` seconds until all is warm or the timeout passes. On a TTY the screen
 * is redrawn in place; otherwise a new report is printed only when it changed, so logs stay short.
 */
export async function watch(
  source: StatusSource,
  args: Pick<StatusArgs, 'output' | 'interval'>,
  timeoutMs: number | undefined,
  io: Io,
  tty: boolean,
): Promise<StatusReport> {
  const started = Date.now();
  let last = '';
  for (;;) {
    const report = await source.read();
    const text = render(report, args.output);
    if (text !== last) {
      io.stdout(tty ? `\u001b[H\u001b[2J${text}` : `${text}\n`);
      last = text;
    }
    if (report.allWarm) return report;
    if (timeoutMs !== undefined && Date.now() - started >= timeoutMs) return report;
    await new Promise((r) => setTimeout(r, Math.max(0.1, args.interval) * 1000));
  }
}

/** Reads DaemonSets, their pods and the nodes through @kubernetes/client-node: three lists per read. */
async function clusterSource(context: string | undefined, namespace: string | undefined): Promise<StatusSource> {
  const { k8s, config } = await kubeClient(context);
  const apps = config.makeApiClient(k8s.AppsV1Api);
  const core = config.makeApiClient(k8s.CoreV1Api);
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
        throw new CliError(`cannot read the cluster: ${(err as Error).message}`, ExitCode.Internal);
      }
    },
  };
}
