/**
 * The only place in `imagecache/` that touches the file system: expands the paths a user named into
 * YAML files, reads them, and hands the text to the pure parser.
 *
 * A spec repository is untrusted input: CI and Argo CD's repo-server run prewarm on whatever a pull
 * request holds. So links are followed only while they stay inside the spec roots (the paths named
 * on the command line), only regular files are read, and nothing is ever opened in a way that could
 * block. A link that leaves the roots is an error that never shows what it points to.
 */
import { constants, type Stats } from 'node:fs';
import { lstat, open, readdir, readlink, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { buildBundle } from './bundle.js';
import { SpecError, type Diagnostic, type Skipped } from './errors.js';
import type { Bundle } from './model.js';
import { parseFiles, type ParseOptions, type SourceFile } from './parse.js';
import { compareStrings } from '../contract/order.js';

const YAML_FILE = /\.ya?ml$/i;
/** Files a folder of rendered manifests holds: YAML, and JSON (which YAML reads too). */
export const MANIFEST_FILE = /\.(ya?ml|json)$/i;

/**
 * The largest spec file read, in bytes. The apiserver refuses objects over about 1.5 MiB, so a
 * file of ImageCaches larger than this is a mistake or an attack; the limit keeps a run's memory
 * and time bounded (a 70 MB document took 32 s and 2 GB before).
 */
export const MAX_SPEC_FILE_BYTES = 4 * 1024 * 1024;

/**
 * The most spec bytes one run reads over all its files. Every file's text is held until the run
 * ends, and reading YAML takes far more memory than the text (README, Limits): without a bound
 * across files, many files each under {@link MAX_SPEC_FILE_BYTES} would run the Argo CD sidecar
 * out of memory. 16 MiB holds the 10,000 ImageCaches of `bench:synth` (11.7 MB).
 */
export const MAX_RUN_SPEC_BYTES = 16 * 1024 * 1024;

/** Options of {@link loadBundle}. */
export interface LoadOptions extends ParseOptions {
  /**
   * Folders never read when walking, such as the synth output folder when it lies inside a spec
   * folder: its manifests are not ImageCaches.
   * @default - none
   */
  readonly exclude?: readonly string[];
}

/** A loaded and validated bundle, plus the warnings found on the way. */
export interface LoadResult {
  readonly bundle: Bundle;
  readonly warnings: readonly Diagnostic[];
  /** Number of ImageCache documents read. */
  readonly imageCaches: number;
  /** Input passed over on purpose: other manifests, plain YAML, Helm templates. */
  readonly skipped: Skipped;
}

/**
 * Loads every ImageCache under `paths` (files, or folders searched recursively for `*.yaml` and
 * `*.yml`; hidden entries skipped). Throws {@link SpecError} with every diagnostic when any error
 * is found, so nothing downstream ever sees a partly valid bundle.
 */
export async function loadBundle(paths: readonly string[], options: LoadOptions = {}): Promise<LoadResult> {
  const diagnostics: Diagnostic[] = [];
  const { files, helmTemplates } = await readTree(paths, diagnostics, options.exclude ?? []);
  const parsed = parseFiles(files, options);
  const skipped = { ...parsed.skipped, helmTemplates };
  // Loops, not push(...list): spreading passes every item as an argument, and past about 125,000
  // of them the call overflows the stack.
  for (const d of parsed.diagnostics) diagnostics.push(d);
  const grouped = buildBundle(parsed.caches);
  for (const d of grouped.diagnostics) diagnostics.push(d);
  if (diagnostics.some((d) => d.severity === 'error')) throw new SpecError(diagnostics, skipped);
  return { bundle: grouped.bundle, warnings: diagnostics, imageCaches: parsed.caches.length, skipped };
}

/**
 * Reads the named files and folders; every path that cannot or must not be read becomes a
 * diagnostic. A file reached twice (named twice, by a relative and an absolute path, or through a
 * folder and directly) is read once.
 */
export async function readSources(
  paths: readonly string[],
  diagnostics: Diagnostic[],
  exclude: readonly string[] = [],
  names: RegExp = YAML_FILE,
): Promise<SourceFile[]> {
  return (await readTree(paths, diagnostics, exclude, names)).files;
}

/** {@link readSources}, plus how many Helm templates the walk passed over. */
async function readTree(
  paths: readonly string[],
  diagnostics: Diagnostic[],
  exclude: readonly string[],
  names: RegExp = YAML_FILE,
): Promise<{ files: SourceFile[]; helmTemplates: number }> {
  const excluded = exclude.map((e) => resolve(e));
  const isExcluded = (path: string) => excluded.some((e) => within(resolve(path), e));
  const roots: string[] = [];
  const candidates: string[] = [];
  let helmTemplates = 0;
  for (const path of paths) {
    try {
      if ((await stat(path)).isDirectory()) {
        roots.push(await realpath(path));
        const found = await walk(path, isExcluded, diagnostics, names);
        for (const file of found.files) candidates.push(file);
        helmTemplates += found.helmTemplates;
      } else {
        // A named file is a root as named: a link given on the command line is still checked.
        roots.push(join(await realpath(dirname(path)), basename(path)));
        candidates.push(path);
      }
    } catch (err) {
      // A path named on the command line is a root itself: it cannot leave the roots.
      diagnostics.push(fileError(path, await cannotRead(path, err, [])));
    }
  }
  // Each real file is read once, and shown by its own name rather than a link's, then by the
  // smallest name, so the result never depends on the order or spelling of the paths given. A file
  // that cannot be read is reported under every name that leads to it.
  const byReal = new Map<string, string[]>();
  // Sorted first: a folder listing's order is the file system's, and diagnostics must not be.
  for (const path of candidates.sort()) {
    const real = await locate(path, roots, diagnostics);
    if (real === undefined) continue;
    const names = byReal.get(real);
    if (names === undefined) byReal.set(real, [path]);
    else if (!names.includes(path)) names.push(path);
  }
  const rank = (path: string, real: string) => `${resolve(path) === real ? 0 : 1}${path}`;
  const out: SourceFile[] = [];
  let total = 0;
  let left = byReal.size;
  for (const [real, names] of byReal) {
    left--;
    const read = await readRegularFile(real);
    if (typeof read !== 'string') {
      for (const path of names) diagnostics.push(fileError(path, read.problem));
      continue;
    }
    const shown = names.reduce((best, path) => (rank(path, real) < rank(best, real) ? path : best));
    total += Buffer.byteLength(read);
    if (total > MAX_RUN_SPEC_BYTES) {
      // One error, at the file that crosses the budget: the rest are not read at all.
      const rest = left === 0 ? '' : ` nor the ${left} file${left === 1 ? '' : 's'} after it`;
      diagnostics.push(
        fileError(
          shown,
          `brings the spec files of this run to more than ${size(MAX_RUN_SPEC_BYTES)}, the limit for all the files of one run; ` +
            `not read${rest} (name fewer files or folders per run)`,
        ),
      );
      break;
    }
    out.push({ path: shown, text: read });
  }
  return { files: out.sort((a, b) => compareStrings(a.path, b.path)), helmTemplates };
}

/**
 * YAML files below `dir`, as paths under `dir`. Hidden entries are skipped before they are
 * entered, and links are never walked: a link with a YAML name is returned so that reading it
 * checks where it leads; any other link is left alone, so a loop cannot make the walk endless.
 * The `templates/` folder of a Helm chart (a folder with a `Chart.yaml`) holds Go templates that
 * are not YAML until rendered: its files are counted, not read.
 */
async function walk(
  dir: string,
  isExcluded: (path: string) => boolean,
  diagnostics: Diagnostic[],
  names: RegExp,
): Promise<{ files: string[]; helmTemplates: number }> {
  const out: string[] = [];
  let helmTemplates = 0;
  const pending = [dir];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    let entries;
    try {
      entries = await readdir(next, { withFileTypes: true });
    } catch (err) {
      diagnostics.push(fileError(next, `cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`));
      continue;
    }
    const chart = entries.some((e) => e.name === HELM_CHART && !e.isDirectory());
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const full = join(next, entry.name);
      if (isExcluded(full)) continue;
      if (chart && entry.name === HELM_TEMPLATES && entry.isDirectory()) helmTemplates += await countFiles(full);
      else if (entry.isDirectory()) pending.push(full);
      else if (names.test(entry.name)) out.push(full);
    }
  }
  return { files: out, helmTemplates };
}

const HELM_CHART = 'Chart.yaml';
const HELM_TEMPLATES = 'templates';

/** Files below `dir` with a YAML name, links not followed; 0 when it cannot be read. */
async function countFiles(dir: string): Promise<number> {
  try {
    return (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => !e.isDirectory() && YAML_FILE.test(e.name)).length;
  } catch {
    return 0;
  }
}

/** The real path of `path` when it lies inside the roots; otherwise a diagnostic, and undefined. */
async function locate(path: string, roots: readonly string[], diagnostics: Diagnostic[]): Promise<string | undefined> {
  let real: string;
  try {
    real = await realpath(path);
  } catch (err) {
    diagnostics.push(fileError(path, await cannotRead(path, err, roots)));
    return undefined;
  }
  if (!roots.some((root) => within(real, root))) {
    diagnostics.push(fileError(path, OUTSIDE_ROOTS));
    return undefined;
  }
  return real;
}

const OUTSIDE_ROOTS =
  'is a link whose target is outside the spec roots; not read (links are followed only within the files and folders named on the command line)';

/**
 * Why `path` cannot be read. A dangling link whose first step already leaves the roots is
 * reported as leaving them, so the answer never tells whether a file outside exists.
 */
async function cannotRead(path: string, err: unknown, roots: readonly string[]): Promise<string> {
  const code = (err as NodeJS.ErrnoException).code ?? String(err);
  const link = await linkTarget(path);
  if (link !== undefined && roots.length > 0 && !roots.some((root) => within(link, root))) return OUTSIDE_ROOTS;
  if (code === 'ELOOP') return 'cannot read: ELOOP (a loop of links)';
  if (code === 'ENOENT' && link !== undefined) return 'cannot read: ENOENT (a link whose target does not exist)';
  return `cannot read: ${code}`;
}

/** Where a link points, resolved against its folder's real path; undefined when `path` is not a link. */
async function linkTarget(path: string): Promise<string | undefined> {
  try {
    if (!(await lstat(path)).isSymbolicLink()) return undefined;
    return resolve(await realpath(dirname(path)), await readlink(path));
  } catch {
    return undefined;
  }
}

/** Whether `path` is `root` or lies below it. */
function within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/**
 * Reads a file the invoker named outside the spec roots, such as a kubeconfig or a docker config,
 * the way spec files are read (regular files only, never blocking, at most
 * {@link MAX_SPEC_FILE_BYTES}); links on the way are followed, since the invoker chose the path.
 * `missing` tells a file that does not exist from one that cannot be read. A problem never
 * quotes the file's content.
 */
export async function readNamedFile(path: string, kind: string): Promise<string | { problem: string; missing: boolean }> {
  let real: string;
  try {
    real = await realpath(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    return code === 'ENOENT' ? { problem: 'does not exist', missing: true } : { problem: `cannot read: ${code}`, missing: false };
  }
  // After realpath a folder is a folder, not the link to one that the spec walk reports.
  if ((await stat(real).catch(() => undefined))?.isDirectory() === true) return { problem: 'is a folder, not a file', missing: false };
  const read = await readRegularFile(real, kind);
  return typeof read === 'string' ? read : { ...read, missing: false };
}

/**
 * Reads a regular file without ever blocking: the kind is checked before opening (opening a device
 * can have effects of its own), the file is opened non-blocking and without following a final link,
 * and the kind is checked again on the opened descriptor, which is what is read, so a file swapped
 * in between is caught. A file whose content does not match the size it reports is refused:
 * `/proc` and `/sys` files report sizes that are not their content. `real` must not end in a link.
 * Credential files (kubeconfig, docker config) are read the same way; `kind` names the file in the
 * size limit's message.
 */
export async function readRegularFile(real: string, kind = 'spec file'): Promise<string | { problem: string }> {
  try {
    const before = await stat(real);
    if (!before.isFile()) return { problem: notRegular(before) };
    const handle = await open(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    try {
      const info = await handle.stat();
      if (!info.isFile()) return { problem: notRegular(info) };
      if (info.size > MAX_SPEC_FILE_BYTES) {
        return { problem: `is ${size(info.size)}, over the limit of ${size(MAX_SPEC_FILE_BYTES)} per ${kind}; not read` };
      }
      // One byte more than the size, to notice content beyond it; never more than the limit + 1.
      const buffer = Buffer.alloc(info.size + 1);
      let length = 0;
      for (;;) {
        const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
        if (bytesRead === 0) break;
        length += bytesRead;
        if (length === buffer.length) break;
      }
      if (length !== info.size) {
        return {
          problem:
            'is not a plain file on disk (its content does not match its size, as with /proc and /sys files, or it changed while being read); not read',
        };
      }
      return decode(buffer.subarray(0, length));
    } finally {
      await handle.close();
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    return { problem: code === 'ELOOP' ? 'changed into a link while being read; not read' : `cannot read: ${code}` };
  }
}

/**
 * The text of a spec file, which must be UTF-8 (a byte order mark is fine: YAML allows it). Editors
 * on Windows save UTF-16 by default; read as UTF-8 it is a stream of NULs that YAML reports as
 * nonsense, so it gets a hint instead.
 */
function decode(bytes: Buffer): string | { problem: string } {
  const at = (i: number) => bytes[i] ?? -1;
  if (
    (at(0) === 0xff && at(1) === 0xfe && at(2) === 0 && at(3) === 0) ||
    (at(0) === 0 && at(1) === 0 && at(2) === 0xfe && at(3) === 0xff)
  ) {
    return { problem: 'file is UTF-32; save it as UTF-8' };
  }
  if ((at(0) === 0xff && at(1) === 0xfe) || (at(0) === 0xfe && at(1) === 0xff) || nulInterleaved(bytes)) {
    return { problem: 'file is UTF-16; save it as UTF-8' };
  }
  return bytes.toString('utf8');
}

/** UTF-16 without a byte order mark: ASCII text with a NUL before or after every byte. */
function nulInterleaved(bytes: Buffer): boolean {
  const head = bytes.subarray(0, 64);
  if (head.length < 4) return false;
  for (const parity of [0, 1]) {
    let nuls = 0;
    for (let i = parity; i < head.length; i += 2) if (head[i] === 0) nuls++;
    if (nuls === Math.ceil((head.length - parity) / 2) && !head.every((b) => b === 0)) return true;
  }
  return false;
}

function size(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB (${bytes} bytes)`;
}

function notRegular(info: Stats): string {
  if (info.isDirectory()) return 'is a link to a folder; links to folders are not followed (name the folder itself)';
  const kind = info.isFIFO()
    ? 'a FIFO (named pipe)'
    : info.isSocket()
      ? 'a socket'
      : info.isCharacterDevice()
        ? 'a character device'
        : info.isBlockDevice()
          ? 'a block device'
          : 'not a regular file';
  return `is ${kind}, not a regular file; only regular files are read`;
}

function fileError(file: string, message: string): Diagnostic {
  return { severity: 'error', file, document: 0, line: 0, column: 0, path: '', message };
}
