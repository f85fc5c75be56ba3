import { describe, expect, it } from 'vitest';
import { classifyContainer, mergeObservations, type ImageObservation } from '../../src/reconciler/observe.js';
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
    [
      'terminated without a start: its pod was deleted while the pull still failed (a puller leaving)',
      {
        name: 'c1',
        imageID: '',
        state: { terminated: { exitCode: 137, reason: 'ContainerStatusUnknown' } },
      },
      'pending',
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

describe('mergeObservations', () => {
  const holder = (image: string, phase: ImageObservation['phase'], over: Partial<ImageObservation> = {}): ImageObservation => ({
    container: `h-${image}`,
    image,
    phase,
    ...over,
  });
  const puller = (image: string, phase: ImageObservation['phase'], over: Partial<ImageObservation> = {}): ImageObservation => ({
    container: `p-${image}`,
    image,
    phase,
    ...over,
  });

  const cases: [string, ImageObservation, ImageObservation[][], Partial<ImageObservation>][] = [
    [
      'a puller started it while the holder still waits: present',
      holder('a', 'pending', { reason: 'ContainerCreating' }),
      [[puller('a', 'present', { presentSince: at(20), digest: digest('a') })]],
      { phase: 'present', presentSince: at(20), digest: digest('a') },
    ],
    [
      'a failure in a lane is reported with its reason',
      holder('a', 'pending'),
      [[puller('a', 'failing', { reason: 'ErrImagePull', message: 'manifest unknown' })]],
      { phase: 'failing', reason: 'ErrImagePull', message: 'manifest unknown' },
    ],
    [
      'present wins over a failure elsewhere',
      holder('a', 'present', { presentSince: at(30) }),
      [[puller('a', 'failing', { reason: 'ErrImagePull' })]],
      { phase: 'present', presentSince: at(30) },
    ],
    [
      'present in one lane wins over a failure in another',
      holder('a', 'pending'),
      [[puller('a', 'failing', { reason: 'ErrImagePull' })], [puller('a', 'present', { presentSince: at(25) })]],
      { phase: 'present', presentSince: at(25) },
    ],
    [
      'the earliest start is kept',
      holder('a', 'present', { presentSince: at(30) }),
      [[puller('a', 'present', { presentSince: at(12) })]],
      { phase: 'present', presentSince: at(12) },
    ],
    [
      'a later start elsewhere changes nothing',
      holder('a', 'present', { presentSince: at(12) }),
      [[puller('a', 'present', { presentSince: at(30) })]],
      { phase: 'present', presentSince: at(12) },
    ],
    [
      "the holder's own failure stays when no lane did better",
      holder('a', 'failing', { reason: 'ImagePullBackOff' }),
      [[puller('a', 'pending')]],
      { phase: 'failing', reason: 'ImagePullBackOff' },
    ],
    [
      'another image in a puller does not count',
      holder('a', 'pending'),
      [[puller('b', 'present', { presentSince: at(5) })]],
      { phase: 'pending' },
    ],
  ];
  it.each(cases)('%s', (_name, own, others, expected) => {
    const [merged] = mergeObservations([own], others);
    expect(merged).toMatchObject({ ...expected, container: own.container, image: own.image });
    if (expected.reason === undefined) expect(merged?.reason).toBeUndefined();
  });

  it("keeps the holder's images, in its order, whatever the pullers show", () => {
    const own = [holder('b', 'pending'), holder('a', 'pending')];
    expect(mergeObservations(own, [[puller('c', 'present'), puller('a', 'present')]]).map((o) => [o.image, o.phase])).toEqual([
      ['b', 'pending'],
      ['a', 'present'],
    ]);
    expect(mergeObservations(own, [])).toEqual(own);
  });
});
