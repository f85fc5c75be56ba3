/**
 * `prewarm discover`: which images each pool should hold, from the workloads that can run on all of
 * its nodes (rendered manifests, or a live cluster read-only), as a plan, a check or an edit of the
 * spec files in place. The rules are in docs/discover.md; the core is src/discover/.
 */
import type { Argv } from 'yargs';
import { readWorkloads, type ManifestResult } from '../../discover/manifests.js';
import { planDiscover, type Plan, type SpecImage } from '../../discover/plan.js';
import { renderPlan, renderPlanJson } from '../../discover/render.js';
import { addImages, entryImages, removeImages, type EntryImage } from '../../imagecache/entry-edit.js';
import { formatDiagnostics, type Diagnostic } from '../../imagecache/errors.js';
import { MANIFEST_FILE, readSources } from '../../imagecache/load.js';
import type { Bundle } from '../../imagecache/model.js';
import { buildBundle } from '../../imagecache/bundle.js';
import { DEFAULT_NAMESPACE, parseFiles, type SourceFile } from '../../imagecache/parse.js';
import { plural } from '../../text/plural.js';
import { CliError, ExitCode, UsageError } from '../exit-codes.js';
import type { Io } from '../io.js';
import { readEditable, writeAll, type FileChange } from '../rewrite.js';
import { loadSpecs } from '../specs.js';
import { readClusterWorkloads } from '../cluster-workloads.js';
import { checkOptions, durationMs, fromClusterOptions, isNamespace, isPath } from './common.js';
import { synthOptions, synthWithoutWriting, toSynthOptions, type SynthOptionArgs } from './synth-options.js';

interface DiscoverArgs extends SynthOptionArgs {
  readonly paths?: readonly string[] | undefined;
  readonly specs: readonly string[];
  readonly namespace: string;
  readonly manifestNamespace: string;
  readonly fromCluster?: boolean | undefined;
  readonly context?: string | undefined;
  readonly requestTimeout: string;
  readonly write?: boolean | undefined;
  readonly check?: boolean | undefined;
  readonly output: 'text' | 'json';
  readonly partial?: boolean | undefined;
  readonly prune?: boolean | undefined;
  readonly includeDaemonsets?: boolean | undefined;
  readonly includeSystemNamespaces?: boolean | undefined;
  readonly showHeld?: boolean | undefined;
}

const DEFAULT_FORMAT = 'text' as 'text' | 'json';

/** Registers the command. */
export function discoverCommand(io: Io) {
  return {
    command: 'discover [paths..]',
    describe:
      'Find the images each pool should hold from the workloads that can run on its nodes; print, check or write them into the specs',
    builder: (y: Argv) =>
      fromClusterOptions(
        synthOptions(
          checkOptions(y, { namespace: isNamespace, 'manifest-namespace': isNamespace, specs: isPath, paths: isPath }, ['specs', 'paths']),
        ),
        'the workloads',
      )
        .positional('paths', { type: 'string', array: true, describe: 'Rendered manifests: files or folders (*.yaml, *.yml, *.json)' })
        .option('specs', { type: 'string', array: true, demandOption: true, describe: 'Spec files or folders (the pools)' })
        .option('namespace', {
          alias: 'n',
          type: 'string',
          default: DEFAULT_NAMESPACE,
          describe: 'Namespace for ImageCaches that name none',
        })
        .option('manifest-namespace', { type: 'string', default: 'default', describe: 'Namespace for workloads whose manifest names none' })
        .option('write', { type: 'boolean', describe: 'Edit the spec files in place, keeping their formatting' })
        .option('check', { type: 'boolean', describe: 'Exit 1 when --write would change anything (CI)' })
        .option('output', { alias: 'o', choices: ['text', 'json'] as const, default: DEFAULT_FORMAT, describe: 'Plan format' })
        .option('partial', { type: 'boolean', describe: 'Also add the images of workloads that fit only part of a pool' })
        .option('prune', { type: 'boolean', describe: 'Also remove images no workload uses (never those marked prewarm:keep)' })
        .option('include-daemonsets', { type: 'boolean', describe: 'Add the images of DaemonSets too' })
        .option('include-system-namespaces', { type: 'boolean', describe: "Add workloads in kube-system and prewarm's own namespaces too" })
        .option('show-held', { type: 'boolean', describe: 'List the images pools already hold' })
        .conflicts('write', 'check')
        .example('$0 discover rendered/ --specs specs/', 'print the plan')
        .example('$0 discover rendered/ --specs specs/ --check', 'CI: exit 1 when the specs lag the workloads')
        .example('$0 discover --from-cluster --specs specs/ --write', 'adopt prewarm on a running cluster'),
    handler: async (args: DiscoverArgs) => {
      const fromFiles = (args.paths ?? []).length > 0;
      if (fromFiles === (args.fromCluster === true))
        throw new UsageError('name rendered manifests (paths) or --from-cluster, one of the two');
      const { bundle } = await loadSpecs({ paths: args.specs, namespace: args.namespace }, io);
      const manifests = fromFiles
        ? await readManifests(args.paths ?? [], args.manifestNamespace, io)
        : await readClusterWorkloads({ context: args.context, requestTimeoutMs: durationMs(args.requestTimeout) });
      const specFiles = await readSources(args.specs, []);
      const sites = specFiles.flatMap((f) => entryImages(f.text, f.path));
      const plan = planDiscover(bundle, manifests.workloads, manifests.others, specImagesByPool(bundle, sites), {
        daemonSets: args.includeDaemonsets === true,
        systemNamespaces: args.includeSystemNamespaces === true,
        held: args.showHeld === true,
        partial: args.partial === true,
        prune: args.prune === true,
      });
      io.stdout(args.output === 'json' ? renderPlanJson(plan) : renderPlan(plan, { partial: args.partial === true }));
      if (args.check === true && plan.changes)
        throw new CliError('the specs are not in step with the workloads: run with --write', ExitCode.InvalidInput);
      if (args.write !== true) return;
      const changes = await editSpecs(
        plan,
        sites,
        specFiles.map((f) => f.path),
      );
      verify(changes, specFiles, args, io);
      const written = await writeAll(changes);
      io.stderr(`wrote ${plural(written, 'spec file')}\n`);
    },
  };
}

/** Reads rendered manifests through the spec loader's bounds and link rules; errors end the run. */
async function readManifests(paths: readonly string[], namespace: string, io: Io): Promise<ManifestResult> {
  const diagnostics: Diagnostic[] = [];
  const files = await readSources(paths, diagnostics, [], MANIFEST_FILE);
  const result = readWorkloads(files, { defaultNamespace: namespace });
  for (const d of result.diagnostics) diagnostics.push(d);
  for (const line of formatDiagnostics(diagnostics)) io.stderr(`${line}\n`);
  const errors = diagnostics.filter((d) => d.severity === 'error').length;
  if (errors > 0) throw new CliError(`${plural(errors, 'error')} in the manifests; nothing was written`, ExitCode.InvalidInput);
  return result;
}

/** The images written in the specs, by the pool whose entry holds them. */
function specImagesByPool(bundle: Bundle, sites: readonly EntryImage[]): Map<string, SpecImage[]> {
  const out = new Map<string, SpecImage[]>();
  for (const pool of bundle.pools) {
    const mine = sites.filter((s) =>
      pool.origins.some(
        (o) =>
          o.location.file === s.location.file &&
          o.location.document === s.location.document &&
          s.location.path.startsWith(`${o.location.path}.images[`),
      ),
    );
    out.set(pool.id, mine);
  }
  return out;
}

/** The new text of every spec file the plan changes: removals first, then additions, one entry at a time. */
async function editSpecs(plan: Plan, sites: readonly EntryImage[], files: readonly string[]): Promise<FileChange[]> {
  const changes: FileChange[] = [];
  for (const path of files) {
    const removing = plan.pools.flatMap((p) => p.remove).filter((r) => r.location.file === path);
    const adding = plan.pools.filter((p) => p.add.length > 0 && p.target.file === path);
    if (removing.length === 0 && adding.length === 0) continue;
    const file = await readEditable(path);
    const at = (r: SpecImage) => sites.find((s) => s.location === r.location) as EntryImage;
    let text = removeImages(file.text, removing.map(at));
    for (const p of adding) {
      if (typeof text !== 'string') break;
      text = addImages(
        text,
        p.target,
        p.add.map((a) => a.text),
      );
    }
    if (typeof text !== 'string')
      throw new CliError(`cannot edit ${path} in place: ${text.problem}; nothing was written`, ExitCode.InvalidInput);
    changes.push({ file, text });
  }
  return changes;
}

/** The edited specs must read and synthesize as they are; otherwise nothing is written. */
function verify(changes: readonly FileChange[], files: readonly SourceFile[], args: DiscoverArgs, io: Io): void {
  const texts = new Map(changes.map((c) => [c.file.path, c.text]));
  const sources = files.map((f) => ({ path: f.path, text: texts.get(f.path) ?? f.text }));
  const parsed = parseFiles(sources, { defaultNamespace: args.namespace });
  const grouped = buildBundle(parsed.caches);
  const errors = [...parsed.diagnostics, ...grouped.diagnostics].filter((d) => d.severity === 'error');
  if (errors.length > 0) {
    for (const line of formatDiagnostics(errors)) io.stderr(`${line}\n`);
    throw new CliError('the edited specs would be invalid; nothing was written', ExitCode.InvalidInput);
  }
  synthWithoutWriting(grouped.bundle, toSynthOptions(args, io), io);
}
