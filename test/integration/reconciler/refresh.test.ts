/**
 * The moved-tag refresh's access on a real kube-apiserver (Node,RBAC authorization,
 * ValidatingAdmissionPolicy): with the synthesized RBAC and refresh policy, the sidecar's
 * pod-bound token may set an image container of its own pod to the same reference pinned to a
 * digest, through the real adapter {@link KubePodImages}, and nothing else: not another
 * repository, not a tag, not the sidecar, not another pod, not any other field, and not at all in
 * a namespace whose pools do not refresh.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeHttp } from '../../../src/http/client.js';
import { ApiError } from '../../../src/http/api-error.js';
import type { KPod } from '../../../src/reconciler/kube-types.js';
import { KubePodImages } from '../../../src/reconciler/adapters/kube.js';
import { holderSelector, poolMembersQuery } from '../../../src/contract/roles.js';
import { LABEL_POOL_MEMBER, SIDECAR_CONTAINER } from '../../../src/contract/names.js';
import { adminEndpoint, applyAccess, INT_ACCESS, INT_NAMESPACES, makeNode, podToken, tokenEndpoint, denial, deletePod } from './cluster.js';
import { waitFor } from '../../../harness/time.js';

const NS = INT_ACCESS.refreshNamespaces?.[0] as string;
/** A pool namespace whose pools do not refresh: no `patch pods` there. */
const NO_REFRESH_NS = INT_NAMESPACES[0] as string;
const SA = 'prewarm-reconciler';
const NODE = 'int-node-r';
const POOL = 'int-refresh';
const A = 'reg.local/team/a:1';
const B = 'reg.local/team/b:2';
const SIDECAR_IMAGE = 'reg.local/prewarm:test';
const digest = (c: string): string => `sha256:${c.repeat(64)}`;

let admin: KubeHttp;
let sa: KubeHttp;
let otherSa: KubeHttp;

/** A holder pod as the pull DaemonSet renders it: image containers, the sidecar as a native sidecar. */
async function holderPod(ns: string, name: string): Promise<KPod> {
  await deletePod(admin, ns, name);
  return admin.json<KPod>('POST', `/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels: { ...holderSelector(POOL), [LABEL_POOL_MEMBER]: POOL } },
    spec: {
      nodeName: NODE,
      serviceAccountName: SA,
      automountServiceAccountToken: false,
      initContainers: [{ name: SIDECAR_CONTAINER, image: SIDECAR_IMAGE, restartPolicy: 'Always' }],
      containers: [
        { name: 'c0', image: A, imagePullPolicy: 'Always' },
        { name: 'c1', image: B, imagePullPolicy: 'Always' },
      ],
    },
  });
}

const podOf = (ns: string, name: string): Promise<KPod> => admin.json<KPod>('GET', `/api/v1/namespaces/${ns}/pods/${name}`);
const imageOf = async (name: string, container: string): Promise<string | undefined> =>
  (await podOf(NS, name)).spec?.containers?.find((c) => c.name === container)?.image;
const merge = (http: KubeHttp, ns: string, name: string, body: object): Promise<KPod> =>
  http.json<KPod>('PATCH', `/api/v1/namespaces/${ns}/pods/${name}`, body, 'application/strategic-merge-patch+json');

beforeAll(async () => {
  admin = new KubeHttp(adminEndpoint());
  await applyAccess(admin, INT_ACCESS);
  await makeNode(admin, NODE, []);
  const own = await holderPod(NS, 'pull-r');
  await holderPod(NS, 'pull-r2');
  const noRefresh = await holderPod(NO_REFRESH_NS, 'pull-n');
  sa = new KubeHttp(tokenEndpoint(await podToken(admin, NS, SA, own)));
  otherSa = new KubeHttp(tokenEndpoint(await podToken(admin, NO_REFRESH_NS, SA, noRefresh)));
  // The policy reaches the admission plugin asynchronously: wait until a change only it forbids is
  // denied. Each probe sets a new value, so a probe admitted before the policy applies is a change
  // again the next time.
  let probe = 0;
  await waitFor(
    'the refresh policy to be enforced',
    async () => {
      try {
        await merge(sa, NS, 'pull-r', { metadata: { labels: { 'prewarm.dev/probe': String(probe++) } } });
        return false;
      } catch (e) {
        return e instanceof ApiError && e.code === 403 && e.message.includes('ValidatingAdmissionPolicy');
      }
    },
    60_000,
    200,
  );
  expect(await imageOf('pull-r', 'c0')).toBe(A);
});

afterAll(() => {
  admin?.close();
  sa?.close();
  otherSa?.close();
});

describe('refresh access on a real apiserver', () => {
  it('the sidecar pins an image container of its own pod to a digest, and moves it to the next digest', async () => {
    const images = new KubePodImages(sa, NS, 'pull-r');
    await images.restart('c0', `${A}@${digest('1')}`);
    expect(await imageOf('pull-r', 'c0')).toBe(`${A}@${digest('1')}`);
    await images.restart('c0', `${A}@${digest('2')}`);
    const pod = await podOf(NS, 'pull-r');
    expect(pod.spec?.containers?.map((c) => c.image)).toEqual([`${A}@${digest('2')}`, B]);
    // Its own pod is still found by the pool's query: nothing but the image changed.
    const listed = await admin.json<{ items: KPod[] }>('GET', `/api/v1/namespaces/${NS}/pods?labelSelector=${poolMembersQuery(POOL)}`);
    expect(listed.items.map((p) => p.metadata.name).sort()).toEqual(['pull-r', 'pull-r2']);
  });

  it('denies another repository, a tag, a malformed digest and dropping the tag', async () => {
    const images = new KubePodImages(sa, NS, 'pull-r');
    for (const image of [
      `reg.local/team/evil:1@${digest('3')}`,
      'reg.local/team/b:3',
      `${B}:x@${digest('3')}`,
      `${B}@sha256:abc`,
      `reg.local/team/b@${digest('3')}`,
    ]) {
      const e = await denial(images.restart('c1', image));
      expect(e.code, image).toBe(403);
      expect(e.message, image).toContain("may only add or replace the digest of a container's image");
    }
    expect(await imageOf('pull-r', 'c1')).toBe(B);
  });

  it('denies changing the sidecar, even to its own repository at a digest', async () => {
    const e = await denial(
      merge(sa, NS, 'pull-r', { spec: { initContainers: [{ name: SIDECAR_CONTAINER, image: `${SIDECAR_IMAGE}@${digest('4')}` }] } }),
    );
    expect(e.code).toBe(403);
    expect((await podOf(NS, 'pull-r')).spec?.initContainers?.[0]?.image).toBe(SIDECAR_IMAGE);
  });

  it('denies another pod of its pool, naming both pods', async () => {
    const e = await denial(new KubePodImages(sa, NS, 'pull-r2').restart('c0', `${A}@${digest('5')}`));
    expect(e.code).toBe(403);
    expect(e.message).toContain('may only change its own pod (token pod: pull-r, target: pull-r2)');
    expect(await imageOf('pull-r2', 'c0')).toBe(A);
  });

  it('denies every other field that a pod update may change', async () => {
    const changes: object[] = [
      { metadata: { labels: { [LABEL_POOL_MEMBER]: 'other' } } },
      { metadata: { annotations: { x: 'y' } } },
      { metadata: { finalizers: ['example.com/hold'] } },
      { spec: { activeDeadlineSeconds: 5 } },
      { spec: { tolerations: [{ key: 'x', operator: 'Exists' }] } },
    ];
    for (const body of changes) expect((await denial(merge(sa, NS, 'pull-r', body))).code, JSON.stringify(body)).toBe(403);
  });

  it('RBAC: no pod patch in a namespace whose pools do not refresh, no pod delete or create anywhere', async () => {
    const e = await denial(new KubePodImages(otherSa, NO_REFRESH_NS, 'pull-n').restart('c0', `${A}@${digest('6')}`));
    expect(e.code).toBe(403);
    expect(e.message).not.toContain('ValidatingAdmissionPolicy');
    expect((await denial(sa.json('DELETE', `/api/v1/namespaces/${NS}/pods/pull-r2`))).code).toBe(403);
    // `patch pods` covers no subresource: not the status, not ephemeral containers, not a resize.
    for (const sub of ['status', 'ephemeralcontainers', 'resize'])
      expect((await denial(merge(sa, NS, `pull-r/${sub}`, { metadata: { labels: { x: 'y' } } }))).code, sub).toBe(403);
    expect((await denial(sa.json('PUT', `/api/v1/namespaces/${NS}/pods/pull-r`, await podOf(NS, 'pull-r')))).code).toBe(403);
  });
});
