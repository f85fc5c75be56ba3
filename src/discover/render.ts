/** The discover plan as text for people and as JSON for tools. Deterministic: the plan is sorted. */
import type { Location } from '../imagecache/errors.js';
import { plural } from '../text/plural.js';
import { compareStrings } from '../contract/order.js';
import type { Plan } from './plan.js';

function at(l: Location): string {
  return l.line > 0 ? `${l.file}:${l.line}` : l.file;
}

/** The readable plan: per pool what to add (and remove), then partial, uncovered and skipped workloads. */
export function renderPlan(plan: Plan, options: { readonly partial?: boolean } = {}): string {
  const out: string[] = [];
  for (const p of plan.pools) {
    out.push(`pool ${p.pool} (namespace ${p.namespace}, ${at(p.target)})`);
    for (const a of p.add) out.push(`  + ${a.text}  (${a.workloads.join(', ')})`);
    for (const h of p.held) out.push(`  = ${h.text}  already held (${h.workloads.join(', ')})`);
    for (const r of p.remove) out.push(`  - ${r.text}  no workload that can run here uses it (${at(r.location)})`);
    for (const k of p.kept) out.push(`  ! ${k.text}  no workload uses it, kept: marked prewarm:keep (${at(k.location)})`);
    if (p.add.length + p.held.length + p.remove.length + p.kept.length === 0) out.push('  nothing to change');
  }
  if (plan.partial.length > 0) {
    out.push('', options.partial === true ? 'part of a pool (added, --partial):' : 'part of a pool (not added; --partial adds them):');
    for (const m of plan.partial) out.push(`  ${m.workload} on pool ${m.pool}: ${m.reason}`);
  }
  if (plan.uncovered.length > 0) {
    out.push('', 'no pool:');
    for (const u of plan.uncovered) {
      out.push(`  ${u.workload}${u.reasons.length === 0 ? ': there is no pool' : ''}`);
      for (const r of u.reasons) out.push(`    pool ${r.pool}: ${r.reason}`);
    }
  }
  const others = Object.entries(plan.others).sort(([a], [b]) => compareStrings(a, b));
  if (plan.skipped.length > 0 || others.length > 0) {
    out.push('', 'skipped:');
    for (const s of plan.skipped) out.push(`  ${s.workload}: ${s.reason}`);
    if (others.length > 0) {
      const total = others.reduce((n, [, c]) => n + c, 0);
      out.push(`  ${plural(total, 'document')} with no pod template: ${others.map(([k, c]) => `${k} ${c}`).join(', ')}`);
    }
  }
  return `${out.join('\n')}\n`;
}

/** The plan as JSON, for tools. */
export function renderPlanJson(plan: Plan): string {
  return `${JSON.stringify(plan, null, 2)}\n`;
}
