import { describe, expect, it } from 'vitest';
import { parseTimeout } from '../../../src/cli/commands/status.js';
import { UsageError } from '../../../src/cli/exit-codes.js';

describe('status --timeout', () => {
  it.each([
    ['90s', 90_000],
    ['15m', 900_000],
    ['1h', 3_600_000],
    ['1h30m', 5_400_000],
    ['2m30s', 150_000],
  ])('reads %s as the specs read durations', (text, ms) => {
    expect(parseTimeout(text)).toBe(ms);
  });

  it.each(['15', '1.5h', '1d', '', '-5m'])('refuses %j as a usage error', (text) => {
    expect(() => parseTimeout(text)).toThrow(UsageError);
    expect(() => parseTimeout(text)).toThrow(
      `--timeout: duration "${text}" is invalid: use whole numbers with h, m or s, e.g. 90s, 10m, 1h30m`,
    );
  });
});
