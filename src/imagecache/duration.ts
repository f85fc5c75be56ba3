/**
 * Go-style durations (`90s`, `10m`, `1h30m`), the form Kubernetes users already write in kubelet
 * and controller flags. Whole seconds only: sub-second precision means nothing for image pulls.
 */

import { quote } from '../text/quote.js';

const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600 };
const DURATION = /^(?:\d+[hms])+$/;
const PART = /(\d+)([hms])/g;

/** How a duration is written, for messages. */
export const DURATION_FORM = 'use whole numbers with h, m or s, e.g. 90s, 10m, 1h30m';

/** The durations a setting accepts, in whole seconds, both ends included. */
export interface DurationRange {
  readonly min: number;
  readonly max: number;
}

/** Whether `text` is written as a duration, whatever its size. */
export function isDurationForm(text: string): boolean {
  return DURATION.test(text);
}

/** Parses a duration into whole seconds, or returns an error message. */
export function parseDuration(text: string): { seconds: number } | { error: string } {
  if (!isDurationForm(text)) {
    return { error: `duration ${quote(text)} is invalid: ${DURATION_FORM}` };
  }
  let seconds = 0;
  for (const [, amount, unit] of text.matchAll(PART)) {
    seconds += Number(amount) * (UNIT_SECONDS[unit ?? 's'] ?? 1);
  }
  if (!Number.isSafeInteger(seconds)) return { error: `duration ${quote(text)} is too large` };
  return { seconds };
}

/** Why `seconds` lies outside `range`, or undefined when it is inside. */
export function outsideRange(seconds: number, range: DurationRange): string | undefined {
  if (seconds >= range.min && seconds <= range.max) return undefined;
  const got = Number.isSafeInteger(seconds) ? `, got ${formatDuration(seconds)}` : '';
  return `must be between ${formatDuration(range.min)} and ${formatDuration(range.max)}${got}`;
}

/** Formats whole seconds back into the shortest Go-style duration, e.g. 5400 → `1h30m`. */
export function formatDuration(seconds: number): string {
  if (seconds === 0) return '0s';
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return `${h > 0 ? `${h}h` : ''}${m > 0 ? `${m}m` : ''}${s > 0 ? `${s}s` : ''}`;
}
