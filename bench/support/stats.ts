/** Figures for the benchmarks: medians, percentiles, machine description, results files, progress log. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { VERSIONS } from '../../harness/cluster/config.js';
import { run } from '../../harness/cluster/sh.js';

/** The bench/ folder. */
export const BENCH_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Where the benchmarks write their figures (read by bench/plots.ts). */
export const RESULTS_DIR = join(BENCH_DIR, 'results');

/**
 * The figure a bench:time-to-warm sample is judged by: the sidecar's warm label for prewarm
 * (`lanes-*` configurations), the pod seen Running for the pod floor, every image in containerd
 * for the others.
 */
export function ttwFigure(s: {
  readonly config: string;
  readonly warmMs?: number;
  readonly imagesMs?: number;
  readonly runningMs?: number;
}): number | undefined {
  return s.config.startsWith('lanes-') ? s.warmMs : s.config === 'floor' ? s.runningMs : s.imagesMs;
}

/** Median of the finite values; NaN when there are none (a run that never got there does not count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** Nearest-rank percentile (p in 0..100) of the finite values; NaN when there are none. */
export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] as number;
}

/** What ran the benchmark: cores, memory, CPU, node and component versions (stored with the results). */
export function machine(): Record<string, string> {
  const containerd = run(['containerd', '--version'], { allowFail: true }).stdout.trim().split(' ').slice(2, 3).join('');
  return {
    cores: String(cpus().length),
    memoryGiB: (totalmem() / 2 ** 30).toFixed(0),
    cpu: cpus()[0]?.model ?? '',
    node: process.version,
    kubernetes: VERSIONS.kubernetes,
    etcd: VERSIONS.etcd,
    kwok: VERSIONS.kwok,
    containerd,
  };
}

/** Writes bench/results/<name>.json (figures of the last run, read by bench/plots.ts). */
export function saveResults(name: string, data: unknown): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const f = join(RESULTS_DIR, `${name}.json`);
  writeFileSync(f, JSON.stringify({ when: new Date().toISOString(), machine: machine(), ...(data as object) }, null, 2) + '\n');
  return f;
}

/** A progress line on stderr, stamped with the time of day; stdout keeps the figures. */
export function log(msg: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}
