/**
 * Every Event the sidecar builds reads back, through the parser beside the builders, as what it
 * was built from: rewording a message breaks this test, not `prewarm status --node`.
 */
import { describe, expect, it } from 'vitest';
import {
  EventReason,
  failsafeGateEvent,
  gateEvent,
  MAX_EVENT_MESSAGE_CHARS,
  parseNodeEvent,
  partialEvent,
  pullFailingEvent,
  tagMovedEvent,
  tagRefreshFailedEvent,
  warmEvent,
  type EventIntent,
} from '../../src/contract/events.js';

const read = (e: EventIntent) => parseNodeEvent(e.reason, e.message);

describe('node Events', () => {
  it('read back as built', () => {
    expect(read(warmEvent('gpu-a1b2c3d4', 5, 12.5))).toEqual({ reason: EventReason.Warm, pool: 'gpu-a1b2c3d4' });
    expect(read(partialEvent('gpu', 600, 2, 5, 'reg/a:1: ErrImagePull (manifest unknown)'))).toEqual({
      reason: EventReason.Partial,
      pool: 'gpu',
    });
    expect(read(pullFailingEvent('gpu', 'reg/a:1: ErrImagePull'))).toEqual({ reason: EventReason.ImagePullFailing, pool: 'gpu' });
    expect(read(gateEvent(undefined, 'ready', 'prewarm.dev/warming', []))).toEqual({ reason: EventReason.GateOpened, gate: 'ready' });
    expect(read(gateEvent(undefined, 'forced', 'prewarm.dev/warming', ['cpu', 'gpu']))).toEqual({
      reason: EventReason.GateForcedOpen,
      gate: 'forced',
    });
    expect(read(failsafeGateEvent('prewarm.dev/warming', 700, 660, ['cpu', 'gpu']))).toEqual({
      reason: EventReason.GateFailsafeOpened,
      gate: 'failsafe',
    });
    expect(read(failsafeGateEvent('example.com/gate', 700, 660, []))).toEqual({ reason: EventReason.GateFailsafeOpened, gate: 'failsafe' });
    const d = `sha256:${'f'.repeat(64)}`;
    expect(read(tagMovedEvent('gpu', 'reg/a:1', `sha256:${'a'.repeat(64)}`, d, 'c1', `reg/a:1@${d}`))).toEqual({
      reason: EventReason.TagMoved,
      pool: 'gpu',
    });
    expect(read(tagRefreshFailedEvent('gpu', 'reg/a:1', d, 'c1', 'pods "p" is forbidden'))).toEqual({
      reason: EventReason.TagRefreshFailed,
      pool: 'gpu',
    });
  });

  it("carry a gate removal in the pool's own Event of the same reconcile", () => {
    expect(read(gateEvent(warmEvent('gpu', 2, 8), 'ready', 'prewarm.dev/warming', []))).toEqual({
      reason: EventReason.Warm,
      pool: 'gpu',
      gate: 'ready',
    });
    expect(read(gateEvent(partialEvent('gpu', 60, 1, 2, 'x'), 'forced', 'example.com/gate', ['cpu']))).toEqual({
      reason: EventReason.Partial,
      pool: 'gpu',
      gate: 'forced',
    });
  });

  it('keep messages within the bound, and ignore reasons that are not ours', () => {
    expect(warmEvent('p'.repeat(2000), 1, 1).message.length).toBe(MAX_EVENT_MESSAGE_CHARS);
    expect(parseNodeEvent('NodeReady', 'pool gpu: removed gate taint x')).toBeUndefined();
    expect(parseNodeEvent(undefined, undefined)).toBeUndefined();
  });
});
