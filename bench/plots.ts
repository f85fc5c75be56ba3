/**
 * `npm run bench:plots`: draws docs/benchmarks/*.svg from bench/results/*.json (the last run of
 * each benchmark). Plain SVG, written by hand: one row per configuration, a bar for the median
 * and a dot per node; a node that never warmed within its bound is drawn as an arrow at the edge.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_DIR, median, ttwFigure as figure } from './support/stats.js';

const OUT = join(BENCH_DIR, '..', 'docs', 'benchmarks');

/** One node of bench:time-to-warm: prewarm is judged by its warm label, the others by the images. */
interface Sample {
  set: string;
  config: string;
  warmMs?: number;
  imagesMs?: number;
  runningMs?: number;
  /** Registry profile and kubelet kind (the matrix runs; absent in earlier runs). */
  profile?: string;
  kubelet?: string;
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
}

/** The opening of an SVG of W x H on white, with a bold title at (titleX, 20). */
function svgStart(W: number, H: number, title: string, titleX: number): string[] {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<text x="${titleX}" y="20" font-size="14" font-weight="bold">${esc(title)}</text>`,
  ];
}

/** Closes `parts` and writes docs/benchmarks/<file>. */
function writeSvg(file: string, parts: string[]): void {
  parts.push('</svg>');
  mkdirSync(OUT, { recursive: true });
  writeFileSync(join(OUT, file), parts.join('\n') + '\n');
  console.log(`wrote ${join(OUT, file)}`);
}

/**
 * One chart per image set of bench:time-to-warm (docs/benchmarks/time-to-warm-<set>.svg). Rows of
 * a second run (bench/results/time-to-warm-*.json) that the main run lacks are added, marked with
 * the run's name: ratios are only ever read within one run.
 */
function timeToWarm(): void {
  const f = join(BENCH_DIR, 'results', 'time-to-warm.json');
  if (!existsSync(f)) return;
  const samples = (JSON.parse(readFileSync(f, 'utf8')) as { samples: Sample[] }).samples;
  const dir = join(BENCH_DIR, 'results');
  for (const extra of readdirSync(dir)
    .filter((x) => /^time-to-warm-.+\.json$/.test(x))
    .sort()) {
    const more = (JSON.parse(readFileSync(join(dir, extra), 'utf8')) as { samples: Sample[] }).samples.filter(
      (x) => x.set !== undefined && x.profile === undefined,
    );
    const known = new Set(samples.map((x) => `${x.set}/${x.config}`));
    const run = extra.replace(/^time-to-warm-|\.json$/g, '');
    samples.push(...more.filter((x) => !known.has(`${x.set}/${x.config}`)).map((x) => ({ ...x, config: `${x.config} (${run})` })));
  }
  for (const set of [...new Set(samples.map((x) => x.set))]) {
    const rows = samples.filter((x) => x.set === set);
    const configs = [...new Set(rows.map((x) => x.config))];
    ttwChart(
      `time-to-warm-${set}.svg`,
      `${set}: node Ready to warm (prewarm: warm label; others: images in containerd)`,
      configs.map((c) => ({ label: c, config: c, values: rows.filter((x) => x.config === c).map((x) => figure(x)) })),
    );
  }
}

/**
 * The profile × kubelet matrix of bench:time-to-warm (results files with samples that name their
 * profile): one chart per set and profile, docs/benchmarks/time-to-warm-<set>-<profile>.svg, a row
 * per configuration and kubelet; the pod floor on top.
 */
function timeToWarmMatrix(): void {
  const dir = join(BENCH_DIR, 'results');
  const samples = readdirSync(dir)
    .filter((x) => /^time-to-warm-.+\.json$/.test(x))
    .sort()
    .flatMap((f) => (JSON.parse(readFileSync(join(dir, f), 'utf8')) as { samples: Sample[] }).samples)
    .filter((x) => x.profile !== undefined);
  const order = ['floor', 'raw', 'raw-serial', 'lanes-1', 'lanes-default', 'lanes-per-image'];
  const rank = (c: string) => (order.includes(c) ? order.indexOf(c) : c.startsWith('kf-') ? 90 : 50);
  for (const profile of [...new Set(samples.map((x) => x.profile as string))])
    for (const set of [...new Set(samples.filter((x) => x.set !== '*').map((x) => x.set))]) {
      const rows = samples.filter((x) => x.profile === profile && (x.set === set || x.set === '*'));
      const keys = [...new Set(rows.map((x) => `${x.config}|${x.kubelet ?? ''}`))].sort(
        (a, b) => rank(a.split('|')[0] as string) - rank(b.split('|')[0] as string) || a.localeCompare(b),
      );
      ttwChart(
        `time-to-warm-${set}-${profile}.svg`,
        `${set}, ${profile} registry: node Ready to warm (prewarm: warm label; floor: pod Running; others: images)`,
        keys.map((k) => {
          const [config, kubelet] = k.split('|') as [string, string];
          return {
            label: kubelet ? `${config} (${kubelet})` : config,
            config,
            values: rows.filter((x) => x.config === config && (x.kubelet ?? '') === kubelet).map((x) => figure(x)),
          };
        }),
      );
    }
}

/** One row of a time-to-warm chart: a bar for the median, a dot per node (undefined: never warm). */
interface TtwRow {
  readonly label: string;
  readonly config: string;
  readonly values: readonly (number | undefined)[];
}

function ttwChart(file: string, title: string, rows: readonly TtwRow[]): void {
  const finite = rows.flatMap((r) => r.values).filter((x): x is number => x !== undefined);
  const max = Math.max(10_000, ...finite) * 1.1;
  const W = 680;
  const left = 210;
  const right = 60;
  const row = 34;
  const top = 40;
  const H = top + rows.length * row + 44;
  const x = (ms: number): number => left + (Math.min(ms, max) / max) * (W - left - right);
  const parts = svgStart(W, H, title, 10);
  const step = max > 240_000 ? 60_000 : max > 80_000 ? 20_000 : max > 40_000 ? 10_000 : 5_000;
  for (let t = 0; t <= max; t += step) {
    parts.push(`<line x1="${x(t)}" y1="${top - 6}" x2="${x(t)}" y2="${top + rows.length * row}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${x(t)}" y="${top + rows.length * row + 16}" text-anchor="middle" fill="#555">${t / 1000}</text>`);
  }
  parts.push(
    `<text x="${(left + W - right) / 2}" y="${H - 8}" text-anchor="middle" fill="#555">seconds (bar: median; dots: nodes; arrow: not warm within the bound)</text>`,
  );
  rows.forEach((r, i) => {
    const c = r.config;
    const y = top + i * row;
    const vals = r.values.map((v) => v ?? Number.POSITIVE_INFINITY);
    const m = median(vals.map((v) => (Number.isFinite(v) ? v : 1e15)));
    const never = m >= 1e15;
    parts.push(`<text x="${left - 8}" y="${y + 17}" text-anchor="end">${esc(r.label)}</text>`);
    const color = c.startsWith('kf') ? '#c0504d' : c.startsWith('raw') || c === 'floor' ? '#7f7f7f' : '#4f81bd';
    parts.push(
      `<rect x="${left}" y="${y + 6}" width="${Math.max(1, x(never ? max : m) - left)}" height="16" fill="${color}" opacity="0.75"/>`,
    );
    parts.push(`<text x="${x(never ? max : m) + 4}" y="${y + 18}" fill="#222">${never ? 'never' : (m / 1000).toFixed(1) + ' s'}</text>`);
    for (const v of vals) {
      if (Number.isFinite(v)) parts.push(`<circle cx="${x(v)}" cy="${y + 14}" r="3" fill="#222"/>`);
      else parts.push(`<path d="M ${x(max) - 8} ${y + 9} L ${x(max)} ${y + 14} L ${x(max) - 8} ${y + 19} z" fill="#222"/>`);
    }
  });
  writeSvg(file, parts);
}

/** One horizontal bar per row, labelled with its value; `note` is drawn after the value. */
interface Bar {
  readonly label: string;
  readonly value: number;
  readonly color: string;
  readonly note?: string;
}

function barChart(file: string, title: string, unit: string, bars: readonly Bar[]): void {
  const W = 680;
  const left = 250;
  const right = 170;
  const row = 30;
  const top = 36;
  const H = top + bars.length * row + 16;
  const max = Math.max(...bars.map((b) => b.value)) * 1.05;
  const x = (v: number): number => left + (v / max) * (W - left - right);
  const parts = svgStart(W, H, title, 10);
  bars.forEach((b, i) => {
    const y = top + i * row;
    parts.push(`<text x="${left - 8}" y="${y + 15}" text-anchor="end">${esc(b.label)}</text>`);
    parts.push(`<rect x="${left}" y="${y + 3}" width="${Math.max(1, x(b.value) - left)}" height="16" fill="${b.color}" opacity="0.75"/>`);
    const value = `${b.value >= 100 ? b.value.toFixed(0) : b.value.toFixed(1)} ${unit}${b.note ? ` (${b.note})` : ''}`;
    parts.push(`<text x="${x(b.value) + 4}" y="${y + 15}" fill="#222">${esc(value)}</text>`);
  });
  writeSvg(file, parts);
}

interface StormResult {
  readonly args: { readonly nodes: number; readonly windowS: number; readonly controllerManagerArgs?: readonly string[] };
  readonly storm: { readonly allRunningS: number; readonly prewarmRequestsPerNode: number };
  readonly kubeFledged?: { readonly extrapolation: { readonly requestsPerNode: number } };
}

/** The join storm: time to all pull pods Running per run, and requests per node against kube-fledged. */
function joinStorm(): void {
  const dir = join(BENCH_DIR, 'results');
  const main = join(dir, 'join-storm.json');
  if (!existsSync(main)) return;
  const runs = readdirSync(dir)
    .filter((f) => /^join-storm.*\.json$/.test(f))
    .sort()
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as StormResult);
  const label = (r: StormResult): string => {
    const cm = (r.args.controllerManagerArgs ?? [])
      .join(' ')
      .replace('--feature-gates=StaleControllerConsistencyDaemonSet=false', 'stale check off')
      .replace(/--kube-api-/g, '');
    return `${r.args.nodes} nodes in ${r.args.windowS} s, ${cm || 'KCM defaults'}`;
  };
  barChart(
    'join-storm.svg',
    'Join storm on kwok: first node created to every pull pod Running',
    's',
    runs.map((r) => ({ label: label(r), value: r.storm.allRunningS, color: '#4f81bd' })),
  );
  const full = JSON.parse(readFileSync(main, 'utf8')) as StormResult;
  const kf = full.kubeFledged?.extrapolation.requestsPerNode;
  if (kf === undefined) return;
  barChart('join-storm-requests.svg', `API requests per node, ${full.args.nodes} nodes × 10 images`, 'requests', [
    { label: 'prewarm (DaemonSet pods)', value: full.storm.prewarmRequestsPerNode, color: '#4f81bd', note: 'measured' },
    { label: 'kube-fledged model (Jobs)', value: kf, color: '#c0504d', note: 'extrapolated' },
  ]);
}

interface FootprintResult {
  readonly sizes: readonly number[];
  readonly pools: readonly { readonly config: string; readonly images: number; readonly footprint: { readonly podPss: number } }[];
  readonly kubefledged: readonly { readonly images: number; readonly peak: { readonly pssWithShims: number } }[];
}

/** Memory per node (PSS, MiB): the steady pull pod of prewarm and of a che-shape pod, kube-fledged's peak. */
function footprintNode(): void {
  const f = join(BENCH_DIR, 'results', 'footprint-node.json');
  if (!existsSync(f)) return;
  const r = JSON.parse(readFileSync(f, 'utf8')) as FootprintResult;
  const mib = (kib: number): number => kib / 1024;
  const bars: Bar[] = r.sizes.flatMap((n) => [
    ...r.pools
      .filter((p) => p.images === n && p.config === 'prewarm')
      .map((p) => ({ label: `prewarm pull pod, ${n} images`, value: mib(p.footprint.podPss), color: '#4f81bd', note: 'steady' })),
    ...r.pools
      .filter((p) => p.images === n && p.config === 'che')
      .map((p) => ({ label: `che-shape pod, ${n} images`, value: mib(p.footprint.podPss), color: '#9bbb59', note: 'steady' })),
    ...r.kubefledged
      .filter((k) => k.images === n)
      .map((k) => ({ label: `kube-fledged model, ${n} images`, value: mib(k.peak.pssWithShims), color: '#c0504d', note: 'peak, 0 idle' })),
  ]);
  barChart('footprint-node.svg', 'Memory per node, PSS (kube-fledged: its Job pods and their shims, at peak)', 'MiB', bars);
}

timeToWarm();
timeToWarmMatrix();
joinStorm();
footprintNode();
