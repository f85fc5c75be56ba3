import { describe, expect, it } from 'vitest';
import { checkDns1123Label, checkLabelValue, checkQualifiedName } from '../../src/imagecache/k8s-validation.js';

describe('Kubernetes name rules', () => {
  it.each(['tier', 'kubernetes.io/arch', 'node.kubernetes.io/instance-type', 'a_b.c-d', 'x'.repeat(63)])('accepts key %s', (key) => {
    expect(checkQualifiedName(key)).toBeUndefined();
  });
  it.each([
    ['', 'name part must be non-empty'],
    ['/x', 'prefix part must be non-empty'],
    ['a/b/c', "a qualified name must consist of an optional DNS subdomain prefix and a name, separated by '/'"],
    ['x'.repeat(64), 'name part must be no more than 63 characters'],
    ['-x', "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"],
    [
      'Bad_Prefix/x',
      "prefix part must be a lowercase RFC 1123 subdomain: lowercase alphanumerics, '-' or '.', starting and ending with an alphanumeric",
    ],
  ])('rejects key %j', (key, message) => {
    expect(checkQualifiedName(key)).toBe(message);
  });
  it('checks label values', () => {
    expect(checkLabelValue('')).toBeUndefined();
    expect(checkLabelValue('g5.2xlarge')).toBeUndefined();
    expect(checkLabelValue('a b')).toMatch(/must be empty or consist/);
    expect(checkLabelValue('x'.repeat(64))).toBe('must be no more than 63 characters');
  });
  it('checks DNS labels', () => {
    expect(checkDns1123Label('ml-serving')).toBeUndefined();
    expect(checkDns1123Label('ML')).toMatch(/lowercase RFC 1123 label/);
  });
});
