/**
 * All-or-nothing output: a synth writes into a fresh temporary folder beside the target and only
 * a complete result is moved into place, so a failed run leaves the previous output untouched
 * and a reader (Argo CD, a CI upload) never sees half a bundle.
 *
 * Only a previous prewarm output is ever replaced (see output-marker.ts): a target that holds
 * anything else, that is a file, or that is or holds an input is refused, so a typo in `-o` cannot
 * delete a user's work.
 */
import { lstat, mkdir, mkdtemp, realpath, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { CliError, ExitCode } from './exit-codes.js';
import { inspectOutput, writeOutputMarker } from './output-marker.js';

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
 * Throws {@link CliError} (exit 1) when the target is in the way, before anything is written.
 */
export async function replaceDirectory(target: string, write: (dir: string) => Promise<void> | void, options: ReplaceOptions = {}): Promise<void> {
  const full = resolve(target);
  await checkOutput(target, options);
  const parent = dirname(full);
  await mkdir(parent, { recursive: true });
  const tmp = await mkdtemp(join(parent, `.${basename(full)}.tmp-`));
  try {
    await write(tmp);
    await writeOutputMarker(tmp);
    // Checked again just before the swap: something may have been put there while we wrote.
    await checkOutput(target, options);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
  let old: string | undefined;
  if (await exists(full)) {
    old = await mkdtemp(join(parent, `.${basename(full)}.old-`));
    await rename(full, join(old, 'previous'));
  }
  try {
    await rename(tmp, full);
  } catch (err) {
    if (old !== undefined) await rename(join(old, 'previous'), full);
    await rm(tmp, { recursive: true, force: true });
    throw err;
  } finally {
    if (old !== undefined) await rm(old, { recursive: true, force: true });
  }
}

/**
 * Refuses (with {@link CliError}, exit 1) a target that is a file, is or holds an input, or holds
 * what prewarm did not write. Commands call it before reading their input too, so a wrong `-o`
 * is reported as such and not as whatever the input looks like without it.
 */
export async function checkOutput(target: string, options: ReplaceOptions = {}): Promise<void> {
  const full = resolve(target);
  const refuse = (why: string) => new CliError(`refusing to write ${target}: ${why}; nothing was written`, ExitCode.InvalidInput);
  const real = await realOrResolved(full);
  for (const input of options.inputs ?? []) {
    const inputReal = await realOrResolved(resolve(input));
    if (inputReal === real) throw refuse(`it is the input ${input}`);
    if (inputReal.startsWith(real + sep)) throw refuse(`it holds the input ${input}`);
  }
  let info;
  try {
    info = await stat(full);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !(await isLink(full))) return;
    throw err;
  }
  if (!info.isDirectory()) throw refuse('it is a file, not a folder');
  const contents = await inspectOutput(full);
  if (contents.kind !== 'foreign' || options.force === true) return;
  const shown = contents.names.slice(0, 5).join(', ');
  const more = contents.names.length > 5 ? ` and ${contents.names.length - 5} more` : '';
  throw refuse(`it holds ${shown}${more}, which prewarm did not write; choose another folder, or pass --force to replace it`);
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

async function isLink(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isSymbolicLink();
  } catch {
    return false;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
