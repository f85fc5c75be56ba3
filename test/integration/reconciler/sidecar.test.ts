/**
 * The real sidecar process (compiled lib/src/reconciler/main.js) against the real apiserver, with
 * a pod-bound ServiceAccount token under the synthesized RBAC and admission policy. The test plays
 * the kubelet by writing pod status. Covers: two pools gating one node (the last one to turn warm
 * lifts the taint), fail-open at the deadline with the failing image named, cleanup on SIGTERM.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeHttp } from '../../../src/http/client.js';
import type { KNode, KPod } from '../../../src/reconciler/kube-types.js';
import { parseAnnotation } from '../../../src/contract/annotation.js';
import { placementOf } from '../../../src/contract/placement.js';
import { renderPoolsFile, type PoolsFile } from '../../../src/contract/pools-file.js';
import { DEFAULT_GATE_TAINT_KEY } from '../../../src/contract/names.js';
import { nodeAnnotationKey, nodeLabelKey } from '../../../src/contract/identity.js';
import { renderSidecarEnv, resolveSidecarEnv } from '../../../src/contract/sidecar-env.js';
import {
  adminEndpoint,
  apply,
  applyAccess,
  deletePod,
  INT_ACCESS,
  INT_NAMESPACES,
  makeNode,
  makePod,
  podToken,
  setContainerStatuses,
} from './cluster.js';
import { waitFor } from '../../../harness/time.js';

const NS = INT_NAMESPACES[1] as string;
const SA = 'prewarm-reconciler';
const ROOT = path.resolve(import.meta.dirname, '../../..');
const GATE = { key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' };

let admin: KubeHttp;
let tmp: string;
const children: ChildProcess[] = [];
const logs = new Map<ChildProcess, string>();

const pools: PoolsFile = {
  pools: [
    {
      id: 'int-p1',
      namespace: NS,
      nodeLabelKey: 'prewarm.dev/int-p1',
      placement: placementOf({ 'kubernetes.io/hostname': 'int-node-s' }, [], DEFAULT_GATE_TAINT_KEY),
      gateTaintKey: DEFAULT_GATE_TAINT_KEY,
    },
    {
      id: 'int-p2',
      namespace: NS,
      nodeLabelKey: 'prewarm.dev/int-p2',
      placement: placementOf({ 'kubernetes.io/hostname': 'int-node-s' }, [], DEFAULT_GATE_TAINT_KEY),
      gateTaintKey: DEFAULT_GATE_TAINT_KEY,
    },
    {
      id: 'int-p3',
      namespace: NS,
      nodeLabelKey: 'prewarm.dev/int-p3',
      placement: placementOf({ 'kubernetes.io/hostname': 'int-node-p' }, [], DEFAULT_GATE_TAINT_KEY),
      gateTaintKey: DEFAULT_GATE_TAINT_KEY,
      deadlineSeconds: 3,
    },
  ],
};

async function freshPod(name: string, node: string, images: string[]): Promise<KPod> {
  await deletePod(admin, NS, name);
  return makePod(admin, NS, name, node, SA, images);
}

/** Starts the compiled sidecar for `pod` of `pool` with a token bound to that pod. */
async function startSidecar(pod: KPod, pool: string, node: string, deadlineSeconds = 600): Promise<ChildProcess> {
  const tokenFile = path.join(tmp, `${pod.metadata.name}.token`);
  fs.writeFileSync(tokenFile, await podToken(admin, NS, SA, pod));
  const caFile = path.join(tmp, 'ca.crt');
  fs.writeFileSync(caFile, adminEndpoint().ca ?? '');
  const child = spawn(process.execPath, ['--max-old-space-size=24', path.join(ROOT, 'lib/src/reconciler/main.js')], {
    env: {
      PATH: process.env.PATH ?? '',
      PREWARM_KUBE_SERVER: adminEndpoint().server,
      PREWARM_KUBE_CA_FILE: caFile,
      PREWARM_KUBE_TOKEN_FILE: tokenFile,
      PREWARM_POOLS_PATH: path.join(tmp, 'pools.json'),
      ...resolveSidecarEnv(
        renderSidecarEnv({
          poolId: pool,
          nodeLabelKey: nodeLabelKey(pool),
          nodeAnnotationKey: nodeAnnotationKey(pool),
          gateTaintKey: DEFAULT_GATE_TAINT_KEY,
          deadlineSeconds,
          refreshSeconds: 0,
          metricsPort: 0,
        }),
        { 'spec.nodeName': node, 'metadata.name': pod.metadata.name as string, 'metadata.namespace': NS },
      ),
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  logs.set(child, '');
  child.stderr?.on('data', (c: Buffer) => logs.set(child, (logs.get(child) ?? '') + c.toString()));
  children.push(child);
  return child;
}

const running = (images: string[], at = new Date()) =>
  images.map((image, i) => ({
    name: `c${i}`,
    image,
    imageID: `${image.split(':')[0]}@sha256:${String(i).repeat(64)}`,
    ready: true,
    restartCount: 0,
    started: true,
    state: { running: { startedAt: at.toISOString() } },
    lastState: {},
  }));
const node = (name: string): Promise<KNode> => admin.json<KNode>('GET', `/api/v1/nodes/${name}`);
const gateOn = (n: KNode): boolean => (n.spec?.taints ?? []).some((t) => t.key === DEFAULT_GATE_TAINT_KEY);

beforeAll(async () => {
  execFileSync('npx', ['tsc', '-p', 'src/reconciler/tsconfig.json'], { cwd: ROOT, stdio: 'inherit' });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'prewarm-int-sidecar-'));
  fs.writeFileSync(path.join(tmp, 'pools.json'), renderPoolsFile(pools.pools));
  admin = new KubeHttp(adminEndpoint());
  await apply(admin, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  await applyAccess(admin, INT_ACCESS);
});

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  admin?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

function exitOf(c: ChildProcess): Promise<number> {
  return c.exitCode !== null ? Promise.resolve(c.exitCode) : new Promise((r) => c.on('exit', (code) => r(code ?? -1)));
}

describe('the sidecar process on a real apiserver', () => {
  it('two gating pools: the taint stays until the last one is warm; SIGTERM removes only its own label', async () => {
    await makeNode(admin, 'int-node-s', [GATE]);
    const imgs1 = ['reg.local/one:1', 'reg.local/two:1'];
    const imgs2 = ['reg.local/three:1'];
    const p1 = await freshPod('pull-s1', 'int-node-s', imgs1);
    const p2 = await freshPod('pull-s2', 'int-node-s', imgs2);
    const s1 = await startSidecar(p1, 'int-p1', 'int-node-s');
    const s2 = await startSidecar(p2, 'int-p2', 'int-node-s');
    try {
      await setContainerStatuses(admin, p1, running(imgs1));
      await waitFor('pool 1 warm', async () => (await node('int-node-s')).metadata.labels?.['prewarm.dev/int-p1'] === 'warm', 20_000, 200);
      const mid = await node('int-node-s');
      expect(gateOn(mid)).toBe(true);
      expect(parseAnnotation(mid.metadata.annotations?.['status.prewarm.dev/int-p1'])).toMatchObject({
        state: 'warm',
        images: 2,
        pod: 'pull-s1',
      });

      await setContainerStatuses(admin, p2, running(imgs2));
      const done = await waitFor(
        'pool 2 warm and the gate lifted',
        async () => {
          const n = await node('int-node-s');
          return n.metadata.labels?.['prewarm.dev/int-p2'] === 'warm' && !gateOn(n) ? n : undefined;
        },
        20_000,
        200,
      );
      expect(done.metadata.labels?.['prewarm.dev/int-p1']).toBe('warm');

      // The Event is the third write of the transition, after the label and the taint: wait for it.
      const warm = await waitFor(
        'the Warm Event of pool int-p2',
        async () => {
          const events = await admin.json<{ items: { reason: string; message: string }[] }>(
            'GET',
            '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dint-node-s',
          );
          return events.items.find((e) => e.reason === 'Warm' && e.message.includes('pool int-p2'));
        },
        10_000,
        200,
      );
      expect(warm.message).toContain('removed gate taint');

      s1.kill('SIGTERM');
      expect(await exitOf(s1)).toBe(0);
      const after = await node('int-node-s');
      expect(after.metadata.labels?.['prewarm.dev/int-p1']).toBeUndefined();
      expect(after.metadata.annotations?.['status.prewarm.dev/int-p1']).toBeUndefined();
      expect(after.metadata.labels?.['prewarm.dev/int-p2']).toBe('warm');
    } catch (e) {
      throw new Error(`${(e as Error).message}\n--- sidecar 1:\n${logs.get(s1)}\n--- sidecar 2:\n${logs.get(s2)}`, { cause: e });
    } finally {
      s2.kill('SIGTERM');
      await exitOf(s2);
    }
  });

  it('fails open at the deadline: partial label, gate lifted, Event naming the failing image and reason', async () => {
    await makeNode(admin, 'int-node-p', [GATE]);
    const imgs = ['reg.local/ok:1', 'reg.local/missing:1'];
    const p = await freshPod('pull-p', 'int-node-p', imgs);
    const s = await startSidecar(p, 'int-p3', 'int-node-p', 3);
    try {
      const ok = running(imgs)[0] as object;
      await setContainerStatuses(admin, p, [
        ok,
        {
          name: 'c1',
          image: imgs[1],
          imageID: '',
          ready: false,
          restartCount: 0,
          started: false,
          state: { waiting: { reason: 'ErrImagePull', message: 'manifest unknown' } },
          lastState: {},
        },
      ]);
      const n = await waitFor(
        'partial and the gate lifted',
        async () => {
          const x = await node('int-node-p');
          return x.metadata.labels?.['prewarm.dev/int-p3'] === 'partial' && !gateOn(x) ? x : undefined;
        },
        30_000,
        200,
      );
      expect(parseAnnotation(n.metadata.annotations?.['status.prewarm.dev/int-p3'])?.failing).toEqual([
        { image: 'reg.local/missing:1', reason: 'ErrImagePull', message: 'manifest unknown' },
      ]);
      const partial = await waitFor(
        'the Partial Event',
        async () => {
          const events = await admin.json<{ items: { reason: string; type: string; message: string }[] }>(
            'GET',
            '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dint-node-p',
          );
          return events.items.find((e) => e.reason === 'Partial');
        },
        10_000,
        200,
      );
      expect(partial.type).toBe('Warning');
      expect(partial.message).toContain('reg.local/missing:1: ErrImagePull (manifest unknown)');
    } catch (e) {
      throw new Error(`${(e as Error).message}\n--- sidecar:\n${logs.get(s)}`, { cause: e });
    } finally {
      s.kill('SIGTERM');
      await exitOf(s);
    }
  });
});
