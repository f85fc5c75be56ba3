/**
 * `npm run bench:synth`: end-to-end synth time and peak memory for 100, 1,000 and 10,000
 * generated ImageCaches (20 images each, over 50 pools), through the same path as
 * `prewarm synth DIR -o OUT`: read files, validate, group, build constructs, write YAML.
 *
 * Each measurement runs in a fresh child process, so peak RSS is that size's alone. Prints
 * `synth-N: <median seconds> s` per size plus the growth ratio between sizes. A benchmark, not a
 * test: it prints figures and asserts nothing about time.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scaleImageCache } from '../harness/specs.js';
import { ExitCode } from '../src/cli/exit-codes.js';

const SIZES = [100, 1_000, 10_000];
const REPEATS = Number(process.env['BENCH_REPEATS'] ?? 3);

interface Sample {
  readonly n: number;
  readonly seconds: number;
  readonly peakRssMiB: number;
  readonly pools: number;
  readonly images: number;
}

/** Child mode: generate N specs, synthesize them once, report one sample as JSON. */
async function child(n: number): Promise<void> {
  const { run } = await import('../src/cli/main.js');
  const dir = await mkdtemp(join(tmpdir(), `prewarm-bench-${n}-`));
  try {
    const specs = join(dir, 'specs');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(specs);
    // 100 specs per file, as multi-document YAML, like a real repo's folders.
    for (let f = 0; f * 100 < n; f++) {
      const docs: string[] = [];
      for (let i = f * 100; i < Math.min(n, (f + 1) * 100); i++) docs.push(scaleImageCache(i, 'registry.example.com'));
      await writeFile(join(specs, `caches-${f}.yaml`), docs.join('---\n'));
    }
    let stderr = '';
    const started = process.hrtime.bigint();
    // The scale shape's pools hold 200 images each, about 1.6 GiB on a warming node: over the default bound.
    const code = await run(['synth', specs, '-o', join(dir, 'out'), '--max-node-memory', '2Gi'], {
      stdout: () => undefined,
      stderr: (t) => (stderr += t),
    });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    if (code !== ExitCode.Success) throw new Error(`synth failed (${code}): ${stderr}`);
    const m = /wrote (\d+) pools \((\d+) images\)/.exec(stderr);
    const sample: Sample = {
      n,
      seconds,
      peakRssMiB: process.resourceUsage().maxRSS / 1024,
      pools: Number(m?.[1] ?? 0),
      images: Number(m?.[2] ?? 0),
    };
    process.stdout.write(`${JSON.stringify(sample)}\n`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

function parent(): void {
  const self = fileURLToPath(import.meta.url);
  console.log(`bench:synth — node ${process.version}, ${REPEATS} runs per size, median reported`);
  const medians = new Map<number, number>();
  for (const n of SIZES) {
    const samples: Sample[] = [];
    for (let r = 0; r < REPEATS; r++) {
      const out = execFileSync(process.execPath, ['--import', 'tsx', self, '--child', String(n)], { encoding: 'utf8', maxBuffer: 1 << 20 });
      samples.push(JSON.parse(out.trim().split('\n').pop() ?? '{}') as Sample);
    }
    const seconds = median(samples.map((s) => s.seconds));
    medians.set(n, seconds);
    const rss = median(samples.map((s) => s.peakRssMiB));
    const first = samples[0];
    console.log(`synth-${n}: ${seconds.toFixed(3)} s (peak RSS ${rss.toFixed(0)} MiB; ${first?.pools} pools, ${first?.images} containers)`);
  }
  for (let i = 1; i < SIZES.length; i++) {
    const a = SIZES[i - 1] as number;
    const b = SIZES[i] as number;
    const ratio = (medians.get(b) ?? 0) / (medians.get(a) ?? 1);
    console.log(`growth ${a} -> ${b} (x${b / a} input): x${ratio.toFixed(2)} time`);
  }
}

const at = process.argv.indexOf('--child');
if (at >= 0) await child(Number(process.argv[at + 1]));
else parent();
