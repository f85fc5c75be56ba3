/** Loading specs for a command: diagnostics to stderr, and the right exit code on failure. */
import { formatDiagnostics, formatSkipped, SpecError, type Skipped } from '../imagecache/errors.js';
import { plural } from '../text/plural.js';
import { loadBundle, type LoadResult } from '../imagecache/load.js';
import { CliError, ExitCode } from './exit-codes.js';
import type { Io } from './io.js';

/** Options every command that reads specs takes. */
export interface SpecArgs {
  readonly paths: readonly string[];
  readonly namespace: string;
}

/** Folders to leave out of the walk (the command's own output). */
export interface LoadExtras {
  readonly exclude?: readonly string[];
}

/**
 * Loads and validates every spec, printing warnings (and, on failure, every error) to stderr.
 * An input with no ImageCache at all is an error: an empty output would make a GitOps tool prune
 * everything prewarm ever applied.
 */
export async function loadSpecs(args: SpecArgs, io: Io, extras: LoadExtras = {}): Promise<LoadResult> {
  let result: LoadResult;
  try {
    result = await loadBundle(args.paths, { defaultNamespace: args.namespace, ...extras });
  } catch (err) {
    throw err instanceof SpecError ? invalidInput(err, io) : err;
  }
  for (const line of formatDiagnostics(result.warnings)) io.stderr(`${line}\n`);
  reportSkipped(result.skipped, io);
  if (result.imageCaches === 0) {
    throw new CliError(`no ImageCache found in ${args.paths.join(', ')}; refusing to produce empty output`, ExitCode.InvalidInput);
  }
  return result;
}

/** One line on stderr when anything was passed over, so a user can tell it was seen. */
function reportSkipped(skipped: Skipped, io: Io): void {
  const line = formatSkipped(skipped);
  if (line !== undefined) io.stderr(`${line}\n`);
}

/** Prints the diagnostics of `err` (and what was skipped) and returns the error that ends the run with exit 1. */
export function invalidInput(err: SpecError, io: Io): CliError {
  for (const line of formatDiagnostics(err.diagnostics)) io.stderr(`${line}\n`);
  reportSkipped(err.skipped, io);
  const errors = err.diagnostics.filter((d) => d.severity === 'error').length;
  return new CliError(`${plural(errors, 'error')} found; nothing was written`, ExitCode.InvalidInput);
}
