/** Shared helpers of the gitops tests. */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const REPO = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
export const CLI = join(REPO, 'lib/src/cli/bin.js');

export interface RunResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs a command to completion (bounded by timeoutMs); never throws on a non-zero exit. */
export function run(argv: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {}): RunResult {
  const t0 = performance.now();
  const r = spawnSync(argv[0]!, argv.slice(1), {
    cwd: opts.cwd ?? REPO,
    env: opts.env ?? process.env,
    input: opts.input ?? '',
    encoding: 'utf8',
    timeout: opts.timeoutMs ?? 120_000,
    maxBuffer: 256 * 1024 * 1024,
  });
  if (r.error) throw r.error;
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr, ms: performance.now() - t0 };
}

/** Every YAML document of a stream, as plain data; a parse error throws. */
export function docs(text: string): Record<string, unknown>[] {
  return parseAllDocuments(text).map((d) => {
    if (d.errors.length > 0) throw new Error(d.errors.map((e) => e.message).join('; '));
    return d.toJS() as Record<string, unknown>;
  }).filter((d) => d !== null);
}

/** "apiVersion/kind/namespace/name" of a manifest. */
export function id(o: Record<string, unknown>): string {
  const m = (o['metadata'] ?? {}) as { name?: string; namespace?: string };
  return `${String(o['apiVersion'])}/${String(o['kind'])}/${m.namespace ?? ''}/${m.name ?? ''}`;
}

/** The YAML files directly in dist/ (what Flux applies), sorted. */
export function distFiles(): string[] {
  return readdirSync(join(REPO, 'dist')).filter((f) => /\.ya?ml$/.test(f)).sort().map((f) => join(REPO, 'dist', f));
}

export function distDocs(): Record<string, unknown>[] {
  return distFiles().flatMap((f) => docs(readFileSync(f, 'utf8')));
}
