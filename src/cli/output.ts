/**
 * All-or-nothing output: a synth writes into a fresh temporary folder beside the target and only
 * a complete result is moved into place, so a failed run leaves the previous output untouched
 * and a reader (Argo CD, a CI upload) never sees half a bundle.
 *
 * Only a previous prewarm output is ever replaced (see output-marker.ts): a target that holds
 * anything else, that is a file, or that is or holds an input is refused, so a typo in `-o` cannot
 * delete a user's work.
 *
 * The output path usually lies in a checkout, which is untrusted: a committed link `dist -> /etc`
 * must not make synth write or delete there. So a link on the way to the target is followed only
 * while it stays inside the folder it lies in or inside the current directory, unless the invoker
 * asks for it ({@link ReplaceOptions.followLinks}).
 */
import { randomBytes } from 'node:crypto';
import { lstatSync, renameSync, rmSync } from 'node:fs';
import { chmod, chown, lstat, mkdir, readlink, realpath, rename, rm, stat } from 'node:fs/promises';
import { constants } from 'node:os';
import { basename, dirname, join, parse, relative, resolve, sep } from 'node:path';
import { asIoError, CliError, ExitCode } from './exit-codes.js';
import { inspectOutput, writeOutputMarker } from './output-marker.js';
import { excerpt } from '../text/quote.js';

/** The longest file name a refusal shows; longer ones are cut and marked. */
const MAX_NAME_CHARS = 200;

/** Options of {@link replaceDirectory}. */
export interface ReplaceOptions {
  /**
   * Replace a folder even when it holds files prewarm did not write. Never overrides the refusal
   * of a file or of a folder that is or holds an input.
   * @default false
   */
  readonly force?: boolean;
  /**
   * Paths the run reads (spec files and folders): the target may lie inside one of them, but may
   * neither be one nor hold one.
   * @default - none
   */
  readonly inputs?: readonly string[];
  /**
   * Follow links on the way to the target wherever they lead. Without it, a link that leaves both
   * the folder it lies in and the current directory is refused: a checkout must not choose where
   * synth writes and deletes. Only the invoker can set it (`--follow-output-link`), never a spec.
   * @default false
   */
  readonly followLinks?: boolean;
}

/**
 * Runs `write` against a temporary folder, adds the output marker, then replaces `target` with
 * it. The temporary folder sits next to the target, on the same file system, so the final step is
 * a rename. Between the two renames the target is briefly absent; it is never partly written.
 * The folder keeps the mode and owner it had (a new one gets the umask's), and a target that is a
 * link stays one: the folder it leads to is replaced, when the link may be followed. Throws
 * {@link CliError} (exit 1) when the target is in the way, before anything is written. SIGINT and
 * SIGTERM meanwhile remove the temporary folder, put the old output back, and end the process
 * (exit 130 and 143, as a shell reports them).
 */
export async function replaceDirectory(
  target: string,
  write: (dir: string) => Promise<void> | void,
  options: ReplaceOptions = {},
): Promise<void> {
  await writing(target, () => replace(target, write, options));
}

/**
 * Runs `step`, reporting a failed system call as `cannot write <target>: …`: the folder asked
 * for, not the temporary one beside it that the call named.
 */
async function writing(target: string, step: () => Promise<void>): Promise<void> {
  try {
    await step();
  } catch (err) {
    throw asIoError('write', target, err);
  }
}

async function replace(target: string, write: (dir: string) => Promise<void> | void, options: ReplaceOptions): Promise<void> {
  await check(target, options);
  const real = await followLinks(target, options.followLinks === true);
  await makeFolders(dirname(real));
  const previous = await stat(real).catch(() => undefined);
  const tmp = sibling(real, 'tmp');
  const old = previous === undefined ? undefined : sibling(real, 'old');
  // Undone synchronously: a signal handler cannot wait for promises.
  const release = onStop(() => {
    // Between the two renames the old output is put back; after them, what is left of it goes.
    if (old !== undefined && exists(old)) {
      if (exists(real)) rmSync(old, { recursive: true, force: true });
      else renameSync(old, real);
    }
    rmSync(tmp, { recursive: true, force: true });
  });
  try {
    // mkdir, not mkdtemp (0700): the umask applies, and an existing folder's own mode wins over it.
    await mkdir(tmp);
    try {
      if (previous !== undefined) {
        // Run as root, the new folder would belong to root; chown first, as it may clear set-id bits.
        if (process.getuid?.() === 0 && (previous.uid !== 0 || previous.gid !== 0)) await chown(tmp, previous.uid, previous.gid);
        await chmod(tmp, previous.mode & 0o7777);
      }
      await write(tmp);
      await writeOutputMarker(tmp);
      // Checked again just before the swap: something may have been put there while we wrote.
      await check(target, options);
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      throw err;
    }
    if (old !== undefined) await rename(real, old);
    try {
      await rename(tmp, real);
    } catch (err) {
      if (old !== undefined) await rename(old, real);
      await rm(tmp, { recursive: true, force: true });
      throw err;
    }
    if (old !== undefined) await rm(old, { recursive: true, force: true });
  } finally {
    release();
  }
}

/** Undo steps of runs in progress, run when SIGINT or SIGTERM asks the process to stop. */
const pending = new Set<() => void>();

function stopSignal(signal: NodeJS.Signals): void {
  for (const undo of pending) {
    try {
      undo();
    } catch {
      // Keep undoing the others; the process is ending either way.
    }
  }
  // A handler replaces the default action, so the process must end itself, with the status a
  // shell gives a process the signal killed.
  process.exit(128 + constants.signals[signal]);
}

/** Registers `undo` until the returned function is called. */
function onStop(undo: () => void): () => void {
  if (pending.size === 0) {
    process.on('SIGINT', stopSignal);
    process.on('SIGTERM', stopSignal);
  }
  pending.add(undo);
  return () => {
    if (!pending.delete(undo) || pending.size > 0) return;
    process.off('SIGINT', stopSignal);
    process.off('SIGTERM', stopSignal);
  };
}

function exists(path: string): boolean {
  return lstatSync(path, { throwIfNoEntry: false }) !== undefined;
}

/**
 * `mkdir -p`, reporting why a folder cannot be made: Node's recursive mkdir says ENOENT for
 * every failure below a missing folder, also on a read-only file system (EROFS) or without
 * permission (EACCES).
 */
async function makeFolders(path: string): Promise<void> {
  const missing: string[] = [];
  for (let dir = path; !exists(dir); dir = dirname(dir)) {
    missing.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  for (const dir of missing) {
    await mkdir(dir).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    });
  }
}

/**
 * Refuses (with {@link CliError}, exit 1) a target that is a file, is or holds an input, or holds
 * what prewarm did not write. Commands call it before reading their input too, so a wrong `-o`
 * is reported as such and not as whatever the input looks like without it.
 */
export async function checkOutput(target: string, options: ReplaceOptions = {}): Promise<void> {
  await writing(target, () => check(target, options));
}

async function check(target: string, options: ReplaceOptions): Promise<void> {
  const refuse = (why: string) => new CliError(`refusing to write ${target}: ${why}; nothing was written`, ExitCode.InvalidInput);
  const real = await followLinks(target, options.followLinks === true);
  for (const input of options.inputs ?? []) {
    const inputReal = await realOrResolved(resolve(input));
    if (inputReal === real) throw refuse(`it is the input ${input}`);
    if (inputReal.startsWith(real + sep)) throw refuse(`it holds the input ${input}`);
  }
  const info = await stat(real).catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  });
  if (info === undefined) return;
  if (!info.isDirectory()) throw refuse('it is a file, not a folder');
  const contents = await inspectOutput(real);
  if (contents.kind !== 'foreign' || options.force === true) return;
  // Names come from the folder, which a repository may fill: escaped, so none puts an escape sequence on the terminal.
  const shown = contents.names
    .slice(0, 5)
    .map((n) => excerpt(n, MAX_NAME_CHARS))
    .join(', ');
  const more = contents.names.length > 5 ? ` and ${contents.names.length - 5} more` : '';
  throw refuse(`it holds ${shown}${more}, which prewarm did not write; choose another folder, or pass --force to replace it`);
}

/**
 * A hidden, unused name beside `path`, on the same file system, so that a rename can swap them
 * atomically; hidden, so no spec walk reads it meanwhile.
 */
export function sibling(path: string, tag: string): string {
  return join(dirname(path), `.${basename(path)}.${tag}-${randomBytes(6).toString('hex')}`);
}

/**
 * Where writing `target` lands: every link on the way resolved, including a link at `target`
 * itself, whether or not its target exists yet (a dangling `dist` link gets its folder created).
 *
 * Unless `follow`, each link must lead to the folder it lies in or below it, or into the current
 * directory: `dist -> build/dist` and `out -> ../dist` from inside the project are fine, `dist ->
 * /etc` or `dist -> ..` is refused (exit 1). Links above the current directory are the invoker's
 * own setup and are not judged; a relative target is walked from the current directory's real path.
 */
async function followLinks(target: string, follow: boolean): Promise<string> {
  const here = process.cwd();
  const hereReal = await realpath(here);
  const given = resolve(target);
  const relativeToHere = given === here || given.startsWith(here.endsWith(sep) ? here : here + sep);
  let current = relativeToHere ? hereReal : parse(given).root;
  let rest = parts(relativeToHere ? relative(here, given) : given);
  // Linux gives up after 40 links too (ELOOP).
  let hops = 0;
  for (let name = rest.shift(); name !== undefined; name = rest.shift()) {
    const next = join(current, name);
    const info = await lstat(next).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    });
    if (info === undefined) return join(next, ...rest);
    if (!info.isSymbolicLink()) {
      current = next;
      continue;
    }
    if (++hops > 40) {
      throw Object.assign(new Error(`too many levels of symbolic links: ${target}`), {
        code: 'ELOOP',
        errno: -40,
        syscall: 'readlink',
        path: target,
      });
    }
    const leads = resolve(current, await readlink(next));
    if (!follow && !within(leads, current) && !within(leads, hereReal) && !within(leads, here)) {
      const shown = within(next, hereReal) ? relative(hereReal, next) || '.' : next;
      throw new CliError(
        `refusing to write ${target}: ${shown} is a link that leads out of the folder it lies in and out of the current directory; ` +
          'nothing was written (pass --follow-output-link to write where it leads)',
        ExitCode.InvalidInput,
      );
    }
    // The link's text is walked again from the top, so links inside it are judged too.
    current = parse(leads).root;
    rest = [...parts(leads), ...rest];
  }
  return current;
}

/** The names of a path's steps, without its root. */
function parts(path: string): string[] {
  return path
    .slice(parse(path).root.length)
    .split(sep)
    .filter((p) => p !== '');
}

/** Whether `path` is `root` or lies below it. */
function within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** The path with every link resolved, as far as it exists; the rest appended as given. */
async function realOrResolved(path: string): Promise<string> {
  let existing = path;
  for (;;) {
    try {
      return join(await realpath(existing), relative(existing, path));
    } catch {
      const up = dirname(existing);
      if (up === existing) return path;
      existing = up;
    }
  }
}
