/** `prewarm synth`: specs → manifests, into a folder or onto stdout. */
import type { Argv } from 'yargs';
import { formatDiagnostic, SpecError } from '../../imagecache/errors.js';
import { createApp, synthYaml, type SynthOptions } from '../../synth/app.js';
import { ownedNamespaceError } from '../../synth/charts.js';
import { DEFAULT_RECONCILER_IMAGE } from '../../version.js';
import { checkOutput, replaceDirectory } from '../output.js';
import { UsageError } from '../exit-codes.js';
import type { Io } from '../io.js';
import { invalidInput, loadSpecs, type SpecArgs } from '../specs.js';
import { checkOptions, isImage, isPath, specOptions } from './common.js';

interface SynthArgs extends SpecArgs {
  readonly output?: string | undefined;
  readonly stdout?: boolean | undefined;
  readonly reconciler: boolean;
  readonly reconcilerImage: string;
  readonly force?: boolean | undefined;
  readonly ownNamespace?: readonly string[] | undefined;
  readonly podMonitor?: boolean | undefined;
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

/** Registers the command. */
export function synthCommand(io: Io) {
  return {
    command: 'synth <paths..>',
    describe: 'Synthesize ImageCache specs into pull DaemonSets',
    builder: (y: Argv) =>
      checkOptions(specOptions(y), { output: isPath, 'reconciler-image': isImage })
        .option('output', {
          alias: 'o',
          type: 'string',
          describe: 'Folder to write, replaced only on success, and only if it is empty or a previous prewarm output [default: dist]',
        })
        .option('force', {
          type: 'boolean',
          describe: 'Replace the output folder even if it holds files prewarm did not write (never an input)',
        })
        .option('stdout', { type: 'boolean', describe: 'Print one YAML stream to stdout instead' })
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
        .conflicts('stdout', ['output', 'force'])
        .check((argv) => {
          if (argv['pod-monitor'] === true && !argv.reconciler)
            throw new UsageError('--pod-monitor needs the sidecar: without it there are no metrics to scrape (drop --no-reconciler)');
          return true;
        })
        .example('$0 synth specs/ -o dist', 'write one file per namespace into dist/')
        .example('$0 synth specs/ --stdout | kubectl apply --server-side -f -', 'apply directly')
        .example('$0 synth specs/ -o dist --own-namespace prewarm', 'prewarm owns (and restricts) namespace prewarm')
        .example('$0 synth specs/ -o dist --pod-monitor', 'also a PodMonitor per namespace for the Prometheus Operator'),
    handler: async (args: SynthArgs) => {
      const output = args.output ?? 'dist';
      const replace = { force: args.force === true, inputs: args.paths };
      if (args.stdout !== true) await checkOutput(output, replace);
      // The output folder may sit inside a spec folder (`prewarm synth . -o dist`): never read it.
      const { bundle } = await loadSpecs(args, io, args.stdout === true ? {} : { exclude: [output] });
      const options: SynthOptions = {
        ...(args.reconciler ? { reconciler: { image: args.reconcilerImage } } : {}),
        ...(args.ownNamespace === undefined ? {} : { ownedNamespaces: args.ownNamespace }),
        ...(args.podMonitor === true ? { podMonitor: true } : {}),
        onWarning: (d) => io.stderr(`${formatDiagnostic(d)}\n`),
      };
      // Synth refuses output the apiserver would refuse (SpecError): that is invalid input, exit 1.
      const checked = <T>(make: () => T): T => {
        try {
          return make();
        } catch (err) {
          throw err instanceof SpecError ? invalidInput(err, io) : err;
        }
      };
      if (args.stdout === true) {
        io.stdout(checked(() => synthYaml(bundle, options)));
        return;
      }
      await replaceDirectory(output, (dir) => checked(() => createApp(bundle, options, dir)).synth(), replace);
      const images = bundle.pools.reduce((n, p) => n + p.images.length, 0);
      io.stderr(`wrote ${bundle.pools.length} pools (${images} images) in ${bundle.namespaces.length} namespaces to ${output}\n`);
    },
  };
}
