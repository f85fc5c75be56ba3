import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../src/imagecache/duration.js';

describe('durations', () => {
  it.each([
    ['90s', 90],
    ['10m', 600],
    ['1h30m', 5400],
    ['2h', 7200],
  ])('parses %s', (text, seconds) => {
    expect(parseDuration(text)).toEqual({ seconds });
    expect(parseDuration(formatDuration(seconds))).toEqual({ seconds });
  });
  it.each(['', '10', '1.5h', '10 m', '-5s', '1d'])('rejects %j', (text) => {
    expect(parseDuration(text)).toEqual({ error: `duration "${text}" is invalid: use whole numbers with h, m or s, e.g. 90s, 10m, 1h30m` });
  });
});
