/**
 * The only file-system access in `imagecache/`. A spec repository is untrusted: links are followed
 * only inside the spec roots, only regular files are read, and nothing outside is shown.
 */
import { lstat, readdir, readlink, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { buildBundle } from './bundle.js';
import { SpecError, type Diagnostic, type Skipped } from './errors.js';
import type { Bundle } from './model.js';
import { parseFiles, type ParseOptions, type SourceFile } from './parse.js';
import { compareStrings } from '../contract/order.js';
import { formatBytes, readRegularFile } from '../files/read.js';
import { LOCK_FILE, parseLock, sizeBundle, type SizeLock, type UnsizedImage } from './sizes.js';

const YAML_FILE = /\.ya?ml$/i;
/** Files a folder of rendered manifests holds: YAML, and JSON (which YAML reads too). */
export const MANIFEST_FILE = /\.(ya?ml|json)$/i;

/** The most spec bytes one run reads over all its files: parsed YAML costs far more memory than its text. */
export const MAX_RUN_SPEC_BYTES = 16 * 1024 * 1024;

/** The most YAML files one run reads: without it, a tree of many tiny files stalls a run. */
export const MAX_SPEC_FILES = 10_000;

/** The most folder entries a walk visits, so a root that is a whole checkout ends here. */
export const MAX_WALK_ENTRIES = 100_000;

/** Options of {@link loadBundle}. */
export interface LoadOptions extends ParseOptions {
  /** Folders never walked, such as the synth output inside a spec folder. @default - none */
  readonly exclude?: readonly string[];
}

/** A loaded and validated bundle, plus the warnings found on the way. */
export interface LoadResult {
  readonly bundle: Bundle;
  readonly warnings: readonly Diagnostic[];
  readonly imageCaches: number;
  /** Input passed over on purpose: other manifests, plain YAML, Helm templates. */
  readonly skipped: Skipped;
  readonly lockFiles: readonly string[];
  /** Images of split pools without a usable size in the lock files (none without lock files). */
  readonly unsized: readonly UnsizedImage[];
}

/** Loads every ImageCache under `paths`; throws {@link SpecError} with every diagnostic, never a partial bundle. */
export async function loadBundle(paths: readonly string[], options: LoadOptions = {}): Promise<LoadResult> {
  const diagnostics: Diagnostic[] = [];
  const { files, helmTemplates, roots } = await readTree(paths, diagnostics, options.exclude ?? []);
  const locks = await readLocks(paths, roots, diagnostics);
  const parsed = parseFiles(files, options);
  const skipped = { ...parsed.skipped, helmTemplates };
  // Loops, not push(...list): spreading a large list overflows the stack.
  for (const d of parsed.diagnostics) diagnostics.push(d);
  const grouped = buildBundle(parsed.caches);
  for (const d of grouped.diagnostics) diagnostics.push(d);
  if (diagnostics.some((d) => d.severity === 'error')) throw new SpecError(diagnostics, skipped);
  const { bundle, unsized } = sizeBundle(grouped.bundle, locks);
  const lockFiles = locks.map((l) => l.file);
  return { bundle, warnings: diagnostics, imageCaches: parsed.caches.length, skipped, lockFiles, unsized };
}

/** The lock file of each root, read as spec files are; an unreadable or malformed one is an error. */
async function readLocks(paths: readonly string[], roots: readonly string[], diagnostics: Diagnostic[]): Promise<SizeLock[]> {
  const byReal = new Map<string, string>();
  for (const path of paths) {
    const isDir = await stat(path).then(
      (s) => s.isDirectory(),
      () => false,
    );
    const lock = join(isDir ? path : dirname(path), LOCK_FILE);
    if ((await lstat(lock).catch(() => undefined)) === undefined) continue;
    // The folder of a named file is not a root: a lock there is read while it stays in that folder.
    const real = await locate(lock, isDir ? roots : [await realpath(dirname(path)).catch(() => '')], diagnostics);
    if (real !== undefined && !byReal.has(real)) byReal.set(real, lock);
  }
  const locks: SizeLock[] = [];
  for (const [real, shown] of [...byReal].sort((a, b) => compareStrings(a[1], b[1]))) {
    const text = await readRegularFile(real, 'lock file');
    if (typeof text !== 'string') {
      diagnostics.push(fileError(shown, text.problem));
      continue;
    }
    const { lock, diagnostics: found } = parseLock(text, shown);
    for (const d of found) diagnostics.push(d);
    if (lock !== undefined) locks.push(lock);
  }
  return locks;
}

/** Reads the named paths, each real file once; what cannot or must not be read becomes a diagnostic. */
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
): Promise<{ files: SourceFile[]; helmTemplates: number; roots: string[] }> {
  const excluded = exclude.map((e) => resolve(e));
  const isExcluded = (path: string) => excluded.some((e) => within(resolve(path), e));
  const roots: string[] = [];
  const candidates: string[] = [];
  let helmTemplates = 0;
  const budget: WalkBudget = { files: MAX_SPEC_FILES, entries: MAX_WALK_ENTRIES };
  for (const path of paths) {
    try {
      if ((await stat(path)).isDirectory()) {
        roots.push(await realpath(path));
        const found = await walk(path, isExcluded, diagnostics, budget, names);
        for (const file of found.files) candidates.push(file);
        helmTemplates += found.helmTemplates;
      } else {
        // A named file is a root as named: a link given on the command line is still checked.
        roots.push(join(await realpath(dirname(path)), basename(path)));
        candidates.push(path);
        budget.files--;
      }
    } catch (err) {
      // A path named on the command line is a root itself: it cannot leave the roots.
      diagnostics.push(fileError(path, await cannotRead(path, err, [])));
    }
    // Past a bound nothing is read: the run fails on the error, and reading would only delay it.
    if (budget.files < 0 || budget.entries < 0) {
      if (budget.files < 0 && !diagnostics.some((d) => d.message.startsWith(TOO_MANY))) diagnostics.push(tooMany(path, 'files'));
      return { files: [], helmTemplates, roots };
    }
  }
  // Shown by its own name, then the smallest, so the result never depends on how paths were given.
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
          `brings the spec files of this run to more than ${formatBytes(MAX_RUN_SPEC_BYTES)}, the limit for all the files of one run; ` +
            `not read${rest} (name fewer files or folders per run)`,
        ),
      );
      break;
    }
    out.push({ path: shown, text: read });
  }
  return { files: out.sort((a, b) => compareStrings(a.path, b.path)), helmTemplates, roots };
}

/** YAML files below `dir`, hidden entries skipped; links never walked; a Helm chart's `templates/` counted, not read. */
async function walk(
  dir: string,
  isExcluded: (path: string) => boolean,
  diagnostics: Diagnostic[],
  budget: WalkBudget,
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
    budget.entries -= entries.length;
    if (budget.entries < 0) {
      diagnostics.push(tooMany(dir, 'entries'));
      return { files: out, helmTemplates };
    }
    const chart = entries.some((e) => e.name === HELM_CHART && !e.isDirectory());
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const full = join(next, entry.name);
      if (isExcluded(full)) continue;
      if (chart && entry.name === HELM_TEMPLATES && entry.isDirectory()) helmTemplates += await countFiles(full);
      else if (entry.isDirectory()) pending.push(full);
      else if (names.test(entry.name)) {
        out.push(full);
        if (--budget.files < 0) {
          diagnostics.push(tooMany(dir, 'files'));
          return { files: out, helmTemplates };
        }
      }
    }
  }
  return { files: out, helmTemplates };
}

/** What is left of a run's walk: YAML files, and folder entries of any kind. */
interface WalkBudget {
  files: number;
  entries: number;
}

const TOO_MANY = 'the spec paths of this run hold more than';

/** The error of a walk over {@link MAX_SPEC_FILES} or {@link MAX_WALK_ENTRIES}, at the root that crossed it. */
function tooMany(root: string, what: 'files' | 'entries'): Diagnostic {
  const message =
    what === 'files'
      ? `${TOO_MANY} ${MAX_SPEC_FILES.toLocaleString('en-US')} YAML files with this one, the most one run reads; nothing was read ` +
        '(name fewer files or folders per run, or put more ImageCaches in each file)'
      : `${TOO_MANY} ${MAX_WALK_ENTRIES.toLocaleString('en-US')} folder entries with this one, the most one run lists; nothing was read ` +
        '(name the folders that hold the specs, not a whole checkout)';
  return fileError(root, message);
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

/** Why `path` cannot be read; never telling whether a file outside the roots exists. */
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

function within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

function fileError(file: string, message: string): Diagnostic {
  return { severity: 'error', file, document: 0, line: 0, column: 0, path: '', message };
}
