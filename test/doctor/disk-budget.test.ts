import { describe, expect, it } from 'vitest';
import { HELPER_CONTAINER, SIDECAR_CONTAINER } from '../../src/contract/names.js';
import { digest, holderPod, node as clusterNode } from '../fixtures/cluster.js';
import type { Pod } from '../../src/contract/pod-status.js';
import {
  checkDiskBudget,
  imageFsOf,
  imagesToSize,
  judgeBudget,
  nodesWithPools,
  passesHigh,
  passesLow,
  pinnedBytes,
  sizeKey,
  thresholdsOf,
  usagePercent,
  type PinnedBytes,
} from '../../src/doctor/disk-budget.js';
import { diagnose } from '../../src/doctor/diagnose.js';
import type { ClusterRead, DoctorInput, DoctorNode, ImageFsStats } from '../../src/doctor/input.js';

const MiB = 2 ** 20;
const GiB = 2 ** 30;
const LINUX = { os: 'linux', architecture: 'amd64' };
const ok = <T>(value: T): ClusterRead<T> => ({ kind: 'ok', value });
const NO_SIZES = new Map<string, ClusterRead<number>>();

/** A holder pod of `pool` on `node` running `images` (spec names), each created unless listed in `pending`. */
function holder(pool: string, node: string, images: string[], pending: string[] = []): Pod {
  const containers = images.map((image, i) => ({ name: i === 0 ? SIDECAR_CONTAINER : `img-${i}`, image }));
  return holderPod({
    pool,
    node,
    sidecar: false,
    helperImage: 'busybox:1.36',
    containers,
    statuses: containers.map((c) => ({
      name: c.name,
      image: c.image,
      ...(pending.includes(c.image) ? {} : { imageID: `${c.image.split(':')[0] ?? ''}@${digest('a')}` }),
    })),
    initStatuses: [
      { name: HELPER_CONTAINER, image: 'docker.io/library/busybox:1.36', imageID: `docker.io/library/busybox@${digest('b')}` },
    ],
  });
}

/** A node listing `images` as `[name, bytes]`, by their spec name normalised as containerd names them. */
function node(name: string, images: [string, number][]): DoctorNode {
  return clusterNode(name, {
    nodeInfo: { operatingSystem: 'linux', architecture: 'amd64' },
    images: images.map(([n, sizeBytes]) => ({ names: [n], sizeBytes })),
  });
}

const fs = (capacityGiB: number, usedGiB = 0): ImageFsStats => ({
  capacityBytes: capacityGiB * GiB,
  usedBytes: usedGiB * GiB,
  availableBytes: (capacityGiB - usedGiB) * GiB,
});

const pinned = (bytes: number, over: Partial<PinnedBytes> = {}): PinnedBytes => ({
  pools: ['gpu'],
  images: 2,
  listed: bytes,
  compressed: 0,
  unknown: [],
  why: [],
  unknownAtMost: 0,
  ...over,
});

describe("the kubelet's image GC arithmetic", () => {
  it('usage is 100 - floor(available * 100 / capacity), exact for sizes past 2^53 / 100', () => {
    expect(usagePercent(100, 15)).toBe(85);
    expect(usagePercent(100, 16)).toBe(84);
    expect(usagePercent(1000, 151)).toBe(85); // floor(15.1) = 15
    expect(usagePercent(2 ** 52, 2 ** 51)).toBe(50);
  });

  it('pinned images pass the high threshold when usage with nothing else on the disk reaches it', () => {
    expect(passesHigh(85, 100, 85)).toBe(true);
    expect(passesHigh(84, 100, 85)).toBe(false);
    expect(passesHigh(849, 1000, 85)).toBe(true); // available 151: floor(15.1) = 15, usage 85
    expect(passesHigh(200, 100, 85)).toBe(true);
  });

  it('pinned images pass the low threshold when GC, freeing all else, still has bytes to free', () => {
    expect(passesLow(80, 100, 80)).toBe(false);
    expect(passesLow(81, 100, 80)).toBe(true);
  });

  it('thresholds default to 85/80 and must be percentages, low at most high', () => {
    expect(thresholdsOf({})).toEqual({ high: 85, low: 80 });
    expect(thresholdsOf({ imageGCHighThresholdPercent: 100, imageGCLowThresholdPercent: 0 })).toEqual({ high: 100, low: 0 });
    expect(thresholdsOf({ imageGCHighThresholdPercent: 101 })).toBeUndefined();
    expect(thresholdsOf({ imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 60 })).toBeUndefined();
    expect(thresholdsOf({ imageGCHighThresholdPercent: 85.5 })).toBeUndefined();
  });
});

describe('imageFsOf: the summary, believed only when it could be true', () => {
  const summary = (imageFs: unknown): ClusterRead<unknown> => ok({ node: { runtime: { imageFs } } });

  it('reads node.runtime.imageFs, parsed or as text', () => {
    const v = { capacityBytes: 100, usedBytes: 40, availableBytes: 60 };
    expect(imageFsOf(summary(v))).toEqual(ok(v));
    expect(imageFsOf(ok(JSON.stringify({ node: { runtime: { imageFs: v } } })))).toEqual(ok(v));
  });

  it('caps available at the capacity, as the GC does', () => {
    expect(imageFsOf(summary({ capacityBytes: 100, usedBytes: 0, availableBytes: 150 }))).toEqual(
      ok({ capacityBytes: 100, usedBytes: 0, availableBytes: 100 }),
    );
  });

  it('refuses lies: more used than there is, negative, fractional, absurd, missing, zero capacity', () => {
    const fail = (v: unknown): string => {
      const r = imageFsOf(summary(v));
      expect(r.kind).toBe('failed');
      return (r as { message: string }).message;
    };
    expect(fail({ capacityBytes: 100, usedBytes: 101, availableBytes: 0 })).toBe('imageFs reports 101 bytes used of 100; not believed');
    expect(fail({ capacityBytes: 100, usedBytes: -1, availableBytes: 0 })).toBe('imageFs.usedBytes is -1, not a byte count');
    expect(fail({ capacityBytes: 100.5, usedBytes: 1, availableBytes: 0 })).toBe('imageFs.capacityBytes is 100.5, not a byte count');
    expect(fail({ capacityBytes: 1e300, usedBytes: 1, availableBytes: 0 })).toBe('imageFs.capacityBytes is 1e+300, not a byte count');
    expect(fail({ capacityBytes: '100', usedBytes: 1, availableBytes: 0 })).toBe('imageFs.capacityBytes is a string');
    expect(fail({ usedBytes: 1, availableBytes: 0 })).toBe('imageFs.capacityBytes is missing');
    expect(fail({ capacityBytes: 0, usedBytes: 0, availableBytes: 0 })).toBe('imageFs.capacityBytes is 0');
    expect(imageFsOf(ok({ node: {} }))).toEqual({ kind: 'failed', message: 'the summary holds no node.runtime.imageFs' });
    expect(imageFsOf(ok('<html>'))).toEqual({ kind: 'failed', message: 'the summary is not JSON' });
  });

  it('passes a refusal on as it is', () => {
    expect(imageFsOf({ kind: 'denied', message: '403' })).toEqual({ kind: 'denied', message: '403' });
  });
});

describe('pinnedBytes: what the pools on a node pin', () => {
  const SIDECAR = 'ghcr.io/prewarm-dev/reconciler:1.0';
  const A = 'docker.io/ml/a:1';
  const B = 'docker.io/ml/b:1';
  const listed: [string, number][] = [
    [`docker.io/ml/a@sha256:${'a'.repeat(64)}`, 3 * GiB],
    [`docker.io/ml/b@sha256:${'a'.repeat(64)}`, 2 * GiB],
    [`ghcr.io/prewarm-dev/reconciler@sha256:${'a'.repeat(64)}`, 50 * MiB],
    [`docker.io/library/busybox@sha256:${'b'.repeat(64)}`, 1 * MiB],
  ];

  it('several pools on one node: an image two pools pin counts once, init containers count too', () => {
    const pods = [holder('gpu', 'n1', [SIDECAR, A, B]), holder('cpu', 'n1', [SIDECAR, A])];
    const p = pinnedBytes(pods, node('n1', listed), 50, NO_SIZES);
    expect(p).toEqual({
      pools: ['cpu', 'gpu'],
      images: 4,
      listed: 5 * GiB + 51 * MiB,
      compressed: 0,
      unknown: [],
      why: [],
      unknownAtMost: 0,
    });
  });

  it('matches by tag too, and an image named by tag and by digest is one entry of the list', () => {
    const n: DoctorNode = {
      metadata: { name: 'n1' },
      status: { images: [{ names: ['docker.io/library/python:3.12', 'docker.io/library/python@sha256:c'], sizeBytes: GiB }] },
    };
    const pod = holder('gpu', 'n1', ['python:3.12', 'docker.io/library/python:3.12'], ['python:3.12', 'docker.io/library/python:3.12']);
    expect(pinnedBytes([pod], n, 50, NO_SIZES)).toMatchObject({ images: 2, listed: GiB });
  });

  it('an image the node does not list is sized from the registry, and counted as compressed', () => {
    const pods = [holder('gpu', 'n1', [SIDECAR, A, 'docker.io/ml/new:1'], ['docker.io/ml/new:1'])];
    const sizes = new Map([[sizeKey('docker.io/ml/new:1', LINUX), ok(700 * MiB)]]);
    const p = pinnedBytes(pods, node('n1', listed), 50, sizes);
    expect(p).toMatchObject({ images: 4, listed: 3 * GiB + 51 * MiB, compressed: 700 * MiB, unknown: [] });
  });

  it('a complete list without the image and no registry answer: unknown, with no upper bound (it is not pulled yet)', () => {
    const pods = [holder('gpu', 'n1', [SIDECAR, 'docker.io/ml/new:1'], ['docker.io/ml/new:1'])];
    const sizes = new Map([[sizeKey('docker.io/ml/new:1', LINUX), { kind: 'denied' as const, message: 'HTTP 401: no credentials' }]]);
    const p = pinnedBytes(pods, node('n1', listed), 50, sizes);
    expect(p).toMatchObject({ unknown: ['docker.io/ml/new:1'], why: ['HTTP 401: no credentials'], unknownAtMost: undefined });
  });

  it('a list cut at nodeStatusMaxImages (over 50 images): an image on the node but cut is at most the smallest listed', () => {
    const many: [string, number][] = Array.from({ length: 50 }, (_, i) => [`docker.io/other/i${i}:1`, (100 - i) * MiB]);
    const pods = [holder('gpu', 'n1', ['docker.io/other/i0:1', 'docker.io/ml/cut:1'])];
    const p = pinnedBytes(pods, node('n1', many), 50, NO_SIZES);
    // The helper's busybox (an init container) is cut too: two images of at most 51 MiB each.
    expect(p).toMatchObject({
      listed: 100 * MiB,
      unknown: ['docker.io/library/busybox:1.36', 'docker.io/ml/cut:1'],
      unknownAtMost: 102 * MiB,
    });
    expect(p.why).toEqual(['the registry was not asked']);
    // nodeStatusMaxImages -1 lists every image: the list of 50 is complete, the image is not pulled.
    expect(pinnedBytes(pods, node('n1', many), -1, NO_SIZES).unknownAtMost).toBeUndefined();
  });

  it('a node that lies about sizes: the entry is not believed, and the image is unknown', () => {
    const pods = [holder('gpu', 'n1', [A])];
    const n = node('n1', [[`docker.io/ml/a@sha256:${'a'.repeat(64)}`, -5]]);
    const p = pinnedBytes(pods, n, 50, NO_SIZES);
    expect(p.listed).toBe(0);
    expect(p.unknown).toContain(A);
  });
});

describe('judgeBudget: levels and messages', () => {
  const gc = { high: 85, low: 80 };

  it('ok when GC has room below the low threshold beside the pinned images', () => {
    expect(judgeBudget(pinned(10 * GiB), fs(100, 40), gc)).toEqual({
      level: 'ok',
      message:
        'pool gpu pins 2 images, 10.0 GiB, 10% of an image filesystem of 100.0 GiB (40.0 GiB used now); image GC from 85% down to 80%: GC has room below the low threshold beside them',
    });
  });

  it('warning when the pinned images pass the low threshold, with the low threshold that would do', () => {
    const j = judgeBudget(pinned(82 * GiB), fs(100, 90), gc);
    expect(j.level).toBe('warning');
    expect(j.message).toContain('the pinned images alone pass the low threshold, so once GC starts it cannot get down to 80%');
    expect(j.fix).toMatch(/^raise imageGCLowThresholdPercent to 82 or more, give these nodes a larger image filesystem/);
  });

  it('error when the pinned images alone pass the high threshold', () => {
    const j = judgeBudget(pinned(85 * GiB), fs(100, 95), gc);
    expect(j.level).toBe('error');
    expect(j.message).toContain('the pinned images alone pass the high threshold, which GC can never get below');
    expect(j.message).toContain('DiskPressure');
    expect(j.fix).toContain('larger image filesystem');
  });

  it('error when they do not fit at all, whatever GC is set to', () => {
    expect(judgeBudget(pinned(120 * GiB), fs(100, 100), undefined).level).toBe('error');
    expect(judgeBudget(pinned(120 * GiB), fs(100, 100), { high: 100, low: 90 }).message).toContain('do not fit');
  });

  it('GC off (high 100): information, whatever is pinned below the capacity', () => {
    const j = judgeBudget(pinned(95 * GiB), fs(100, 99), { high: 100, low: 90 });
    expect(j).toMatchObject({ level: 'info' });
    expect(j.message).toContain('image GC is off');
  });

  it('thresholds unknown (configz not read): information that says so', () => {
    expect(judgeBudget(pinned(90 * GiB), fs(100), undefined)).toMatchObject({
      level: 'info',
      message: expect.stringContaining("image GC's thresholds are unknown (see kubelet-config)") as unknown,
    });
  });

  it('registry sizes are labelled compressed; a lower bound says "at least"', () => {
    const p = pinned(2 * GiB, { compressed: GiB, unknown: ['docker.io/ml/x:1'], why: ['HTTP 401'], unknownAtMost: undefined });
    const j = judgeBudget(p, fs(100), gc);
    expect(j.message).toContain(
      'pool gpu pins 2 images, at least 3.0 GiB (2.0 GiB as the node lists them, 1.0 GiB compressed, from the registry; 1 image of unknown size: HTTP 401)',
    );
    expect(j.level).toBe('unknown');
    expect(j.fix).toContain('--docker-config');
  });

  it('a lower bound already past a threshold is a finding, not unknown; a bounded unknown below it is ok', () => {
    const unknown = { unknown: ['docker.io/ml/x:1'], why: ['x'] };
    expect(judgeBudget(pinned(90 * GiB, { ...unknown, unknownAtMost: undefined }), fs(100), gc).level).toBe('error');
    const bounded = judgeBudget(pinned(10 * GiB, { ...unknown, unknownAtMost: GiB }), fs(100), gc);
    expect(bounded.level).toBe('ok');
    expect(bounded.message).toContain('at most 1.0 GiB more: they are on the node but cut from its image list');
  });
});

describe('checkDiskBudget and diagnose', () => {
  const pods = [holder('gpu', 'n1', ['ghcr.io/prewarm-dev/reconciler:1.0', 'docker.io/ml/a:1'])];
  const n1 = node('n1', [[`docker.io/ml/a@sha256:${'a'.repeat(64)}`, 60 * MiB]]);

  it('no finding for a node without pools', () => {
    expect(checkDiskBudget('n2', n1, {}, pods, ok(fs(1)), NO_SIZES)).toBeUndefined();
    expect(nodesWithPools(pods)).toEqual(['n1']);
  });

  it('a refused summary (403) is unknown, names the pinned bytes it knows, and the permission to grant', () => {
    const j = checkDiskBudget('n1', n1, {}, pods, { kind: 'denied', message: 'HTTP 403: forbidden' }, NO_SIZES);
    expect(j?.level).toBe('unknown');
    expect(j?.message).toMatch(/^pool gpu pins 3 images, at least 60\.0 MiB .*; not allowed to read the image filesystem/);
    expect(j?.fix).toBe('grant get on nodes/proxy to read /api/v1/nodes/NAME/proxy/stats/summary');
  });

  it('a failed summary points at the kubelet, not at permissions', () => {
    const j = checkDiskBudget('n1', n1, {}, pods, { kind: 'failed', message: 'HTTP 502' }, NO_SIZES);
    expect(j?.fix).toContain('the kubelet did not answer through the node proxy');
  });

  it('the images to size: those the node does not list, once per platform', () => {
    const two = [...pods, holder('cpu', 'n1', ['docker.io/ml/a:1', 'docker.io/ml/z:1'])];
    expect(imagesToSize(two, [n1]).map((w) => w.key)).toEqual([
      'linux/amd64 docker.io/library/busybox:1.36',
      'linux/amd64 docker.io/ml/z:1',
      'linux/amd64 ghcr.io/prewarm-dev/reconciler:1.0',
    ]);
  });

  it('diagnose: a node whose pools pass the high threshold is an error, and counts as one', () => {
    const small: DoctorNode = { ...n1, status: { ...n1.status, capacity: { 'ephemeral-storage': '1Gi' } } };
    const input: DoctorInput = {
      now: 0,
      version: ok({ major: '1', minor: '36', gitVersion: 'v1.36.5' }),
      policy: ok(true),
      policyBinding: ok(true),
      earlyPullPolicy: { kind: 'missing' },
      earlyPullPolicyBinding: { kind: 'missing' },
      daemonSets: ok([]),
      pods: ok(pods),
      nodes: ok([small]),
      secrets: new Map(),
      kubeletConfigs: new Map([['n1', ok({ imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 40 })]]),
      imageFs: new Map([['n1', ok({ capacityBytes: 200 * MiB, usedBytes: 150 * MiB, availableBytes: 50 * MiB })]]),
      imageSizes: new Map([
        [sizeKey('ghcr.io/prewarm-dev/reconciler:1.0', LINUX), ok(40 * MiB)],
        [sizeKey('docker.io/library/busybox:1.36', LINUX), ok(MiB)],
      ]),
    };
    const r = diagnose(input);
    const f = r.findings.filter((x) => x.check === 'disk-budget');
    expect(f).toHaveLength(1);
    expect(f[0]).toMatchObject({ scope: 'node n1', level: 'error' });
    expect(f[0]?.message).toContain(
      'pool gpu pins 3 images, 101.0 MiB (60.0 MiB as the node lists them, 41.0 MiB compressed, from the registry)',
    );
    expect(r.errors).toBe(1);
  });
});
