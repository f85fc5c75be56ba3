/** `prewarm validate`: check specs without writing anything. */
import type { Argv } from 'yargs';
import type { Io } from '../io.js';
import { loadSpecs, type SpecArgs } from '../specs.js';
import { specOptions } from './common.js';

/** Registers the command. */
export function validateCommand(io: Io) {
  return {
    command: 'validate <paths..>',
    describe: 'Check ImageCache specs; exit 1 with every problem when any is invalid',
    builder: (y: Argv) => specOptions(y),
    handler: async (args: SpecArgs) => {
      const { bundle, imageCaches } = await loadSpecs(args, io);
      const images = bundle.pools.reduce((n, p) => n + p.images.length, 0);
      io.stderr(`ok: ${imageCaches} ImageCaches, ${bundle.pools.length} pools, ${images} images\n`);
    },
  };
}
