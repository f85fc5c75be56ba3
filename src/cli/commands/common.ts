/** Options shared by the commands that read specs. */
import type { Argv } from 'yargs';
import { DEFAULT_NAMESPACE } from '../../imagecache/parse.js';

/** `<paths..>` plus `--namespace`, the namespace for ImageCaches whose metadata names none. */
export function specOptions(y: Argv) {
  return y
    .positional('paths', { type: 'string', array: true, demandOption: true, describe: 'Spec files or folders (searched for *.yaml, *.yml)' })
    .option('namespace', {
      alias: 'n',
      type: 'string',
      default: DEFAULT_NAMESPACE,
      describe: 'Namespace for ImageCaches that name none',
    });
}
