/** What `prewarm doctor` reports: the fixed set of checks, each finding's level, and the table the CLI prints. */
import { plural } from '../text/plural.js';
import { excerpt } from '../text/quote.js';
import { table } from '../status/report.js';

/**
 * How bad a finding is. `unknown`: the check could not run (not allowed, or the apiserver or
 * kubelet failed to answer); it is never a pass.
 */
export type Level = 'ok' | 'info' | 'unknown' | 'warning' | 'error';

/** The checks doctor runs; a fixed set, so scripts can select on them. */
export const Check = {
  apiserverVersion: 'apiserver-version',
  admissionPolicy: 'admission-policy',
  pullSecret: 'pull-secret',
  rollout: 'rollout',
  kubeletConfig: 'kubelet-config',
  imagePulls: 'image-pulls',
  imageGc: 'image-gc',
  diskBudget: 'disk-budget',
  podSlots: 'pod-slots',
  registerTaint: 'register-taint',
  gateTaint: 'gate-taint',
  reconcilerImage: 'reconciler-image',
  sleeper: 'sleeper',
} as const;
/** One of {@link Check}. */
export type Check = (typeof Check)[keyof typeof Check];

/** One finding: what was checked where, what was seen, and how to fix it when it is a problem. */
export interface Finding {
  /** `cluster`, `pool <namespace>/<id>`, `daemonset <namespace>/<name>` or `node <name>`. */
  readonly scope: string;
  readonly check: Check;
  readonly level: Level;
  readonly message: string;
  readonly fix?: string;
}

/** The whole report. */
export interface DoctorReport {
  /** Sorted: cluster first, then by scope and check. */
  readonly findings: readonly Finding[];
  readonly errors: number;
  readonly warnings: number;
  /** Findings of level `unknown`: checks that could not run. */
  readonly unchecked: number;
}

/** The longest table cell: a last bound for names and messages read from the cluster. */
const MAX_CELL_CHARS = 1000;

/** `1 error, 2 warnings, 3 checks could not run`: the counts a run ends with. */
export function summary(report: DoctorReport): string {
  const counts = [plural(report.errors, 'error'), plural(report.warnings, 'warning')];
  if (report.unchecked > 0) counts.push(`${plural(report.unchecked, 'check')} could not run`);
  return counts.join(', ');
}

/** Output formats of `prewarm doctor`. */
export type DoctorFormat = 'table' | 'wide' | 'json';

/**
 * Renders the report as a table of findings, then how to fix each problem. Without `wide`, `ok`
 * and `info` findings are counted, not listed.
 */
export function renderDoctorTable(report: DoctorReport, wide: boolean): string {
  const shown = report.findings.filter((f) => wide || !(f.level === 'ok' || f.level === 'info'));
  // Names and messages come from the cluster: each cell is one line without terminal escapes.
  const cell = (text: string): string => excerpt(text, MAX_CELL_CHARS);
  const rows = [['LEVEL', 'SCOPE', 'CHECK', 'FINDING'], ...shown.map((f) => [f.level, cell(f.scope), f.check, cell(f.message)])];
  const hidden = report.findings.length - shown.length;
  let out = shown.length > 0 ? table(rows) : '';
  if (hidden > 0) out += `${shown.length > 0 ? '\n' : ''}${hidden} checks passed or are informational (-o wide lists them)\n`;
  const fixes = shown.filter((f) => f.fix !== undefined && (f.level === 'error' || f.level === 'warning' || f.level === 'unknown'));
  if (fixes.length > 0) out += `\nTo fix:\n${fixes.map((f) => `  ${cell(f.scope)} ${f.check}: ${cell(f.fix ?? '')}\n`).join('')}`;
  out += `\n${summary(report)}\n`;
  return out;
}
