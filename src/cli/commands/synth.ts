/** `prewarm synth`: specs → manifests, into a folder or onto stdout. */
import type { Argv } from 'yargs';
import { createApp, synthYaml } from '../../synth/app.js';
import { checkOutput, replaceDirectory } from '../output.js';
import type { Io } from '../io.js';
import { loadSpecs, type SpecArgs } from '../specs.js';
import { checkOptions, isPath, specOptions } from './common.js';
import { checkedSynth, synthOptions, toSynthOptions, type SynthOptionArgs } from './synth-options.js';

interface SynthArgs extends SpecArgs, SynthOptionArgs {
  readonly output?: string | undefined;
  readonly stdout?: boolean | undefined;
  readonly force?: boolean | undefined;
}

/** Registers the command. */
export function synthCommand(io: Io) {
  return {
    command: 'synth <paths..>',
    describe: 'Synthesize ImageCache specs into pull DaemonSets',
    builder: (y: Argv) =>
      synthOptions(checkOptions(specOptions(y), { output: isPath }))
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
        .conflicts('stdout', ['output', 'force'])
        .example('$0 synth specs/ -o dist', 'write one file per namespace into dist/')
        .example('$0 synth specs/ --stdout | kubectl apply --server-side -f -', 'apply directly')
        .example('$0 synth specs/ -o dist --own-namespace prewarm', 'prewarm owns (and restricts) namespace prewarm')
        .example('$0 synth specs/ -o dist --pod-monitor', 'also a PodMonitor per namespace for the Prometheus Operator')
        .example(
          '$0 synth specs/ -o dist --allow-gate-key startup-taint.cluster-autoscaler.kubernetes.io/',
          "let specs gate on the cluster autoscaler's start-up taints",
        ),
    handler: async (args: SynthArgs) => {
      const output = args.output ?? 'dist';
      const replace = { force: args.force === true, inputs: args.paths };
      if (args.stdout !== true) await checkOutput(output, replace);
      // The output folder may sit inside a spec folder (`prewarm synth . -o dist`): never read it.
      const { bundle } = await loadSpecs(args, io, args.stdout === true ? {} : { exclude: [output] });
      const options = toSynthOptions(args, io);
      if (args.stdout === true) {
        io.stdout(checkedSynth(() => synthYaml(bundle, options), io));
        return;
      }
      await replaceDirectory(output, (dir) => checkedSynth(() => createApp(bundle, options, dir), io).synth(), replace);
      const images = bundle.pools.reduce((n, p) => n + p.images.length, 0);
      io.stderr(`wrote ${bundle.pools.length} pools (${images} images) in ${bundle.namespaces.length} namespaces to ${output}\n`);
    },
  };
}
