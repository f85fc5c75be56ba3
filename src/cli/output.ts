/**
 * All-or-nothing output: a synth writes into a fresh temporary folder beside the target and only
 * a complete result is moved into place, so a failed run leaves the previous output untouched
 * and a reader (Argo CD, a CI upload) never sees half a bundle.
 */
import { mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { mkdir } from 'node:fs/promises';

/**
 * Runs `write` against a temporary folder, then replaces `target` with it. The temporary folder
 * sits next to the target, on the same file system, so the final step is a rename. Between the
 * two renames the target is briefly absent; it is never partly written.
 */
export async function replaceDirectory(target: string, write: (dir: string) => Promise<void> | void): Promise<void> {
  const full = resolve(target);
  const parent = dirname(full);
  await mkdir(parent, { recursive: true });
  const tmp = await mkdtemp(join(parent, `.${basename(full)}.tmp-`));
  try {
    await write(tmp);
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

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
