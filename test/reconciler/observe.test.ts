import { describe, expect, it } from 'vitest';
import { classifyContainer } from '../../src/reconciler/observe.js';
import { at, digest, iso, st } from './fixtures.js';

describe('classifyContainer', () => {
  const cases: [string, Parameters<typeof classifyContainer>[1], string, string?][] = [
    ['no status yet', undefined, 'pending'],
    ['creating', st.creating('c1'), 'pending', 'ContainerCreating'],
    ['running', st.running('c1', 'reg/a:1'), 'present'],
    ['completed', st.terminated('c1'), 'present'],
    ['crash after pull (CrashLoopBackOff with lastState)', st.crashed('c1', 'reg/a:1'), 'present'],
    ['CreateContainerConfigError comes after the pull', st.waiting('c1', 'CreateContainerConfigError'), 'present'],
    ['CreateContainerError comes after the pull', st.waiting('c1', 'CreateContainerError'), 'present'],
    [
      'imageID set while waiting',
      { name: 'c1', imageID: `reg/a@${digest('e')}`, state: { waiting: { reason: 'ContainerCreating' } } },
      'present',
    ],
    [
      'back-off re-pull after it ran once',
      {
        name: 'c1',
        imageID: '',
        state: { waiting: { reason: 'ImagePullBackOff' } },
        lastState: { terminated: { exitCode: 137, startedAt: iso(5) } },
      },
      'present',
    ],
    ['ErrImagePull', st.waiting('c1', 'ErrImagePull'), 'failing', 'ErrImagePull'],
    ['ImagePullBackOff', st.waiting('c1', 'ImagePullBackOff'), 'failing', 'ImagePullBackOff'],
    ['InvalidImageName', st.waiting('c1', 'InvalidImageName'), 'failing', 'InvalidImageName'],
    ['ErrImageNeverPull', st.waiting('c1', 'ErrImageNeverPull'), 'failing', 'ErrImageNeverPull'],
    ['RegistryUnavailable', st.waiting('c1', 'RegistryUnavailable'), 'failing', 'RegistryUnavailable'],
    ['SignatureValidationFailed', st.waiting('c1', 'SignatureValidationFailed'), 'failing', 'SignatureValidationFailed'],
  ];
  it.each(cases)('%s', (_name, status, phase, reason) => {
    const o = classifyContainer('reg/a:1', status);
    expect(o.phase).toBe(phase);
    if (reason) expect(o.reason).toBe(reason);
  });

  it('takes the digest from imageID and the start time from the state', () => {
    const o = classifyContainer('reg/a:1', st.running('c1', 'reg/a:1', 33, 'f'));
    expect(o.digest).toBe(digest('f'));
    expect(o.presentSince).toBe(at(33));
  });

  it('cuts long kubelet messages', () => {
    const o = classifyContainer('reg/a:1', st.waiting('c1', 'ErrImagePull', 'x'.repeat(5000)));
    expect(o.message?.length).toBe(200);
  });
});
