/**
 * All-or-nothing output, renamed into place. Only a previous prewarm output is replaced, and a
 * checkout cannot choose where we write through a link ({@link ReplaceOptions.followLinks}).
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
  /** Replace a folder even when it holds files prewarm did not write; never a file or an input. @default false */
  readonly force?: boolean;
  /** Paths the run reads: the target may lie inside one, but may neither be one nor hold one. @default - none */
  readonly inputs?: readonly string[];
  /** Follow links to the target wherever they lead; only the invoker sets it (`--follow-output-link`). @default false */
  readonly followLinks?: boolean;
}

/**
 * Runs `write` against a temporary folder beside `target`, adds the output marker, and renames it
 * into place; SIGINT/SIGTERM meanwhile put the old output back (exit 130/143).
 */
export async function replaceDirectory(
  target: string,
  write: (dir: string) => Promise<void> | void,
  options: ReplaceOptions = {},
): Promise<void> {
  await writing(target, () => replace(target, write, options));
}

/** Runs `step`, reporting a failure against the folder asked for, not the temporary one. */
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

/** Undo steps of runs in progress, for SIGINT and SIGTERM. */
const pending = new Set<() => void>();

function stopSignal(signal: NodeJS.Signals): void {
  for (const undo of pending) {
    try {
      undo();
    } catch {
      // Keep undoing the others; the process is ending either way.
    }
  }
  // A handler replaces the default action: end with the status a shell gives a killed process.
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

/** `mkdir -p` that says why: Node's recursive mkdir reports ENOENT even for EROFS or EACCES. */
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

/** Refuses (exit 1) a target that is a file, is or holds an input, or holds what prewarm did not write. */
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

/** A hidden, unused name beside `path`: same file system for an atomic rename, hidden from spec walks. */
export function sibling(path: string, tag: string): string {
  return join(dirname(path), `.${basename(path)}.${tag}-${randomBytes(6).toString('hex')}`);
}

/** Where writing `target` lands, links resolved; unless `follow`, a link must stay in its folder or the cwd. */
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

function parts(path: string): string[] {
  return path
    .slice(parse(path).root.length)
    .split(sep)
    .filter((p) => p !== '');
}

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
