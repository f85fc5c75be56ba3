/**
 * Peers: OpenKruise v1.9.0, built from its Go module by this tier's global setup, installed the way
 * its chart installs it (harness/cluster/kruise.ts), on a real harness node.
 *
 * 1. An ImageListPullJob of the kind a user writes to keep a pool warm (`completionPolicy: Never`,
 *    the pool's node selector) puts its images into the node's containerd, through kruise-daemon
 *    and the node's CRI socket, and the node's NodeImage reports each pull as succeeded. A build
 *    that does not run, a manager whose webhooks do not answer or a daemon that cannot reach the
 *    socket fails here.
 * 2. `cluster down`, with that daemon, a running pod and its shim and network namespace on the
 *    node, leaves nothing of the cluster on the machine: no process, no mount, no harness netns, no
 *    pod netns. This test brings the cluster down itself, so it runs last in the file.
 */
import { readdirSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { addNode, down, kubectl } from '../../harness/cluster/cluster.js';
import { IMAGES as CLUSTER_IMAGES, REGISTRY } from '../../harness/cluster/config.js';
import { ensureStandIn, normalize } from '../../harness/cluster/images.js';
import { imageListPullJob, installKruise, startKruiseDaemon } from '../../harness/cluster/kruise.js';
import { kruiseDaemonName } from '../../harness/cluster/node.js';
import { daemonPid } from '../../harness/cluster/sh.js';
import { leftovers } from '../../harness/cluster/sweep.js';
import { missingImages } from '../../harness/nodes.js';
import { waitFor } from '../../harness/time.js';
import { kubeconfigPath, waitImagesOnNode } from '../e2e/helpers.js';

const NODE = 'kruise-node';
const NS = 'e2e-kruise';
const LABELS = { 'e2e.prewarm.dev/kruise': 'pool' };
const SIZES_MIB = [8, 16];
const IMAGES = SIZES_MIB.map((_, i) => `${REGISTRY.plain}/e2e/kruise-${i + 1}:v1`);

interface NodeImageStatus {
  status?: { imageStatuses?: Record<string, { tags?: { tag: string; phase?: string }[] }> };
}

/** The phase NodeImage reports for `ref` (repo:tag) on the node, if any. */
function nodeImagePhase(ref: string): string | undefined {
  const ni = JSON.parse(kubectl(['get', 'nodeimage', NODE, '-o', 'json'])) as NodeImageStatus;
  const colon = ref.lastIndexOf(':');
  const tags = ni.status?.imageStatuses?.[ref.slice(0, colon)]?.tags ?? [];
  return tags.find((t) => t.tag === ref.slice(colon + 1))?.phase;
}

function netnsNames(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

describe('OpenKruise beside prewarm', () => {
  beforeAll(async () => {
    IMAGES.forEach((ref, i) => ensureStandIn(ref, { sizeBytes: (SIZES_MIB[i] ?? 8) * 1024 * 1024 }));
    await installKruise(kubeconfigPath());
    const { spec } = await addNode(NODE, { labels: LABELS });
    startKruiseDaemon(NODE, spec.index);
    kubectl(['create', 'namespace', NS]);
  });

  it("pulls an ImageListPullJob's images into the node's containerd", async () => {
    expect(await missingImages(NODE, IMAGES)).toEqual(IMAGES.map(normalize));
    const job = imageListPullJob({ name: 'pool', namespace: NS, images: IMAGES, nodeLabels: LABELS });
    kubectl(['create', '-f', '-'], { input: JSON.stringify(job) });
    // NodeImage objects appear 30 s after a node is Ready (--nodeimage-creation-delay, left at its default).
    await waitImagesOnNode(NODE, IMAGES, 240_000, 500);
    expect(daemonPid(kruiseDaemonName(NODE))).toBeDefined();
    await waitFor('NodeImage to report every pull succeeded', () => IMAGES.every((r) => nodeImagePhase(r) === 'Succeeded'), 60_000, 1_000);
  });

  it('cluster down leaves no process, mount or network namespace behind', async () => {
    const podNetnsBefore = new Set(netnsNames('/run/netns'));
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'sleeper', namespace: NS },
      spec: { nodeName: NODE, containers: [{ name: 'pause', image: CLUSTER_IMAGES.pause }] },
    };
    kubectl(['create', '-f', '-'], { input: JSON.stringify(pod) });
    kubectl(['-n', NS, 'wait', '--for=condition=Ready', 'pod/sleeper', '--timeout=120s']);
    expect(leftovers().processes.some((p) => p.includes('containerd-shim'))).toBe(true);

    await down();

    expect(leftovers()).toEqual({ processes: [], mounts: [], netns: [] });
    expect(netnsNames('/run/netns').filter((n) => !podNetnsBefore.has(n))).toEqual([]);
  });
});
