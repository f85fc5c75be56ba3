/**
 * The second half of `prewarm pin`: record each pinned image's size in the lock file beside the
 * specs (src/imagecache/sizes.ts), measured from the registry at the digest the spec pins. A size
 * is a hint: an image the registry will not size is reported and left out, never a failure of pin.
 */
import { lstat, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { askRegistries, type AskBounds, type OciRegistry } from '../../oci/client.js';
import { formatDiagnostics } from '../../imagecache/errors.js';
import { readRegularFile } from '../../files/read.js';
import { LOCK_FILE, lockKey, parseLock, renderLock, type SizeEntry, type SizeLock } from '../../imagecache/sizes.js';
import type { Platform } from '../../oci/manifest.js';
import { parseImageRef } from '../../oci/reference.js';
import { excerpt } from '../../text/quote.js';
import { plural } from '../../text/plural.js';
import { CliError, ExitCode } from '../exit-codes.js';
import type { Io } from '../io.js';

/** The pinned references of one spec file. */
export interface PinnedFile {
  readonly path: string;
  /** Every image reference of the file, with its digest. */
  readonly references: readonly string[];
}

/** One lock file to write: its path, and the pinned references of the specs under its root. */
interface LockPlan {
  readonly path: string;
  readonly references: readonly string[];
}

/** The lock file of each path named, and the references of the files it covers. */
export async function planLocks(paths: readonly string[], files: readonly PinnedFile[]): Promise<LockPlan[]> {
  const plans = new Map<string, Set<string>>();
  for (const path of paths) {
    const isDir = await stat(path).then(
      (s) => s.isDirectory(),
      () => false,
    );
    const lock = join(isDir ? path : dirname(path), LOCK_FILE);
    const root = resolve(path);
    const covered = files.filter((f) => (isDir ? resolve(f.path).startsWith(root + sep) : resolve(f.path) === root));
    const refs = plans.get(lock) ?? new Set<string>();
    for (const f of covered) for (const r of f.references) refs.add(r);
    plans.set(lock, refs);
  }
  return [...plans].map(([path, refs]) => ({ path, references: [...refs].sort() }));
}

/** Reads the lock at `path` when there is one; a malformed one stops pin (it may not be ours). */
async function readLock(path: string): Promise<{ lock?: SizeLock; text?: string }> {
  const info = await lstat(path).catch(() => undefined);
  if (info === undefined) return {};
  if (!info.isFile()) throw new CliError(`${path} is not a regular file; pin writes its lock file only as one`, ExitCode.InvalidInput);
  const text = await readRegularFile(path, 'lock file');
  if (typeof text !== 'string') throw new CliError(`${path} ${text.problem}`, ExitCode.InvalidInput);
  const { lock, diagnostics } = parseLock(text, path);
  if (lock === undefined)
    throw new CliError(
      `${path} is not a lock file pin can update; delete it to have it written again:\n${formatDiagnostics(diagnostics).join('\n')}`,
      ExitCode.InvalidInput,
    );
  return { lock, text };
}

/** Options of {@link recordSizes}. */
export interface RecordOptions {
  readonly registry: OciRegistry;
  /** The run's deadline and credentials, as the digests were asked with. */
  readonly bounds: AskBounds;
  readonly platform: Platform;
  readonly dryRun: boolean;
  readonly io: Io;
}

/**
 * Writes each planned lock: entries still fresh (same digest, same platform) are kept, the others
 * measured; entries of images the specs no longer name are dropped. Returns the locks written.
 */
export async function recordSizes(plans: readonly LockPlan[], o: RecordOptions): Promise<number> {
  const platform = `${o.platform.os}/${o.platform.architecture}`;
  let written = 0;
  for (const plan of plans) {
    const { lock, text } = await readLock(plan.path);
    const keep = lock?.platform === platform ? lock.entries : new Map<string, SizeEntry>();
    const wanted = new Map<string, { key: string; digest: string; ref: string }>();
    for (const ref of plan.references) {
      const parsed = parseImageRef(ref);
      if (parsed.ok && parsed.ref.digest !== undefined)
        wanted.set(lockKey(parsed.ref), { key: lockKey(parsed.ref), digest: parsed.ref.digest, ref: parsed.ref.canonical });
    }
    const entries: SizeEntry[] = [];
    const measure = [...wanted.values()].filter((w) => {
      const e = keep.get(w.key);
      if (e === undefined || e.digest !== w.digest) return true;
      entries.push({
        image: e.image,
        digest: e.digest,
        compressed: e.compressed,
        ...(e.uncompressed === undefined ? {} : { uncompressed: e.uncompressed }),
      });
      return false;
    });
    const asked = await askRegistries(
      measure,
      (w) => w.ref,
      (w) => o.registry.imageSize(w.ref, o.platform),
      o.bounds,
    );
    asked.forEach((a, i) => {
      const w = measure[i] as (typeof measure)[number];
      if (a.kind === 'answered') entries.push({ image: w.key, digest: w.digest, ...a.value });
      else {
        const why =
          a.kind === 'failed'
            ? excerpt((a.error as Error).message, 200)
            : a.kind === 'deadline'
              ? "the run's deadline passed first"
              : `${a.host} did not answer earlier in this run`;
        o.io.stderr(`warning: no size recorded for ${w.ref} (${platform}): ${why}; its pools split by image count\n`);
      }
    });
    const next = renderLock(platform, entries);
    // No lock and nothing to record in one: the folder stays as it was.
    if (next === text || (text === undefined && entries.length === 0)) continue;
    const shown = relative('.', plan.path) || plan.path;
    if (o.dryRun) {
      o.io.stderr(`would record the sizes of ${plural(entries.length, 'image')} in ${shown} (--dry-run)\n`);
      continue;
    }
    await writeAtomically(plan.path, next);
    written++;
    o.io.stderr(`recorded the sizes of ${plural(entries.length, 'image')} in ${shown} (${measure.length} measured, ${platform})\n`);
  }
  return written;
}

/** Writes `text` to `path` through a file beside it, so a reader never sees half a lock. */
async function writeAtomically(path: string, text: string): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    await writeFile(tmp, text, { flag: 'wx', mode: 0o644 });
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw new CliError(`cannot write ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, ExitCode.Internal);
  }
}
