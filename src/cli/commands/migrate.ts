/** `prewarm migrate`: kube-fledged ImageCaches → prewarm.dev files that place images the same way. */
import type { Argv } from 'yargs';
import { InPlaceError, migrateObjects, migrateText, readClusterObjects, type MigratedText } from '../../migrate/fledged.js';
import { buildBundle } from '../../imagecache/bundle.js';
import { formatDiagnostics } from '../../imagecache/errors.js';
import { plural } from '../../text/plural.js';
import { readSources } from '../../imagecache/load.js';
import type { Diagnostic } from '../../imagecache/errors.js';
import { parseFiles, type SourceFile } from '../../imagecache/parse.js';
import { apiFailure } from '../api-failure.js';
import { CliError, ExitCode, UsageError } from '../exit-codes.js';
import type { Io } from '../io.js';
import { kubeClient } from '../kube.js';
import { readEditable, writeAll, type EditableFile } from '../rewrite.js';
import { checkOptions, durationMs, fromClusterOptions, isPath } from './common.js';

interface MigrateArgs {
  readonly paths?: readonly string[] | undefined;
  readonly fromCluster?: boolean | undefined;
  readonly write?: boolean | undefined;
  readonly context?: string | undefined;
  readonly requestTimeout: string;
}

/** Registers the command. */
export function migrateCommand(io: Io) {
  return {
    command: 'migrate [paths..]',
    describe: 'Convert kube-fledged ImageCaches (files, or --from-cluster) into prewarm.dev ImageCaches',
    builder: (y: Argv) =>
      fromClusterOptions(
        checkOptions(
          y.positional('paths', { type: 'string', array: true, describe: 'kube-fledged spec files or folders' }),
          { paths: isPath },
          ['paths'],
        ),
        'kubefledged.io/v1alpha2 ImageCaches',
      )
        .option('write', { type: 'boolean', describe: 'Rewrite the files in place, keeping comments, instead of printing' })
        .conflicts('from-cluster', 'write')
        .example('$0 migrate specs/', 'print the converted specs')
        .example('$0 migrate specs/ --write', 'convert in place; review with git diff')
        .example('$0 migrate --from-cluster > specs/migrated.yaml', 'export what a cluster runs today'),
    handler: async (args: MigrateArgs) => {
      const paths = args.paths ?? [];
      if (args.fromCluster === true) {
        if (paths.length > 0) throw new UsageError('give either paths or --from-cluster, not both');
        io.stdout(await fromCluster(args.context, durationMs(args.requestTimeout)));
        io.stderr(HELPER_NOTE);
        return;
      }
      if (paths.length === 0) throw new UsageError('name kube-fledged spec files or folders, or use --from-cluster');
      await fromFiles(paths, args.write === true, io);
    },
  };
}

async function fromFiles(paths: readonly string[], write: boolean, io: Io): Promise<void> {
  const diagnostics: Diagnostic[] = [];
  const files = await readSources(paths, diagnostics);
  const before = parseFiles(files);
  for (const d of before.diagnostics) diagnostics.push(d);
  report(diagnostics, io);
  // Read again as bytes to be kept (see rewrite.ts): the loader's text has U+FFFD for non-UTF-8 bytes.
  const editable = await Promise.all(files.map((f) => readEditable(f.path)));
  const changes = editable.map((file) => ({ file, ...convert(file) }));
  const count = changes.reduce((n, c) => n + c.converted, 0);
  if (count === 0) throw new CliError(`no kubefledged.io/v1alpha2 ImageCache found in ${paths.join(', ')}`, ExitCode.InvalidInput);
  checkSamePlacement(
    editable,
    changes.map((c) => ({ path: c.file.path, text: c.text })),
  );
  if (write) {
    const written = await writeAll(changes);
    io.stderr(`converted ${count} ImageCaches in place, in ${written} file(s)\n`);
  } else {
    io.stdout(changes.map((c) => c.text.replace(/\n*$/, '\n')).join('---\n'));
    io.stderr(`converted ${count} ImageCaches\n`);
  }
  io.stderr(HELPER_NOTE);
}

/**
 * kube-fledged's busybox image is its controller's setting, so no spec carries it over; prewarm's
 * counterpart is the synth invocation's, and a spec that names one is refused.
 */
const HELPER_NOTE =
  "note: kube-fledged's busybox image (its controller's BUSYBOX_IMAGE) is not part of a spec; prewarm's is set where synth runs, " +
  "with prewarm synth --helper-image (or the Argo CD plugin's PREWARM_PLUGIN_HELPER_IMAGE), never in a spec\n";

function convert(file: EditableFile): MigratedText {
  try {
    return migrateText(file.text);
  } catch (err) {
    if (err instanceof InPlaceError)
      throw new CliError(`cannot convert ${file.path}: ${err.message}; nothing was converted`, ExitCode.Internal);
    throw err;
  }
}

/**
 * The promise of migration, checked on every run: the converted specs make exactly the pools
 * (namespace, selector, tolerations) and images that the originals do.
 */
function checkSamePlacement(before: readonly SourceFile[], after: readonly SourceFile[]): void {
  const placement = (files: readonly SourceFile[]) => {
    const parsed = parseFiles(files);
    const errors = parsed.diagnostics.filter((d) => d.severity === 'error');
    if (errors.length > 0) throw new CliError(`converted output is invalid:\n${formatDiagnostics(errors).join('\n')}`, ExitCode.Internal);
    return JSON.stringify(
      buildBundle(parsed.caches).bundle.pools.map((p) => [p.key, p.images.map((i) => i.canonical), p.imagePullSecrets]),
    );
  };
  if (placement(before) !== placement(after))
    throw new CliError('converted specs would place images differently; nothing was written', ExitCode.Internal);
}

async function fromCluster(context: string | undefined, requestTimeoutMs: number): Promise<string> {
  const client = await kubeClient({ context, requestTimeoutMs });
  const api = client.api(client.k8s.CustomObjectsApi);
  let list: unknown;
  try {
    list = await api.listClusterCustomObject({ group: 'kubefledged.io', version: 'v1alpha2', plural: 'imagecaches' });
  } catch (err) {
    throw new CliError(`cannot list kubefledged.io/v1alpha2 imagecaches: ${apiFailure(err).message}`, ExitCode.Internal);
  }
  const read = readClusterObjects((list as { items?: unknown } | null)?.items);
  invalidClusterObjects(read.diagnostics);
  if (read.objects.length === 0) throw new CliError('the cluster has no kubefledged.io/v1alpha2 ImageCache', ExitCode.InvalidInput);
  const yaml = migrateObjects(read.objects);
  invalidClusterObjects(parseFiles([{ path: '<converted>', text: yaml }]).diagnostics.filter((d) => d.severity === 'error'));
  return yaml;
}

/** Ends the run (exit 1) when the cluster's ImageCaches cannot be converted: every error, capped as validate caps them. */
function invalidClusterObjects(errors: readonly Diagnostic[]): void {
  if (errors.length === 0) return;
  throw new CliError(
    `${plural(errors.length, 'error')} in the cluster's ImageCaches; nothing was converted:\n${formatDiagnostics(errors).join('\n')}`,
    ExitCode.InvalidInput,
  );
}

/** Prints the diagnostics, at most as many as validate shows, and ends the run on an error. */
function report(diagnostics: readonly Diagnostic[], io: Io): void {
  for (const line of formatDiagnostics(diagnostics)) io.stderr(`${line}\n`);
  const errors = diagnostics.filter((d) => d.severity === 'error').length;
  if (errors > 0) throw new CliError(`${plural(errors, 'error')} found; nothing was converted`, ExitCode.InvalidInput);
}
