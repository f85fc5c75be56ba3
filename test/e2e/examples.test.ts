/**
 * E2E: the synth output of examples/ (as dist/ is made: prewarm owns
 * namespace `prewarm`) applied unchanged with server-side apply into namespaces labelled Pod
 * Security restricted (warn + enforce): by prewarm where it owns the namespace, by the namespace's
 * own owner elsewhere, and those labels survive the apply. No warning, every pod Running; then a
 * node joining afterwards gets every image of its pools, timed against a raw pull of the same
 * images on a fresh containerd.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addNode, kubectl, removeNode } from '../../harness/cluster/cluster.js';
import { startBareRuntime, stopBareRuntime, rawPull } from '../../harness/cluster/bare.js';
import { nodeImages } from '../../harness/cluster/node.js';
import { normalize } from '../../harness/cluster/images.js';
import type { KubeObject } from '../../harness/kube.js';
import { type PoolImages, poolsOf, prepareImages, synth, yamlObjects } from '../../harness/manifests.js';
import { secs } from '../../harness/time.js';
import { applyServerSide, describePool, waitImagesOnNode, waitPoolPodRunning, pods } from './helpers.js';

/** Labels and taint that make a node match every pool of the examples. */
const ALL_POOLS_NODE = {
  labels: { tier: 'backend', 'node.kubernetes.io/instance-type': 'g5.2xlarge' },
  taints: [{ key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' as const }],
};
/** As `npm run synth` makes dist/ (see test/examples.test.ts). */
const OWNED = ['prewarm'];
const SYNTH_ARGS = OWNED.flatMap((ns) => ['--own-namespace', ns]);
const ENFORCE = 'pod-security.kubernetes.io/enforce';
const WARN = 'pod-security.kubernetes.io/warn';
const FIRST = 'ex-first';
const JOIN = 'ex-join';
const RAW = 'ex-raw';

describe('examples/ synth output on a real cluster', () => {
  let objects: KubeObject[] = [];
  let pools: PoolImages[] = [];

  beforeAll(async () => {
    const { yaml } = synth(['examples'], SYNTH_ARGS);
    objects = yamlObjects(yaml);
    pools = poolsOf(objects);
    expect(pools.length).toBeGreaterThan(0);
    prepareImages(objects);
    await addNode(FIRST, ALL_POOLS_NODE);
  });

  afterAll(async () => {
    await stopBareRuntime(RAW).catch(() => undefined);
    for (const n of [FIRST, JOIN]) await removeNode(n).catch(() => undefined);
    // Leave the shared cluster as this file found it: a later file (doctor's) reads every prewarm
    // object in the cluster, and the examples' pools would show up in its findings.
    const applied = objects.filter((o) => !(o.kind === 'Namespace' && o.metadata.name === 'default'));
    kubectl(['delete', '--ignore-not-found', '--wait=false', '-f', '-'], {
      input: applied.map((o) => JSON.stringify(o)).join('\n---\n'),
      allowFail: true,
    });
  });

  it('applies with server-side apply into restricted namespaces with zero warnings; every pod Running', async () => {
    const namespaces = objects.filter((o) => o.kind === 'Namespace');
    // `default` holds only the sidecar's Events RoleBinding; it exists in every cluster and prewarm
    // never emits (so never owns or prunes) it.
    const used = new Set(objects.map((o) => o.metadata.namespace).filter((n): n is string => !!n && n !== 'default'));
    const shared = [...used].filter((ns) => !OWNED.includes(ns));
    expect(shared.length, 'examples use namespaces prewarm does not own').toBeGreaterThan(0);
    for (const ns of used) {
      const nsObj = namespaces.find((n) => n.metadata.name === ns);
      expect(nsObj, `synth output declares namespace ${ns}`).toBeDefined();
      const labels = nsObj?.metadata.labels ?? {};
      if (OWNED.includes(ns)) {
        expect(labels[ENFORCE]).toBe('restricted');
        expect(labels[WARN]).toBe('restricted');
      } else {
        // Not prewarm's: no Pod Security level imposed, and no GitOps prune of it.
        expect(labels).toEqual({});
        const annotations = (nsObj?.metadata as { annotations?: Record<string, string> } | undefined)?.annotations;
        expect(annotations?.['kustomize.toolkit.fluxcd.io/prune']).toBe('disabled');
      }
    }
    // The namespaces prewarm does not own belong to someone else, who restricts them here (as an
    // ML team may); prewarm's pods must pass, and prewarm's apply must not strip the labels.
    const own = shared
      .map((ns) => `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${ns}\n  labels: {${ENFORCE}: restricted, ${WARN}: restricted}\n`)
      .join('---\n');
    expect(applyServerSide(own, 'namespace-owner').warnings).toEqual([]);
    const { yaml } = synth(['examples'], SYNTH_ARGS);
    const applied = applyServerSide(yaml);
    expect(applied.warnings, applied.stderr).toEqual([]);
    // The server holds the labels (nothing stripped them).
    for (const ns of used) {
      const labels = JSON.parse(kubectl(['get', 'ns', ns, '-o', 'jsonpath={.metadata.labels}'])) as Record<string, string>;
      expect(labels[ENFORCE]).toBe('restricted');
      expect(labels[WARN]).toBe('restricted');
    }
    for (const pool of pools) await waitPoolPodRunning(pool, FIRST);
    // Every pod of every pool, on every node, is Running (none Pending or failing).
    for (const pool of pools) {
      const ps = pods(`prewarm.dev/pool=${pool.pool}`, pool.namespace);
      expect(ps.length, describePool(pool)).toBeGreaterThan(0);
      for (const p of ps) expect(p.phase, `${p.namespace}/${p.name} on ${p.node}\n${describePool(pool)}`).toBe('Running');
    }
    const have = new Set(nodeImages(FIRST));
    for (const ref of pools.flatMap((p) => p.all)) expect(have.has(normalize(ref)), `${ref} on ${FIRST}`).toBe(true);
  });

  it('a node joining after the apply gets every image of its pools; time-to-warm vs raw pull', async () => {
    const want = [...new Set(pools.flatMap((p) => p.all))];
    const { readyAt } = await addNode(JOIN, ALL_POOLS_NODE);
    const warmAt = await waitImagesOnNode(JOIN, want, 300_000, 100);
    const warmMs = warmAt - readyAt;
    for (const pool of pools) await waitPoolPodRunning(pool, JOIN);

    await startBareRuntime(RAW);
    const rawMs = await rawPull(RAW, want);
    const have = new Set(nodeImages(RAW));
    for (const ref of want) expect(have.has(normalize(ref)), `raw pull of ${ref}`).toBe(true);
    const ratio = warmMs / rawMs;
    console.log(`time-to-warm ${JOIN}: ${secs(warmMs)}s (raw pull ${secs(rawMs)}s, ratio ${ratio.toFixed(2)}) [${want.length} images]`);
    expect(warmMs).toBeGreaterThan(0);
  });
});
