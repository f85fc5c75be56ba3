/**
 * deploy/grafana/prewarm-dashboard.json names only metrics the sidecar really exports. The
 * exported names are read from what src/reconciler/metrics.ts renders (its `# TYPE` lines, plus
 * a histogram's _bucket, _sum and _count series), never from a second list; the names a query
 * uses are parsed out of every PromQL expression of the dashboard, template variables included.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/reconciler/metrics.js';

const DASHBOARD = 'deploy/grafana/prewarm-dashboard.json';

/** Every series name the sidecar's /metrics can contain. */
function exportedSeries(): Set<string> {
  const names = new Set<string>();
  for (const line of new Metrics().render().split('\n')) {
    const m = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (!m?.[1]) continue;
    names.add(m[1]);
    if (m[2] === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(`${m[1]}${s}`);
  }
  return names;
}

/** PromQL words that are not metric names: keywords, operators and aggregation modifiers. */
const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'atan2',
  'inf',
  'nan',
]);

/**
 * The metric names an expression selects. Removed first: string literals, label matchers
 * (`{...}`), ranges and subqueries (`[...]`), `offset` and `@` modifiers, number literals, the label lists of `by`/`without`/`on`/`ignoring`/
 * `group_*`, and Grafana variables; what is left that is an identifier, not a keyword and not
 * called as a function is a metric name.
 */
export function metricNames(expr: string): string[] {
  const text = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ')
    .replace(/\boffset\s+-?[0-9a-z]+|@\s*(?:start\(\)|end\(\)|[0-9.]+)/gi, ' ')
    .replace(/(?<![\w:])(?:0x[0-9a-f]+|\d+(?:\.\d*)?(?:e[+-]?\d+)?)(?![\w:])/gi, ' ');
  const names = new Set<string>();
  for (const m of text.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const word = m[0];
    const after = text.slice((m.index ?? 0) + word.length).trimStart();
    if (KEYWORDS.has(word.toLowerCase()) || after.startsWith('(')) continue;
    names.add(word);
  }
  return [...names].sort();
}

interface Target {
  expr?: string;
}
interface Panel {
  title: string;
  targets?: Target[];
}
interface Variable {
  name: string;
  type: string;
  query?: string | { query?: string };
}
interface Dashboard {
  panels: Panel[];
  templating: { list: Variable[] };
}

const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;

/** Every PromQL expression of the dashboard, with where it stands. */
function expressions(): { where: string; expr: string }[] {
  const out: { where: string; expr: string }[] = [];
  for (const p of dashboard.panels)
    for (const t of p.targets ?? []) if (t.expr !== undefined) out.push({ where: `panel "${p.title}"`, expr: t.expr });
  for (const v of dashboard.templating.list) {
    if (v.type !== 'query') continue;
    const q = typeof v.query === 'string' ? v.query : (v.query?.query ?? '');
    // label_values(metric, label): the first argument is a series selector, the second a label.
    const m = /^label_values\(\s*([^,]+?)\s*,\s*\w+\s*\)$/.exec(q);
    out.push({ where: `variable $${v.name}`, expr: m?.[1] ?? q });
  }
  return out;
}

describe('metricNames (the PromQL reader of this test)', () => {
  it.each([
    [
      'histogram_quantile(0.9, sum by (pool, le) (increase(prewarm_time_to_warm_seconds_bucket{pool=~"$pool"}[$window])))',
      ['prewarm_time_to_warm_seconds_bucket'],
    ],
    ['sum by (pool, reason) (prewarm_images_failing{reason!="by"}) > 0', ['prewarm_images_failing']],
    ['a_total / on (pool) group_left (node) b_info offset 5m', ['a_total', 'b_info']],
    ['rate(x_total[5m:1m]) and bool y unless z', ['x_total', 'y', 'z']],
    ['sum without (le) (rate(prewarm_nonexistent_total[${__rate_interval}])) * 1e3', ['prewarm_nonexistent_total']],
  ])('%s names %j', (expr, names) => {
    expect(metricNames(expr)).toEqual(names);
  });
});

describe(DASHBOARD, () => {
  const exported = exportedSeries();

  it('reads the exported names from the sidecar (a histogram with its series, counters, gauges)', () => {
    expect(exported.has('prewarm_time_to_warm_seconds_bucket')).toBe(true);
    expect(exported.has('prewarm_refresh_checks_total')).toBe(true);
    expect(exported.has('prewarm_time_to_warm_seconds')).toBe(true);
    expect(exported.size).toBeGreaterThan(8);
  });

  it('every query names at least one metric, and only metrics the sidecar exports', () => {
    const exprs = expressions();
    expect(exprs.length).toBeGreaterThan(5);
    for (const { where, expr } of exprs) {
      const names = metricNames(expr);
      expect(names.length, `${where}: ${expr}`).toBeGreaterThan(0);
      for (const n of names) expect(exported.has(n), `${where} names ${n}, which the sidecar does not export: ${expr}`).toBe(true);
    }
  });

  it('has the panels the issue asks for', () => {
    const uses = (metric: string, fn?: string): string[] =>
      dashboard.panels
        .filter((p) =>
          (p.targets ?? []).some(
            (t) => metricNames(t.expr ?? '').includes(metric) && (fn === undefined || (t.expr ?? '').includes(`${fn}(`)),
          ),
        )
        .map((p) => p.title);
    expect(uses('prewarm_time_to_warm_seconds_bucket', 'histogram_quantile')).toEqual(['Time to warm per pool (p50, p90, p99)']);
    expect(uses('prewarm_pool_warm')).toEqual(['Warm and partial nodes per pool']);
    expect(uses('prewarm_pool_partial')).toEqual(['Warm and partial nodes per pool']);
    expect(uses('prewarm_images_failing')).toEqual(['Failing images by reason']);
    expect(uses('prewarm_refresh_checks_total')).toEqual(['Tag refreshes by outcome']);
  });
});
