/**
 * How prewarm recognises a folder it wrote: only regular files, either listed by the marker or,
 * from before the marker, synth-named with `prewarm-cluster.k8s.yaml`. `synth -o` replaces only
 * such a folder, and the spec loader skips it.
 */
import { constants } from 'node:fs';
import { open, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CLUSTER_CHART_ID, namespaceChartId } from '../synth/naming.js';

/** The marker synth writes into every output folder; hidden, so no YAML walk ever reads it. */
export const OUTPUT_MARKER = '.prewarm-output';

/** A longer marker was not written by prewarm. */
const MARKER_MAX_BYTES = 1 << 20;

const CLUSTER_FILE = `${CLUSTER_CHART_ID}.k8s.yaml`;
// A namespace is a DNS-1123 label, so the names synth writes are exactly these.
const OUTPUT_FILE = new RegExp(`^(${CLUSTER_CHART_ID}|${namespaceChartId('')}[a-z0-9]([-a-z0-9]*[a-z0-9])?)\\.k8s\\.yaml$`);

const MARKER_HEADER = [
  '# Written by `prewarm synth`: this folder is replaced whole on every run, so keep nothing else here.',
  '# prewarm replaces it only while it holds this file and the files listed below, and nothing more.',
];

export interface FolderEntry {
  readonly name: string;
  readonly isFile: boolean;
}

/** What a folder holds, as far as replacing it goes. */
export type OutputContents =
  | { readonly kind: 'empty' }
  | { readonly kind: 'output' }
  /** Something prewarm did not write; `names` are those entries, sorted, folders with a trailing `/`. */
  | { readonly kind: 'foreign'; readonly names: readonly string[] };

/** Classifies a folder's listing and marker text; pure, so a walk decides without more I/O. */
export function classifyOutput(entries: readonly FolderEntry[], marker?: string): OutputContents {
  if (entries.length === 0) return { kind: 'empty' };
  const listed = marker === undefined ? undefined : new Set(markerFiles(marker));
  const hasMarker = listed !== undefined && entries.some((e) => e.name === OUTPUT_MARKER && e.isFile);
  const ours = (e: FolderEntry): boolean =>
    e.isFile && (hasMarker ? e.name === OUTPUT_MARKER || (listed.has(e.name) && OUTPUT_FILE.test(e.name)) : OUTPUT_FILE.test(e.name));
  const foreign = entries.filter((e) => !ours(e)).map((e) => (e.isFile ? e.name : `${e.name}/`));
  if (foreign.length > 0) return { kind: 'foreign', names: foreign.sort() };
  if (!hasMarker && !entries.some((e) => e.name === CLUSTER_FILE)) return { kind: 'foreign', names: entries.map((e) => e.name).sort() };
  return { kind: 'output' };
}

/** Reads and classifies the folder `dir` (which must exist and be a folder). */
export async function inspectOutput(dir: string): Promise<OutputContents> {
  const entries = (await readdir(dir, { withFileTypes: true })).map((d) => ({ name: d.name, isFile: d.isFile() }));
  return classifyOutput(
    entries,
    entries.some((e) => e.name === OUTPUT_MARKER && e.isFile) ? await readMarker(join(dir, OUTPUT_MARKER)) : undefined,
  );
}

/** Whether `dir` is a folder synth wrote; false when empty, not a folder, or unreadable. */
export async function isPrewarmOutput(dir: string): Promise<boolean> {
  try {
    return (await inspectOutput(dir)).kind === 'output';
  } catch {
    return false;
  }
}

/** Into a fresh folder holding only what synth just wrote. */
export async function writeOutputMarker(dir: string): Promise<void> {
  const files = (await readdir(dir)).filter((name) => name !== OUTPUT_MARKER).sort();
  await writeFile(join(dir, OUTPUT_MARKER), [...MARKER_HEADER, ...files, ''].join('\n'));
}

function markerFiles(text: string): string[] {
  return text.split(/\r?\n/).filter((line) => line !== '' && !line.startsWith('#'));
}

async function readMarker(path: string): Promise<string | undefined> {
  // The listing said a regular file; never follow a link or block on a FIFO swapped in since.
  const file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const buffer = Buffer.alloc(MARKER_MAX_BYTES + 1);
    const { bytesRead } = await file.read(buffer, 0, buffer.length, 0);
    return bytesRead > MARKER_MAX_BYTES ? undefined : buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await file.close();
  }
}
