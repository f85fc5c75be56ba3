/** `prewarm specs`: the spec files that hold an ImageCache, as synth reads them. */
import type { Argv } from 'yargs';
import { formatDiagnostics, type Diagnostic } from '../../imagecache/errors.js';
import { plural } from '../../text/plural.js';
import { excerpt, quote } from '../../text/quote.js';
import { readSources } from '../../imagecache/load.js';
import { imageCacheFiles } from '../../imagecache/parse.js';
import { CliError, ExitCode } from '../exit-codes.js';
import type { Io } from '../io.js';
import { checkOptions, isPath } from './common.js';

/** The longest file name printed; longer ones are cut and marked, as in messages. */
const MAX_LISTED_CHARS = 1000;

/** Registers the command. */
export function specsCommand(io: Io) {
  return {
    command: 'specs <paths..>',
    describe: 'List the files that hold an ImageCache, one per line, as synth reads them (nothing is validated)',
    builder: (y: Argv) =>
      checkOptions(
        y.positional('paths', {
          type: 'string',
          array: true,
          demandOption: true,
          describe: 'Spec files or folders (searched for *.yaml, *.yml)',
        }),
        { paths: isPath },
        ['paths'],
      ).example('$0 specs .', 'what `prewarm synth .` would read'),
    handler: async (args: { readonly paths: readonly string[] }) => {
      const diagnostics: Diagnostic[] = [];
      const files = imageCacheFiles(await readSources(args.paths, diagnostics));
      for (const line of formatDiagnostics(diagnostics)) io.stderr(`${line}\n`);
      // File names come from the repository: escaped, so each is one line that holds no terminal escape.
      for (const file of files) io.stdout(`${excerpt(file, MAX_LISTED_CHARS)}\n`);
      const unreadable = diagnostics.filter((d) => d.severity === 'error').length;
      if (unreadable > 0) throw new CliError(`${plural(unreadable, 'path')} could not be read`, ExitCode.InvalidInput);
      if (files.length === 0) {
        throw new CliError(`no ImageCache found in ${args.paths.map((p) => quote(p)).join(', ')}`, ExitCode.InvalidInput);
      }
    },
  };
}
