/** The one bounded file reader for every path prewarm is given: regular files, never blocking, bounded. */
import { constants, type Stats } from 'node:fs';
import { open, realpath, stat } from 'node:fs/promises';

/** The largest spec file read: past what the apiserver accepts, a file is a mistake or an attack. */
export const MAX_SPEC_FILE_BYTES = 4 * 1024 * 1024;

/**
 * Reads a file the invoker named (a kubeconfig), as spec files are read but following links, since
 * the invoker chose the path. A problem never quotes the content.
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
 * has effects) and again on the descriptor, so a swapped file is caught; a size that does not match
 * the content (`/proc`, `/sys`) is refused. `real` must not end in a link.
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
        return { problem: `is ${formatBytes(info.size)}, over the limit of ${formatBytes(MAX_SPEC_FILE_BYTES)} per ${kind}; not read` };
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

/** The text of a UTF-8 spec file; UTF-16 (a Windows editor's default) gets a hint, not YAML's nonsense. */
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

/** A byte count as MiB, with the exact count beside it. */
export function formatBytes(bytes: number): string {
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
