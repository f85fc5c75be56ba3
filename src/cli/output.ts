/**
 * All-or-nothing output: a synth writes into a fresh temporary folder beside the target and only
 * a complete result is moved into place, so a failed run leaves the previous output untouched
 * and a reader (Argo CD, a CI upload) never sees half a bundle.
 *
 * Only a previous prewarm output is ever replaced (see output-marker.ts): a target that holds
 * anything else, that is a file, or that is or holds an input is refused, so a typo in `-o` cannot
 * delete a user's work.
 */
import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, readlink, realpath, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { asIoError, CliError, ExitCode } from './exit-codes.js';
import { inspectOutput, writeOutputMarker } from './output-marker.js';
import { excerpt } from '../imagecache/errors.js';

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
}

/**
 * Runs `write` against a temporary folder, adds the output marker, then replaces `target` with
 * it. The temporary folder sits next to the target, on the same file system, so the final step is
 * a rename. Between the two renames the target is briefly absent; it is never partly written.
 * The folder keeps the mode it had (a new one gets the umask's), and a target that is a link
 * stays one: the folder it leads to is replaced. Throws {@link CliError} (exit 1) when the target
 * is in the way, before anything is written.
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
  const real = await followLinks(resolve(target));
  const parent = dirname(real);
  await mkdir(parent, { recursive: true });
  const previous = await stat(real).catch(() => undefined);
  const tmp = sibling(real, 'tmp');
  // mkdir, not mkdtemp (0700): the umask applies, and an existing folder's own mode wins over it.
  await mkdir(tmp);
  try {
    if (previous !== undefined) await chmod(tmp, previous.mode & 0o7777);
    await write(tmp);
    await writeOutputMarker(tmp);
    // Checked again just before the swap: something may have been put there while we wrote.
    await check(target, options);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
  const old = previous === undefined ? undefined : sibling(real, 'old');
  if (old !== undefined) await rename(real, old);
  try {
    await rename(tmp, real);
  } catch (err) {
    if (old !== undefined) await rename(old, real);
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
  if (old !== undefined) await rm(old, { recursive: true, force: true });
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
  const real = await followLinks(resolve(target));
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
 * Where writing `path` lands: every link on the way resolved, including links at `path` itself,
 * whether or not their target exists yet (a dangling `dist` link gets its folder created).
 */
async function followLinks(path: string): Promise<string> {
  let current = path;
  // Linux gives up after 40 links too (ELOOP).
  for (let hops = 0; hops <= 40; hops++) {
    current = join(await realOrResolved(dirname(current)), basename(current));
    const info = await lstat(current).catch(() => undefined);
    if (info === undefined || !info.isSymbolicLink()) return current;
    current = resolve(dirname(current), await readlink(current));
  }
  throw Object.assign(new Error(`too many levels of symbolic links: ${path}`), { code: 'ELOOP', errno: -40, syscall: 'readlink', path });
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
