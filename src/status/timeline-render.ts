/**
 * Draws a {@link Timeline}: as text bars scaled to time (`prewarm status --node`), and as an SVG
 * waterfall (`prewarm status --node -o svg`, and the benchmarks' charts). Pure.
 */
import type { Span, SpanKind, Timeline, TimelineRow } from './timeline.js';

/** Text glyph and SVG colour of each span kind, and what it means: the legend of both. */
const KINDS: Readonly<Record<SpanKind, { glyph: string; color: string; meaning: string }>> = {
  pending: { glyph: '.', color: '#c7c7c7', meaning: 'created, not scheduled' },
  sandbox: { glyph: ':', color: '#9ecae1', meaning: 'scheduled, sandbox starting' },
  init: { glyph: '+', color: '#6baed6', meaning: 'init container' },
  containers: { glyph: '-', color: '#3182bd', meaning: 'starting containers' },
  pulling: { glyph: '#', color: '#31a354', meaning: 'pulling (kubelet measure)' },
  present: { glyph: '|', color: '#a1d99b', meaning: 'already present' },
  failed: { glyph: 'x', color: '#de2d26', meaning: 'pull failed' },
  running: { glyph: '>', color: '#756bb1', meaning: 'container started' },
};

function fmt(s: number): string {
  return `${s.toFixed(1)}s`;
}

function rowLabel(r: TimelineRow): string {
  return r.kind === 'pod' ? `${r.label} ${r.pod}` : `  ${r.label}`;
}

function rowNote(r: TimelineRow): string {
  if (r.kind === 'pod') {
    const c = r.spans.find((s) => s.kind === 'containers');
    return c?.to === undefined ? '' : `all started ${fmt(c.to)}`;
  }
  if (r.outcome === 'pulled') return `pulled in ${fmt(r.pullSeconds ?? 0)}`;
  if (r.outcome === 'present') return 'present';
  if (r.outcome === 'failed') return `failed: ${r.spans.find((s) => s.kind === 'failed')?.note ?? ''}`;
  return 'waiting';
}

/** The time range drawn: from the earliest span (or 0) to the end. */
function range(t: Timeline): { lo: number; hi: number } {
  const lo = Math.min(0, ...t.rows.flatMap((r) => r.spans.map((s) => s.from)));
  return { lo, hi: Math.max(t.end, lo + 1) };
}

/** Text bars, `width` columns for the bars. */
export function renderTimelineText(t: Timeline, width = 60): string {
  const { lo, hi } = range(t);
  const col = (s: number) => Math.min(width - 1, Math.max(0, Math.round(((s - lo) / (hi - lo)) * (width - 1))));
  const labels = t.rows.map(rowLabel);
  const lw = Math.min(60, Math.max(10, ...labels.map((l) => l.length)));
  const cut = (l: string) => (l.length > lw ? `${l.slice(0, lw - 1)}…` : l.padEnd(lw));
  const lines = [`node ${t.node}: 0s = ${t.originLabel} (${t.origin}), ${fmt(lo)} .. ${fmt(hi)}`];
  const axis = Array.from({ length: width }, () => ' ');
  for (const m of t.marks) axis[col(m.at)] = '^';
  for (const r of t.rows) {
    const bar = Array.from({ length: width }, () => ' ');
    for (const s of r.spans) draw(bar, s, col, t.end);
    lines.push(`${cut(rowLabel(r))} |${bar.join('')}| ${rowNote(r)}`);
  }
  lines.push(`${''.padEnd(lw)}  ${axis.join('')}`);
  for (const m of t.marks) lines.push(`${''.padEnd(lw)}  ^ ${fmt(m.at)} ${m.label}`);
  const used = new Set(t.rows.flatMap((r) => r.spans.map((s) => s.kind)));
  lines.push(
    `legend: ${Object.entries(KINDS)
      .filter(([k]) => used.has(k as SpanKind))
      .map(([, v]) => `${v.glyph} ${v.meaning}`)
      .join(', ')}`,
  );
  for (const n of t.notes) lines.push(`note: ${n}`);
  return `${lines.join('\n')}\n`;
}

function draw(bar: string[], s: Span, col: (s: number) => number, end: number): void {
  const glyph = KINDS[s.kind].glyph;
  if (s.kind === 'running') {
    bar[col(s.from)] = glyph;
    return;
  }
  for (let i = col(s.from); i <= col(s.to ?? end); i++) bar[i] = glyph;
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** An SVG waterfall: one row per pod and per image, marks as vertical lines, a legend. */
export function renderTimelineSvg(t: Timeline, title = `warm-up of node ${t.node}`): string {
  const { lo, hi } = range(t);
  const rowH = 18;
  const labelW = 330;
  const plotW = 640;
  const noteW = 150;
  const top = 46;
  const x = (s: number) => labelW + ((s - lo) / (hi - lo)) * plotW;
  const h = top + t.rows.length * rowH + 100;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${labelW + plotW + noteW}" height="${h}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="8" y="16" font-size="13" font-weight="bold">${esc(title)}</text>`,
    `<text x="8" y="32" fill="#555">0 s = ${esc(t.originLabel)} (${esc(t.origin)})</text>`,
  ];
  // Axis: a tick per "nice" step.
  const step = niceStep((hi - lo) / 10);
  for (let s = Math.ceil(lo / step) * step; s <= hi + 1e-9; s += step) {
    out.push(`<line x1="${x(s).toFixed(1)}" y1="${top - 4}" x2="${x(s).toFixed(1)}" y2="${top + t.rows.length * rowH}" stroke="#eee"/>`);
    out.push(`<text x="${x(s).toFixed(1)}" y="${top - 6}" text-anchor="middle" fill="#555">${s.toFixed(step < 1 ? 1 : 0)}s</text>`);
  }
  t.rows.forEach((r, i) => {
    const y = top + i * rowH;
    const label = rowLabel(r).trim();
    out.push(
      `<text x="${r.kind === 'pod' ? 8 : 20}" y="${y + 13}"${r.kind === 'pod' ? ' font-weight="bold"' : ''}>${esc(label.length > 52 ? `${label.slice(0, 51)}…` : label)}</text>`,
    );
    for (const s of r.spans) {
      const k = KINDS[s.kind];
      if (s.kind === 'running') {
        out.push(
          `<path d="M${x(s.from).toFixed(1)} ${y + 3} l6 6 l-6 6 z" fill="${k.color}"><title>${esc(`${k.meaning} at ${fmt(s.from)}`)}</title></path>`,
        );
        continue;
      }
      const x1 = x(s.from);
      const w = Math.max(2, x(s.to ?? t.end) - x1);
      const tip = `${k.meaning}: ${fmt(s.from)}..${s.to === undefined ? 'now' : fmt(s.to)}${s.note === undefined ? '' : ` (${s.note})`}`;
      out.push(
        `<rect x="${x1.toFixed(1)}" y="${y + 3}" width="${w.toFixed(1)}" height="${rowH - 6}" fill="${k.color}"><title>${esc(tip)}</title></rect>`,
      );
    }
    out.push(`<text x="${labelW + plotW + 6}" y="${y + 13}" fill="#555">${esc(rowNote(r))}</text>`);
  });
  const bottom = top + t.rows.length * rowH;
  t.marks.forEach((m, i) => {
    const mx = x(m.at).toFixed(1);
    out.push(`<line x1="${mx}" y1="${top - 4}" x2="${mx}" y2="${bottom + 4 + (i % 2) * 12}" stroke="#d62728" stroke-dasharray="3,2"/>`);
    out.push(
      `<text x="${mx}" y="${bottom + 14 + (i % 2) * 12}" fill="#d62728" text-anchor="middle">${esc(`${m.label} ${fmt(m.at)}`)}</text>`,
    );
  });
  let lx = 8;
  let ly = bottom + 48;
  for (const k of Object.values(KINDS)) {
    const w = 24 + k.meaning.length * 6;
    if (lx + w > labelW + plotW + noteW) {
      lx = 8;
      ly += 16;
    }
    out.push(
      `<rect x="${lx}" y="${ly - 9}" width="10" height="10" fill="${k.color}"/><text x="${lx + 14}" y="${ly}">${esc(k.meaning)}</text>`,
    );
    lx += w;
  }
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

function niceStep(raw: number): number {
  const p = 10 ** Math.floor(Math.log10(Math.max(raw, 1e-3)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}
