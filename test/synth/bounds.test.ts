import { describe, expect, it } from 'vitest';
import { synthYaml } from '../../src/synth/app.js';
import { BOUND_DEFAULTS, priorityClassAllowanceError } from '../../src/synth/bounds.js';
import { bundleOfFiles, cache } from '../helpers.js';
import { refusal } from './spec-fixtures.js';

const sidecar = { reconciler: { image: 'ghcr.io/prewarm-dev/reconciler:0.1.0' } };
const images = '  cacheSpec:\n  - images: [redis:7, nginx:1]\n    nodeSelector: {tier: web}\n';
const withPriority = (name: string) => [cache('a.yaml', 'a', 'ml', `  priorityClassName: ${name}\n${images}`)];
const withRefresh = (interval: string) => [cache('a.yaml', 'a', 'ml', `  refresh: {interval: ${interval}}\n${images}`)];

describe('priorityClassName is the invocation’s to allow', () => {
  it.each(['system-node-critical', 'system-cluster-critical', 'system-anything'])('%s is refused, even when allowed by name', (name) => {
    const [line] = refusal(withPriority(name), { ...sidecar, allowedPriorityClasses: ['warm'] });
    expect(line).toMatch(
      new RegExp(
        `^a\\.yaml:5:22: error: document 1: spec\\.priorityClassName: pool ml/web-[0-9a-f]{8} \\(a\\.yaml:7:5 spec\\.cacheSpec\\[0\\]\\): ` +
          `priorityClassName "${name}" is a system PriorityClass, which a spec may never choose: at that priority the scheduler preempts workloads`,
      ),
    );
  });

  it('a class the invocation has not allowed is refused: none by default', () => {
    expect(refusal(withPriority('warm'), sidecar)).toEqual([
      expect.stringMatching(
        /^a\.yaml:5:22: error: document 1: spec\.priorityClassName: pool ml\/web-[0-9a-f]{8} \(a\.yaml:7:5 spec\.cacheSpec\[0\]\): priorityClassName "warm" is not allowed by this invocation \(--allow-priority-class allows none\)/,
      ),
    ]);
    expect(refusal(withPriority('warm'), { ...sidecar, allowedPriorityClasses: ['batch', 'low'] })[0]).toContain(
      '(--allow-priority-class allows "batch", "low")',
    );
  });

  it('an allowed class is rendered on the pull pods', () => {
    const yaml = synthYaml(bundleOfFiles(withPriority('warm')), { ...sidecar, allowedPriorityClasses: ['warm'] });
    expect(yaml).toContain('priorityClassName: warm');
  });

  it('an allowance for a system class or an invalid name is a programming error of the caller', () => {
    expect(priorityClassAllowanceError('system-node-critical')).toMatch(/is a system PriorityClass/);
    expect(priorityClassAllowanceError('Warm')).toMatch(/^is not a PriorityClass name/);
    expect(priorityClassAllowanceError('warm')).toBeUndefined();
    expect(() => synthYaml(bundleOfFiles(withPriority('warm')), { allowedPriorityClasses: ['system-node-critical'] })).toThrow(
      'allowedPriorityClasses: "system-node-critical" is a system PriorityClass',
    );
  });
});

describe('spec.refresh.interval has a floor the invocation sets', () => {
  it('the default floor is 5m: 1s and 4m59s are refused at the interval, 5m and 0s (off) pass', () => {
    expect(BOUND_DEFAULTS.minRefreshSeconds).toBe(300);
    expect(refusal(withRefresh('1s'))).toEqual([
      expect.stringMatching(
        /^a\.yaml:5:23: error: document 1: spec\.refresh\.interval: pool ml\/web-[0-9a-f]{8} \(a\.yaml:7:5 spec\.cacheSpec\[0\]\): refresh interval 1s is under 5m, the shortest this invocation allows \(--min-refresh-interval\): every node of the pool asks the registry about each of its 2 images once per interval; set an interval of 5m or more$/,
      ),
    ]);
    expect(refusal(withRefresh('4m59s'))[0]).toContain('refresh interval 4m59s is under 5m');
    expect(() => synthYaml(bundleOfFiles(withRefresh('5m')), sidecar)).not.toThrow();
    expect(() => synthYaml(bundleOfFiles(withRefresh('0s')), sidecar)).not.toThrow();
  });

  it('the invocation lowers or raises it', () => {
    expect(() => synthYaml(bundleOfFiles(withRefresh('2s')), { ...sidecar, minRefreshSeconds: 2 })).not.toThrow();
    expect(refusal(withRefresh('1h'), { ...sidecar, minRefreshSeconds: 7200 })[0]).toContain('refresh interval 1h is under 2h');
    expect(() => synthYaml(bundleOfFiles(withRefresh('1h')), { minRefreshSeconds: 0 })).toThrow(
      'minRefreshSeconds: 0 is not a whole number',
    );
  });
});
