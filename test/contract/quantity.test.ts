import { describe, expect, it } from 'vitest';
import { parseQuantity } from '../../src/contract/quantity.js';

describe('parseQuantity', () => {
  it.each([
    ['0', 0],
    ['107374182400', 107374182400],
    ['4Mi', 4 * 2 ** 20],
    ['1Ki', 1024],
    ['1.5Gi', 1.5 * 2 ** 30],
    ['2Ti', 2 * 2 ** 40],
    ['1Pi', 2 ** 50],
    ['1Ei', 2 ** 60],
    ['1k', 1000],
    ['2M', 2e6],
    ['2G', 2e9],
    ['3T', 3e12],
    ['1P', 1e15],
    ['1E', 1e18],
    ['250m', 0.25],
    ['5u', 5e-6],
    ['7n', 7e-9],
    ['1e3', 1000],
    ['1E3', 1000],
    ['1.5e-3', 0.0015],
    ['2e+2', 200],
    ['+1Mi', 2 ** 20],
    ['-1k', -1000],
    ['.5Gi', 2 ** 29],
    ['1.', 1],
  ])('%s is %d', (text, value) => {
    expect(parseQuantity(text)).toBeCloseTo(value, 12);
  });

  it.each(['', ' 1Mi', '1Mi ', '1 Mi', 'Mi', '1KI', '1K', '1mi', '1kb', '1e', '1Ee3', '.', '1..5', '0x10', '1Mi1', 'e3', '1_000'])(
    '%j is not a quantity',
    (text) => {
      expect(parseQuantity(text)).toBeUndefined();
    },
  );
});
