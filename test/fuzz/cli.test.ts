/**
 * The fuzz run of the loader and the CLI: a fixed number of generated cases per family, from a fixed
 * seed, each run as a child process of the built CLI against the invariants in runner.ts. It stops
 * on its own (every case has a hard time limit) and reports every broken invariant of every case,
 * with a folder to replay it from, rather than stopping at the first.
 *
 * `npm run fuzz` builds and runs it; `npm test` runs it after the build. Knobs (environment):
 * - `PREWARM_FUZZ_SEED`: another seed (default fixed, so a run is reproducible);
 * - `PREWARM_FUZZ_SCALE`: multiply every family's count (default 1, about a minute on 2 cores);
 * - `PREWARM_FUZZ_CASE`: run only the case of that index (as a failure report names it).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateCase, type CorpusFile, type Family, type FuzzCase } from './generators.js';
import { Rng } from './rng.js';
import { builtCli, commandsWithRequestTimeout, runCase, type CaseResult, type RunOptions } from './runner.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const SEED = Number(process.env['PREWARM_FUZZ_SEED'] ?? 20_2612);
const SCALE = Math.max(0.1, Number(process.env['PREWARM_FUZZ_SCALE'] ?? 1));
const ONLY = process.env['PREWARM_FUZZ_CASE'];
/** Cases per family at scale 1, and how many of the family run at once (network cases mostly wait). */
const FAMILIES: Readonly<Record<Family, { count: number; parallel: number }>> = {
  'hostile-yaml': { count: 14, parallel: 2 },
  'mutate-real': { count: 16, parallel: 2 },
  'fs-shapes': { count: 6, parallel: 2 },
  argv: { count: 16, parallel: 2 },
  network: { count: 14, parallel: 6 },
};
const FAILURES = join(tmpdir(), `prewarm-fuzz-failures-${SEED}`);

function yamlFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.ya?ml$/.test(e.name))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)))
    .sort();
}

/** Real inputs: the examples, kube-fledged's deploy folder (a folder of other manifests), prewarm's own output. */
function corpus(): CorpusFile[] {
  const files = [...yamlFiles('examples'), ...yamlFiles('test/fixtures/kube-fledged-deploy'), ...yamlFiles('dist')];
  return files.map((f) => ({ name: f.replace(/^test\/fixtures\//, ''), text: readFileSync(join(ROOT, f), 'utf8') }));
}

/** The newest modification time of any file below `dir`. */
function newest(dir: string): number {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .reduce((t, e) => Math.max(t, statSync(join(e.parentPath, e.name)).mtimeMs), 0);
}

function cases(): FuzzCase[] {
  const files = corpus();
  const out: FuzzCase[] = [];
  let index = 0;
  for (const [family, { count }] of Object.entries(FAMILIES) as [Family, { count: number }][]) {
    for (let i = 0; i < Math.round(count * SCALE); i++, index++) out.push(generateCase(family, i, Rng.forCase(SEED, index), files));
  }
  // Indexes are global, so a reported index replays alone.
  return out.map((c, i) => ({ ...c, index: i })).filter((c) => ONLY === undefined || String(c.index) === ONLY);
}

async function pool<T, R>(items: readonly T[], parallel: number, run: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      results.push(await run(item));
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, items.length) }, worker));
  return results;
}

function report(results: readonly CaseResult[]): string {
  return results
    .filter((r) => r.problems.length > 0)
    .sort((a, b) => a.case.index - b.case.index)
    .map(
      (r) =>
        `case ${r.case.index} (${r.case.family}: ${r.case.what})\n` +
        `  argv: prewarm ${r.argv.map((a) => JSON.stringify(a)).join(' ')}\n` +
        `  exit ${r.code ?? '-'}${r.signal === null ? '' : ` (${r.signal})`} after ${r.ms} ms, peak RSS ${r.rssKiB === undefined ? '?' : Math.round(r.rssKiB / 1024)} MiB\n` +
        r.problems.map((p) => `  - ${p}\n`).join('') +
        `  replay: PREWARM_FUZZ_SEED=${SEED} PREWARM_FUZZ_CASE=${r.case.index} npm run fuzz; files in ${r.reproducer ?? '-'}`,
    )
    .join('\n');
}

describe('fuzz: the loader and the CLI, with alias bombs and hostile servers', () => {
  it(
    'every generated case ends in time, with a documented exit code, no stack trace, no half-written output, no leftovers',
    { timeout: 900_000 },
    async () => {
      const cli = builtCli(ROOT);
      const built = statSync(cli, { throwIfNoEntry: false });
      if (built === undefined)
        throw new Error(`${relative(ROOT, cli)} is missing: run \`npm run build\` (or \`npm run fuzz\`, which builds first)`);
      if (newest('src') > built.mtimeMs) throw new Error(`${relative(ROOT, cli)} is older than src/: run \`npm run build\` first`);

      const options: RunOptions = { cli, keepFailuresIn: FAILURES, requestTimeout: await commandsWithRequestTimeout(cli) };
      const all = cases();
      expect(all.length).toBeGreaterThan(0);
      const byFamily = (f: Family) => all.filter((c) => c.family === f);
      const started = Date.now();
      // A case whose set-up breaks is reported with the rest; it does not end the run.
      const run = (c: FuzzCase): Promise<CaseResult> =>
        runCase(c, options).catch((err: unknown) => ({
          case: c,
          argv: c.argv,
          code: null,
          signal: 'set-up',
          ms: 0,
          rssKiB: undefined,
          stderr: '',
          problems: [`the fuzz set-up failed: ${String(err)}`],
        }));
      const results = (
        await Promise.all([
          pool(
            all.filter((c) => c.family !== 'network'),
            2,
            run,
          ),
          pool(byFamily('network'), FAMILIES.network.parallel, run),
        ])
      ).flat();
      const failed = results.filter((r) => r.problems.length > 0);
      const codes = results.reduce<Record<string, number>>(
        (m, r) => ({ ...m, [String(r.code ?? r.signal)]: (m[String(r.code ?? r.signal)] ?? 0) + 1 }),
        {},
      );
      const peak = Math.max(...results.map((r) => r.rssKiB ?? 0));
      console.log(
        `fuzz: seed ${SEED}, ${results.length} cases in ${((Date.now() - started) / 1000).toFixed(1)} s, exit codes ${JSON.stringify(codes)}, ` +
          `peak RSS ${Math.round(peak / 1024)} MiB, ${failed.length} failed; --request-timeout on: ${[...options.requestTimeout].join(', ') || 'no command'}`,
      );
      expect(results).toHaveLength(all.length);
      expect(report(results), `${failed.length} of ${results.length} cases broke an invariant`).toBe('');
    },
  );
});
