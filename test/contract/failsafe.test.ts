/** The fail-safe's environment: what synthesis renders reads back, and bad values fail with exact messages. */
import { describe, expect, it } from 'vitest';
import { FAILSAFE_DEFAULT_GRACE_SECONDS, FAILSAFE_ENV, failsafeConfigFromEnv, renderFailsafeEnv } from '../../src/contract/failsafe.js';
import { resolveSidecarEnv } from '../../src/contract/sidecar-env.js';

const FIELDS = { 'spec.nodeName': 'node-a', 'metadata.name': 'prewarm-failsafe-x', 'metadata.namespace': 'prewarm' };

describe('the fail-safe environment', () => {
  it('reads back as rendered', () => {
    expect(failsafeConfigFromEnv(resolveSidecarEnv(renderFailsafeEnv(45), FIELDS))).toEqual({
      nodeName: 'node-a',
      podName: 'prewarm-failsafe-x',
      podNamespace: 'prewarm',
      graceSeconds: 45,
    });
  });

  it('defaults the grace, and refuses one out of range or not a whole number', () => {
    const env = resolveSidecarEnv(renderFailsafeEnv(1), FIELDS);
    expect(failsafeConfigFromEnv({ ...env, [FAILSAFE_ENV.graceSeconds]: '' }).graceSeconds).toBe(FAILSAFE_DEFAULT_GRACE_SECONDS);
    for (const bad of ['0', '86401', '1.5', '-1', 'ten'])
      expect(() => failsafeConfigFromEnv({ ...env, [FAILSAFE_ENV.graceSeconds]: bad })).toThrow(
        `environment variable ${FAILSAFE_ENV.graceSeconds} must be a whole number of seconds from 1 to 86400, got "${bad}"`,
      );
    expect(() => failsafeConfigFromEnv({ [FAILSAFE_ENV.graceSeconds]: '60' })).toThrow(
      'environment variable PREWARM_NODE_NAME is required',
    );
  });
});
