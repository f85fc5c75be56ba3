/**
 * `npm run bench:loader`: time and peak memory of `prewarm validate` on hostile and on the largest
 * accepted spec files: alias bombs, deep nesting, the largest file of each shape under the size
 * limit, and a run of many large files (the run-wide budget).
 *
 * Each case runs in a fresh child process, so its peak RSS is its own (Node's baseline included).
 * Prints `loader-<case>: <seconds> s, peak RSS <MiB> MiB, exit <code>: <first stderr line>`. A
 * benchmark, not a test: it prints figures and asserts nothing about them.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  billionLaughs,
  deepBlockNesting,
  deepFlowNesting,
  doublingMerges,
  imageCacheWith,
  largestSpec,
  manyAliases,
  manyAliasesToBigAnchor,
  mergeChain,
} from '../harness/hostile-specs.js';
import { MAX_SPEC_FILE_BYTES } from '../src/index.js';

/** A cacheSpec of `count` pools, each its own selector, of `images` images each. */
function pools(count: number, images: number): string {
  const out = ['  cacheSpec:\n'];
  for (let p = 0; p < count; p++) {
    out.push(`  - pool: p${p}\n    nodeSelector: {pool: p${p}}\n    images:\n`);
    for (let i = 0; i < images; i++) out.push(`    - r.example/a-${i}:1\n`);
  }
  return out.join('');
}

/** Each case: the files it writes (text per file). */
const CASES: Record<string, () => string[]> = {
  'aliases-32000': () => [manyAliases(32_000)],
  'aliases-128000': () => [manyAliases(128_000)],
  'doubling-merges-20': () => [doublingMerges(20)],
  'doubling-merges-200x1000': () => [doublingMerges(200, 1000)],
  'merge-chain-8000': () => [mergeChain(8_000)],
  'billion-laughs-9x10': () => [billionLaughs(9, 10)],
  'big-anchor-1000x1000': () => [manyAliasesToBigAnchor(1_000, 1_000)],
  'nesting-flow-100000': () => [deepFlowNesting(100_000)],
  'nesting-block-2000': () => [deepBlockNesting(2_000)],
  'flow-1.6MB': () => [largestSpec('flow', 1_600_000)],
  'flow-4MiB': () => [largestSpec('flow', MAX_SPEC_FILE_BYTES)],
  'block-4MiB': () => [largestSpec('block', MAX_SPEC_FILE_BYTES)],
  'entries-4MiB': () => [largestSpec('entries', MAX_SPEC_FILE_BYTES)],
  'map-4MiB': () => [largestSpec('map', MAX_SPEC_FILE_BYTES)],
  // Many files, each within the per-document limits, together past the run's node budget.
  'run-12-files-of-1.2MB-block': () => Array.from({ length: 12 }, () => largestSpec('block', 1_200_000)),
  // The run-wide byte budget (16 MiB): four of the worst shape fill it; thirty are cut at it.
  'run-4-files-of-4MiB-entries': () => Array.from({ length: 4 }, () => largestSpec('entries', MAX_SPEC_FILE_BYTES - 100)),
  'run-30-files-of-4MiB-block': () => Array.from({ length: 30 }, () => largestSpec('block', MAX_SPEC_FILE_BYTES - 100)),
  // The image budgets: 10,000 images over 5 pools is the largest run accepted; 25,000 is refused
  // before anything is built.
  'images-10000-in-5-pools': () => [imageCacheWith(pools(5, 2_000))],
  'images-25000-in-10-pools': () => [imageCacheWith(pools(10, 2_500))],
};

interface Sample {
  readonly seconds: number;
  readonly peakRssMiB: number;
  readonly exit: number;
  readonly message: string;
}

/** Child mode: write the case's files, validate them once, report one sample as JSON. */
async function child(name: string): Promise<void> {
  const make = CASES[name];
  if (make === undefined) throw new Error(`unknown case ${name}`);
  const dir = await mkdtemp(join(tmpdir(), 'prewarm-bench-loader-'));
  try {
    const texts = make();
    await Promise.all(texts.map((text, i) => writeFile(join(dir, `spec-${i}.yaml`), text.replace('name: bomb', `name: bomb-${i}`))));
    const { run } = await import('../src/cli/main.js');
    let stderr = '';
    const started = process.hrtime.bigint();
    const exit = await run(['validate', dir], { stdout: () => undefined, stderr: (t) => (stderr += t) });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const sample: Sample = {
      seconds,
      peakRssMiB: process.resourceUsage().maxRSS / 1024,
      exit,
      message: (stderr.split('\n')[0] ?? '').replace(dir, '<dir>').slice(0, 200),
    };
    process.stdout.write(`${JSON.stringify(sample)}\n`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function parent(): void {
  const self = fileURLToPath(import.meta.url);
  const only = process.argv.slice(2);
  console.log(`bench:loader — node ${process.version}, one run per case in a fresh process`);
  for (const name of Object.keys(CASES)) {
    if (only.length > 0 && !only.includes(name)) continue;
    let out: string;
    try {
      out = execFileSync(process.execPath, ['--import', 'tsx', self, '--child', name], { encoding: 'utf8', maxBuffer: 1 << 20 });
    } catch (err) {
      // A child that dies (out of memory, killed) is a figure too.
      const e = err as { status?: number | null; signal?: string | null; stderr?: string };
      const last =
        (e.stderr ?? '')
          .trim()
          .split('\n')
          .filter((l) => !/^\s+at /.test(l))
          .slice(-1)[0] ?? '';
      console.log(`loader-${name}: child failed (status ${e.status ?? '-'}, signal ${e.signal ?? '-'}): ${last.slice(0, 200)}`);
      continue;
    }
    const s = JSON.parse(out.trim().split('\n').pop() ?? '{}') as Sample;
    console.log(`loader-${name}: ${s.seconds.toFixed(2)} s, peak RSS ${s.peakRssMiB.toFixed(0)} MiB, exit ${s.exit}: ${s.message}`);
  }
}

const at = process.argv.indexOf('--child');
if (at >= 0) await child(process.argv[at + 1] ?? '');
else parent();
