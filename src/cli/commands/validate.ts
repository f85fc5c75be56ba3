/**
 * `prewarm validate`: check specs without writing anything. It runs the whole synthesis with the
 * same options synth takes and throws the output away, so it refuses exactly what synth refuses.
 */
import type { Argv } from 'yargs';
import type { Io } from '../io.js';
import { unsizedText } from '../../imagecache/sizes.js';
import { loadSpecs, type SpecArgs } from '../specs.js';
import { specOptions } from './common.js';
import { synthOptions, synthWithoutWriting, toSynthOptions, type SynthOptionArgs } from './synth-options.js';

/** Registers the command. */
export function validateCommand(io: Io) {
  return {
    command: 'validate <paths..>',
    describe: 'Check ImageCache specs as synth would, with the same options; exit 1 with every problem when any is invalid',
    builder: (y: Argv) => synthOptions(specOptions(y)),
    handler: async (args: SpecArgs & SynthOptionArgs) => {
      const { bundle, imageCaches, lockFiles, unsized } = await loadSpecs(args, io);
      synthWithoutWriting(bundle, toSynthOptions(args, io), io);
      const images = bundle.pools.reduce((n, p) => n + p.images.length, 0);
      // Sizes are a hint: an image without one makes its pools split by count, never an error.
      for (const u of unsized) io.stderr(`hint: ${unsizedText(u)}\n`);
      const sized = lockFiles.length === 0 ? '' : `, sizes from ${lockFiles.join(', ')}`;
      io.stderr(`ok: ${imageCaches} ImageCaches, ${bundle.pools.length} pools, ${images} images${sized}\n`);
    },
  };
}
