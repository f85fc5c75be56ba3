/**
 * Rewriting spec files in place, for `pin` and `migrate --write`: bytes outside the edits never
 * change (UTF-8 or Latin-1), every file is staged before any rename, and links and modes are kept.
 */
import { isUtf8 } from 'node:buffer';
import { chmod, chown, copyFile, link, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { asIoError, CliError, ExitCode } from './exit-codes.js';
import { sibling } from './output.js';

/** A file as read for rewriting: its text, and how that text turns back into the same bytes. */
export interface EditableFile {
  readonly path: string;
  readonly text: string;
  readonly encoding: 'utf8' | 'latin1';
}

/** A file's new text. */
export interface FileChange {
  readonly file: EditableFile;
  readonly text: string;
}

/** Reads `path` for rewriting (see the module comment for how bytes become text). */
export async function readEditable(path: string): Promise<EditableFile> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (err) {
    throw asIoError('read', path, err);
  }
  const encoding = isUtf8(bytes) ? 'utf8' : 'latin1';
  const bom = encoding === 'latin1' && bytes.subarray(0, 3).equals(UTF8_BOM);
  return { path, text: bom ? `\uFEFF${bytes.subarray(3).toString(encoding)}` : bytes.toString(encoding), encoding };
}

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** The bytes of `text` for `file`: the inverse of {@link readEditable}. */
function encode(file: EditableFile, text: string): Buffer {
  return file.encoding === 'latin1' && text.startsWith('\uFEFF')
    ? Buffer.concat([UTF8_BOM, Buffer.from(text.slice(1), 'latin1')])
    : Buffer.from(text, file.encoding);
}

interface Staged {
  readonly path: string;
  readonly target: string;
  readonly tmp: string;
  backup?: string;
}

/** Writes every changed file, all or nothing; returns the count, or throws {@link CliError} (exit 70). */
export async function writeAll(changes: readonly FileChange[]): Promise<number> {
  const staged: Staged[] = [];
  const undo = () =>
    Promise.all(staged.flatMap((s) => [rm(s.tmp, { force: true }), ...(s.backup === undefined ? [] : [rm(s.backup, { force: true })])]));
  let current = '';
  try {
    const byTarget = new Map<string, string>();
    for (const { file, text } of changes) {
      if (text === file.text) continue;
      current = file.path;
      const target = await realpath(file.path);
      const bytes = encode(file, text);
      // One file named twice (a link and its target) is written once; two different texts for it is a bug.
      const seen = byTarget.get(target);
      if (seen !== undefined) {
        if (seen !== text) throw new Error(`${file.path} and another path lead to ${target} with different edits`);
        continue;
      }
      byTarget.set(target, text);
      const tmp = sibling(target, 'tmp');
      const info = await stat(target);
      await writeFile(tmp, bytes, { flag: 'wx', mode: 0o600 });
      staged.push({ path: file.path, target, tmp });
      await chmod(tmp, info.mode & 0o7777);
      if (process.getuid?.() === 0 && (info.uid !== 0 || info.gid !== 0)) await chown(tmp, info.uid, info.gid);
    }
    // A second name for each old file, so that a failed rename below can put the earlier ones back.
    for (const s of staged) {
      current = s.path;
      s.backup = sibling(s.target, 'old');
      await link(s.target, s.backup).catch(() => copyFile(s.target, s.backup as string));
    }
  } catch (err) {
    await undo();
    throw failure(current, err);
  }
  const renamed: Staged[] = [];
  try {
    for (const s of staged) {
      current = s.path;
      await rename(s.tmp, s.target);
      renamed.push(s);
    }
  } catch (err) {
    try {
      for (const s of renamed) await rename(s.backup as string, s.target);
    } finally {
      await undo();
    }
    throw failure(current, err);
  }
  await Promise.all(staged.map((s) => rm(s.backup as string, { force: true })));
  return staged.length;
}

function failure(path: string, err: unknown): unknown {
  const wrapped = asIoError('write', path, err, '; no file was changed');
  return wrapped instanceof CliError
    ? wrapped
    : new CliError(`cannot write ${path}: ${(err as Error).message}; no file was changed`, ExitCode.Internal);
}
