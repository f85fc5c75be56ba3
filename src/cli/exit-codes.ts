import { getSystemErrorMap } from 'node:util';

/** Process exit codes; each means one thing, so scripts and CI can branch on them. */
export enum ExitCode {
  /** Everything worked. */
  Success = 0,
  /** The input is invalid (or empty): fix the spec files. Nothing was written. */
  InvalidInput = 1,
  /** The command line is wrong: see `--help`. Nothing was read or written. */
  Usage = 2,
  /** The cluster is reachable but not in the state asked for: `status` with nodes not warm, `doctor` with an error finding. */
  NotReady = 3,
  /**
   * `pin`: an image could not be resolved to a digest (no such tag, missing or refused
   * credentials, registry unreachable or untrusted). Nothing was written.
   */
  Unresolved = 4,
  /** A failure outside the input: I/O, the cluster, or a bug. */
  Internal = 70,
}

/** An error that ends the command with a chosen exit code and a one-line message on stderr. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** A command-line mistake found by our own checks; reported like yargs' own usage errors. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** A failed system call (EACCES, ENOSPC, EROFS, ...) as Node reports it: a code and a syscall. */
export function isSystemError(err: unknown): err is NodeJS.ErrnoException & { code: string } {
  const e = err as NodeJS.ErrnoException | null;
  return err instanceof Error && typeof e?.code === 'string' && /^E[A-Z0-9]+$/.test(e.code) && typeof e.syscall === 'string';
}

/** The system's own words for a failed call, e.g. `permission denied (EACCES)`. */
export function systemReason(err: NodeJS.ErrnoException & { code: string }): string {
  const words = err.errno === undefined ? undefined : getSystemErrorMap().get(err.errno)?.[1];
  return words === undefined ? err.code : `${words} (${err.code})`;
}

/**
 * The one-line report of a plain I/O failure on `path` (exit 70): `cannot write dist: no space
 * left on device (ENOSPC)`. Any other error is returned as it is, so callers can wrap a whole step.
 */
export function asIoError(action: 'read' | 'write', path: string, err: unknown, after = ''): unknown {
  return isSystemError(err) ? new CliError(`cannot ${action} ${path}: ${systemReason(err)}${after}`, ExitCode.Internal) : err;
}
