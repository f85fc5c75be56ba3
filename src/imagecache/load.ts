/**
 * The only place in `imagecache/` that touches the file system: expands the paths a user named into
 * YAML files, reads them, and hands the text to the pure parser.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { buildBundle } from './bundle.js';
import { SpecError, type Diagnostic } from './errors.js';
import type { Bundle } from './model.js';
import { parseFiles, type ParseOptions, type SourceFile } from './parse.js';

const YAML_FILE = /\.ya?ml$/i;

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
}

/**
 * Loads every ImageCache under `paths` (files, or folders searched recursively for `*.yaml` and
 * `*.yml`; hidden entries skipped). Throws {@link SpecError} with every diagnostic when any error
 * is found, so nothing downstream ever sees a partly valid bundle.
 */
export async function loadBundle(paths: readonly string[], options: LoadOptions = {}): Promise<LoadResult> {
  const diagnostics: Diagnostic[] = [];
  const files = await readSources(paths, diagnostics, options.exclude ?? []);
  const parsed = parseFiles(files, options);
  diagnostics.push(...parsed.diagnostics);
  const grouped = buildBundle(parsed.caches);
  diagnostics.push(...grouped.diagnostics);
  if (diagnostics.some((d) => d.severity === 'error')) throw new SpecError(diagnostics);
  return { bundle: grouped.bundle, warnings: diagnostics, imageCaches: parsed.caches.length };
}

/** Reads the named files and folders; unreadable paths become diagnostics. */
export async function readSources(paths: readonly string[], diagnostics: Diagnostic[], exclude: readonly string[] = []): Promise<SourceFile[]> {
  const found = new Set<string>();
  const excluded = exclude.map((e) => resolve(e));
  const isExcluded = (file: string) => excluded.some((e) => resolve(file) === e || resolve(file).startsWith(e + sep));
  for (const path of paths) {
    try {
      const info = await stat(path);
      if (info.isDirectory()) {
        for (const file of await walk(path)) if (!isExcluded(file)) found.add(file);
      } else {
        found.add(path);
      }
    } catch (err) {
      diagnostics.push(fileError(path, `cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`));
    }
  }
  // Sorted, so diagnostics and first-definition wins never depend on the order paths were given.
  const out: SourceFile[] = [];
  for (const path of [...found].sort()) {
    try {
      out.push({ path, text: await readFile(path, 'utf8') });
    } catch (err) {
      diagnostics.push(fileError(path, `cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`));
    }
  }
  return out;
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  for (const entry of entries) {
    const full = join(entry.parentPath, entry.name);
    const rel = relative(dir, full);
    if (rel.split(sep).some((part) => part.startsWith('.'))) continue;
    if (!YAML_FILE.test(entry.name)) continue;
    if (entry.isFile() || (entry.isSymbolicLink() && !(await isDirectory(full)))) out.push(full);
  }
  return out;
}

/**
 * Whether a link leads to a folder. Links to files are read like files (GitOps repos share specs
 * that way); links to folders are not walked, so a loop can never make the walk endless. A dangling
 * link counts as a file, so reading it reports the error instead of dropping it silently.
 */
async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

function fileError(file: string, message: string): Diagnostic {
  return { severity: 'error', file, document: 0, line: 0, column: 0, path: '', message };
}
