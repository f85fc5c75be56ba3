/**
 * E2E: private images and KEP-2535 (`KubeletEnsureSecretPulledImages`, beta and on by
 * default in the harness's Kubernetes 1.36, default policy `NeverVerifyPreloadedImages`). A pool
 * warms a node with a private image from the harness's TLS registry (basic auth) through its pull
 * secret; then, on that warm node, counted in the registry's access log:
 * 1. a workload pod in another namespace, with its own pull secret holding the same credentials,
 *    starts with zero blob requests (the kubelet matches the credentials by hash);
 * 2. a workload pod with no pull secret: what the kubelet does is measured and printed (the KEP
 *    says it must pull with the pod's own credentials, i.e. none); docs/troubleshooting.md has it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addNode, kubectl, removeNode } from '../../harness/cluster/cluster.js';
import { REGISTRY } from '../../harness/cluster/config.js';
import { ensureStandIn } from '../../harness/cluster/images.js';
import type { Taint } from '../../harness/cluster/node.js';
import { registryLogOffset, registryRequests, type RegistryRequest } from '../../harness/cluster/registry.js';
import { Kube, type KubeObject } from '../../harness/kube.js';
import { poolsOf, prepareImages, synth, yamlObjects } from '../../harness/manifests.js';
import { sleep, waitFor } from '../../harness/time.js';
import { workloadPod } from '../../harness/workloads.js';
import { DEFAULT_GATE_TAINT_KEY } from '../../src/contract/names.js';
import { nodeLabelKey } from '../../src/contract/identity.js';
import { applyServerSide, imageCache, registryPullSecret, specDir } from './helpers.js';

const NS = 'e2e-kep2535';
const WL_NS = 'e2e-kep2535-wl';
const NODE = 'kep2535-node';
const SEL = 'e2e.prewarm.dev/kep2535';
const POOL = 'kep2535';
const IMAGE = `${REGISTRY.tls}/e2e/kep2535-app:v1`;
const GATE: Taint = { key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' };

interface Counts {
  blobs: number;
  manifests: number;
  statuses: number[];
}

/** Blob and manifest requests for the image's repository (any method: HEAD and GET both count). */
function counts(reqs: readonly RegistryRequest[]): Counts {
  const repo = '/v2/e2e/kep2535-app/';
  const mine = reqs.filter((r) => r.path.startsWith(repo));
  return {
    blobs: mine.filter((r) => r.path.startsWith(`${repo}blobs/`)).length,
    manifests: mine.filter((r) => r.path.startsWith(`${repo}manifests/`)).length,
    statuses: [...new Set(mine.map((r) => r.status))].sort(),
  };
}

/** A workload on the warm node running the private image, with or without a pull secret. */
function workload(name: string, helper: string, pullSecret: string | undefined): KubeObject {
  return workloadPod({ name, namespace: WL_NS, node: NODE, helper, images: [IMAGE], ...(pullSecret ? { pullSecrets: [pullSecret] } : {}) });
}

interface AppState {
  phase: string;
  waiting?: { reason?: string; message?: string };
  running: boolean;
}

async function appState(kube: Kube, name: string): Promise<AppState> {
  const p = await kube.get(`/api/v1/namespaces/${WL_NS}/pods/${name}`);
  const c = ((p.status?.containerStatuses ?? []) as { name: string; state?: { running?: object; waiting?: AppState['waiting'] } }[]).find(
    (x) => x.name === 'app-1',
  );
  return {
    phase: p.status?.phase ?? '',
    ...(c?.state?.waiting ? { waiting: c.state.waiting } : {}),
    running: c?.state?.running !== undefined,
  };
}

describe('private images across namespaces (KEP-2535)', () => {
  let kube: Kube;
  let helper: string;

  beforeAll(async () => {
    kubectl(['delete', 'namespace', NS, WL_NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
    const dir = specDir('kep2535', [
      imageCache(NS, POOL, [{ pool: POOL, nodeSelector: { [SEL]: 'yes' }, images: [IMAGE] }], { imagePullSecrets: [{ name: 'regcred' }] }),
    ]);
    const objects = yamlObjects(synth([dir]).yaml);
    helper = poolsOf(objects)[0]?.helper[0] ?? '';
    expect(helper, 'the pool has a helper image').not.toBe('');
    ensureStandIn(IMAGE, { sizeBytes: 4 << 20 });
    prepareImages(objects);
    const namespaces = objects.filter((o) => o.kind === 'Namespace');
    expect(applyServerSide(namespaces.map((o) => JSON.stringify(o)).join('\n---\n')).warnings).toEqual([]);
    expect(applyServerSide(JSON.stringify(registryPullSecret(NS, 'regcred'))).warnings).toEqual([]);
    const applied = applyServerSide(objects.map((o) => JSON.stringify(o)).join('\n---\n'));
    expect(applied.warnings, applied.stderr).toEqual([]);
    applyServerSide(JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: WL_NS } }));
    // The same credentials under another name, in another namespace.
    applyServerSide(JSON.stringify(registryPullSecret(WL_NS, 'wl-cred')));
    kube = new Kube();
    await addNode(NODE, { labels: { [SEL]: 'yes' }, taints: [GATE], wait: false });
    await waitFor(
      `${NODE} warm and the gate gone`,
      async () => {
        const n = await kube.get(`/api/v1/nodes/${NODE}`);
        return n.metadata.labels?.[nodeLabelKey(POOL)] === 'warm' && !((n.spec?.taints ?? []) as Taint[]).some((t) => t.key === GATE.key);
      },
      240_000,
      500,
    );
  });

  afterAll(async () => {
    kube?.close();
    await removeNode(NODE).catch(() => undefined);
    kubectl(['delete', 'namespace', NS, WL_NS, '--ignore-not-found', '--wait=false'], { allowFail: true });
  });

  it('a pod in another namespace with its own secret of the same credentials starts with zero blob requests', async () => {
    const offset = registryLogOffset(true);
    await kube.apply(workload('with-secret', helper, 'wl-cred'));
    const st = await waitFor(
      'with-secret Running',
      async () => {
        const s = await appState(kube, 'with-secret');
        return s.running ? s : undefined;
      },
      120_000,
      500,
    );
    expect(st.phase).toBe('Running');
    // The access log is written as requests complete: give a late line a moment to land.
    await sleep(1_000);
    const c = counts(registryRequests(true, offset));
    console.log(`private image cross-namespace: ${c.blobs} blob requests, ${c.manifests} manifest requests`);
    expect(c.blobs).toBe(0);
  });

  it('a pod with no pull secret: what the kubelet does (measured, see docs/troubleshooting.md)', async () => {
    const offset = registryLogOffset(true);
    await kube.apply(workload('no-secret', helper, undefined));
    // Running, or a pull error the kubelet settles on; bounded either way.
    const st = await waitFor(
      'no-secret Running or failing to pull',
      async () => {
        const s = await appState(kube, 'no-secret');
        return s.running || /ErrImagePull|ImagePullBackOff/.test(s.waiting?.reason ?? '') ? s : undefined;
      },
      120_000,
      500,
    );
    await sleep(1_000);
    const c = counts(registryRequests(true, offset));
    const outcome = st.running ? 'Running' : `${st.waiting?.reason ?? ''}: ${st.waiting?.message ?? ''}`;
    console.log(
      `private image no pull secret: ${outcome}; ${c.blobs} blob requests, ${c.manifests} manifest requests (HTTP ${c.statuses.join(', ') || 'none'})`,
    );
    // KEP-2535: an image pulled with a secret is never handed to a pod without credentials for it.
    expect(st.running, outcome).toBe(false);
    expect(c.manifests).toBeGreaterThan(0);
    expect(c.blobs).toBe(0);
  });
});
