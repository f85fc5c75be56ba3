/**
 * `npm run bench:argocd`: how long Argo CD takes to render N generated ImageCaches (100, 1,000
 * and 5,000 by default; 20 images each over 50 pools, the shape of bench:synth, one file each)
 * through the prewarm plugin, against Argo CD's repo-server deadline of 60 s.
 *
 * The path is the gitops tier's (harness/argocd/cmp.ts): Argo CD's real argocd-cmp-server v3.5.7
 * running deploy/argocd/plugin.yaml as uid 999, asked by cmp-client as argocd-repo-server asks it
 * (discovery with the repository tarball, then GenerateManifest), so a figure is the time the
 * repo-server would wait: discovery's `prewarm-argocd discover`, the tarball, `prewarm-argocd
 * generate` running the built CLI (lib/, built first), and the manifests streamed back. Each size
 * has a repository of its own, holding only its ImageCaches. Needs root
 * (the servers run as uid 999). Each size's repository is rendered `--repeats` times in a row by
 * one server; prints each run, the median and its share of the deadline, and writes
 * bench/results/<results>.json. A benchmark, not a test: it prints figures and asserts nothing
 * about time.
 */
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import {
  ARGO_TIMEOUT_S,
  buildArgocdBin,
  cmpRequest,
  cmpRig,
  readOnly,
  removeWork,
  startCmpServer,
  stopCmpServer,
} from '../harness/argocd/cmp.js';
import { REPO_DIR } from '../harness/cluster/config.js';
import { run } from '../harness/cluster/sh.js';
import { SCALE_IMAGES_PER_CACHE, SCALE_POOLS, scaleImageCache } from '../harness/specs.js';
import { log, saveResults } from './support/stats.js';

const args = await yargs(hideBin(process.argv))
  .option('sizes', { type: 'string', default: '100,1000,5000', describe: 'comma-separated numbers of ImageCaches' })
  .option('repeats', { type: 'number', default: 3, describe: 'renders per size (the median is reported)' })
  .option('results', { type: 'string', default: 'argocd', describe: 'name of the bench/results/<name>.json file' })
  .strict()
  .parseAsync();
const sizes = args.sizes.split(',').map(Number);
if (sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--sizes ${args.sizes}: positive integers only`);
if (!Number.isInteger(args.repeats) || args.repeats < 1) throw new Error(`--repeats ${args.repeats}: a positive integer`);

interface Sample {
  readonly n: number;
  readonly run: number;
  readonly millis: number;
  readonly objects: number;
  readonly error?: string;
}

/**
 * Median seconds of `runs`, a failed one (past the deadline, or any other error) counting as
 * slower than every success; Infinity when the median is a failure.
 */
function medianSeconds(runs: readonly Sample[]): number {
  const xs = runs.map((s) => (s.error === undefined ? s.millis / 1000 : Infinity)).sort((a, b) => a - b);
  const mid = Math.floor(xs.length / 2);
  return xs.length % 2 === 1 ? (xs[mid] as number) : ((xs[mid - 1] as number) + (xs[mid] as number)) / 2;
}

/** Load average over 1 minute, the figure the docs quote beside each run. */
const load1 = () => Number(loadavg()[0]?.toFixed(2));

log('npm run build (the plugin runs lib/src/cli/bin.js)');
run(['npm', 'run', 'build', '--silent'], { cwd: REPO_DIR, timeoutMs: 600_000 });
const bin = buildArgocdBin();

const work = mkdtempSync(join(tmpdir(), 'prewarm-bench-argocd-'));
chmodSync(work, 0o755);
const samples: Sample[] = [];
const loadBefore = load1();
try {
  // A repository per size, its ImageCaches in one folder: the repo-server streams the whole
  // repository to the plugin, so a shared one would make every size pay for the largest.
  const repoOf = (n: number) => join(work, `repo-${n}`);
  for (const n of sizes) {
    const dir = join(repoOf(n), 'imagecaches');
    mkdirSync(dir, { recursive: true });
    for (let i = 0; i < n; i++) writeFileSync(join(dir, `cache-${i}.yaml`), scaleImageCache(i, 'registry.example.invalid'));
    readOnly(repoOf(n));
  }
  const rig = cmpRig(work, bin, join(REPO_DIR, 'lib/src/cli/bin.js'));
  // The plugin's defaults, but for the memory bound: the scale shape's pools hold 200 images each,
  // about 1.6 GiB on a warming node, over the default 1 GiB.
  const server = await startCmpServer(rig, 'bench', { PREWARM_PLUGIN_MAX_NODE_MEMORY: '2Gi' });
  try {
    console.log(
      `bench:argocd — node ${process.version}, argocd-cmp-server v3.5.7, ${args.repeats} renders per size, ` +
        `${SCALE_IMAGES_PER_CACHE} images per ImageCache over ${SCALE_POOLS} pools; load average ${loadBefore} at start`,
    );
    for (const n of sizes) {
      const runs: Sample[] = [];
      for (let r = 1; r <= args.repeats; r++) {
        const res = cmpRequest(rig, server, { repo: repoOf(n), appPath: 'imagecaches' });
        const sample: Sample = {
          n,
          run: r,
          millis: res.millis,
          objects: res.objects?.length ?? 0,
          ...(res.error === undefined ? {} : { error: res.error.slice(0, 500) }),
        };
        log(
          `${n} ImageCaches, render ${r}: ${sample.millis} ms, ${sample.objects} objects${sample.error ? `, error: ${sample.error}` : ''}`,
        );
        runs.push(sample);
      }
      samples.push(...runs);
      const mid = medianSeconds(runs);
      const figure = Number.isFinite(mid)
        ? `${mid.toFixed(2)} s median, ${((mid / ARGO_TIMEOUT_S) * 100).toFixed(1)} % of Argo CD's ${ARGO_TIMEOUT_S} s timeout (x${(ARGO_TIMEOUT_S / mid).toFixed(1)} headroom)`
        : `median past Argo CD's ${ARGO_TIMEOUT_S} s timeout`;
      const each = runs.map((s) => (s.error === undefined ? (s.millis / 1000).toFixed(2) : 'failed')).join(', ');
      console.log(`argocd-${n}: ${figure} (runs ${each} s; ${runs.find((s) => s.error === undefined)?.objects ?? 0} objects)`);
    }
  } finally {
    await stopCmpServer(server);
  }
} finally {
  removeWork(work);
}
const loadAfter = load1();
console.log(`load average ${loadAfter} at the end`);

// null: the median run failed.
const medianMs = Object.fromEntries(
  sizes.map((n) => {
    const mid = medianSeconds(samples.filter((s) => s.n === n));
    return [n, Number.isFinite(mid) ? Math.round(mid * 1000) : null];
  }),
);
const file = saveResults(args.results, {
  timeoutS: ARGO_TIMEOUT_S,
  imagesPerCache: SCALE_IMAGES_PER_CACHE,
  pools: SCALE_POOLS,
  repeats: args.repeats,
  load1: { start: loadBefore, end: loadAfter },
  medianMs,
  samples,
});
log(`wrote ${file}`);
