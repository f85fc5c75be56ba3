/**
 * E2E: `prewarm doctor`'s disk budget on real kubelets whose image filesystem is a small disk of
 * its own (harness `imageFsMiB`: a loop-mounted ext4 on containerd's root) with low image GC
 * thresholds. One pool pins the big test image (random data: compressed is unpacked size), the
 * helper and the sidecar. The disk is sized from the pinned bytes the registry states (five times
 * them, so the pinned share is about 20% and everything unpacks with room to spare), and the
 * thresholds are far enough from that share that a size estimate off by half still lands on the
 * same side:
 * - disk-err: GC from 10% down to 5%: the pinned images alone pass the high threshold: error;
 * - disk-warn: GC from 60% down to 5%: past the low threshold only: warning.
 * The compiled CLI runs as admin and must read each kubelet's /stats/summary and /configz through
 * the apiserver's node proxy, size every image from the node's own image list, and exit 3. The
 * sidecar on disk-warn must export the same bytes as prewarm_pool_pinned_bytes, complete.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addNode, kubectl, removeNode } from '../../harness/cluster/cluster.js';
import { NET, REGISTRY, REPO_DIR } from '../../harness/cluster/config.js';
import { localTarget, rawManifest, TEST_IMAGES } from '../../harness/cluster/images.js';
import { loadSpec } from '../../harness/cluster/node.js';
import { nodeNet } from '../../harness/cluster/net.js';
import { run, type RunResult } from '../../harness/cluster/sh.js';
import { buildProject, poolsOf, prepareImages, synth, yamlObjects, type PoolImages } from '../../harness/manifests.js';
import { waitFor } from '../../harness/time.js';
import type { DoctorReport, Finding } from '../../src/doctor/report.js';
import { nodeLabelKey } from '../../src/contract/identity.js';
import { applyServerSide, imageCache, kubeconfigPath, poolPodOnNode, specDir, waitNodeListsImages } from './helpers.js';

const NS = 'e2e-disk';
const SEL = 'e2e.prewarm.dev/disk';
const POOL = 'disk';
const ERR = 'disk-err';
const WARN = 'disk-warn';
const MiB = 2 ** 20;

/** The compressed size the local registry states for `ref`: config and layers of its manifest. */
function registryBytes(ref: string): number {
  const t = localTarget(ref);
  const target = { addr: t.tls ? REGISTRY.tls : REGISTRY.plain, tls: t.tls, netns: NET.hubNs };
  const m = JSON.parse(rawManifest(target, `${t.repo}:${t.tag}`).toString()) as {
    config?: { size: number };
    layers?: { size: number }[];
  };
  if (!m.config || !m.layers) throw new Error(`${ref}: the harness pushes single-platform images; got an index`);
  return m.config.size + m.layers.reduce((n, l) => n + l.size, 0);
}

/** `prewarm doctor -o json` of the compiled CLI, as admin. */
function doctor(): RunResult {
  return run(['node', join(REPO_DIR, 'lib/src/cli/bin.js'), 'doctor', '-o', 'json'], {
    cwd: REPO_DIR,
    env: { ...process.env, KUBECONFIG: kubeconfigPath() },
    allowFail: true,
    timeoutMs: 120_000,
  });
}

function budgetOf(r: RunResult, node: string): Finding {
  let rep: DoctorReport;
  try {
    rep = JSON.parse(r.stdout) as DoctorReport;
  } catch {
    throw new Error(`doctor printed no JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
  const found = rep.findings.filter((f) => f.scope === `node ${node}` && f.check === 'disk-budget');
  expect(found.length, JSON.stringify(rep.findings, null, 2)).toBe(1);
  return found[0] as Finding;
}

describe('doctor disk budget on small image filesystems', () => {
  let pool: PoolImages;
  let pinned = 0;

  beforeAll(async () => {
    kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
    const dir = specDir('disk', [imageCache(NS, 'disk', [{ pool: POOL, nodeSelector: { [SEL]: 'yes' }, images: [TEST_IMAGES.big] }])]);
    const { yaml } = synth([dir]);
    const objects = yamlObjects(yaml);
    prepareImages(objects);
    buildProject();
    const p = poolsOf(objects).find((x) => x.namespace === NS);
    if (!p) throw new Error('no disk pool');
    pool = p;
    pinned = [...new Set(pool.all)].reduce((n, ref) => n + registryBytes(ref), 0);
    const imageFsMiB = Math.max(256, Math.ceil((5 * pinned) / MiB));
    console.log(`pinned ${pinned} bytes (registry, compressed); image filesystems of ${imageFsMiB} MiB`);
    await Promise.all([
      addNode(ERR, { labels: { [SEL]: 'yes' }, imageFsMiB, imageGc: { highThresholdPercent: 10, lowThresholdPercent: 5 } }),
      addNode(WARN, { labels: { [SEL]: 'yes' }, imageFsMiB, imageGc: { highThresholdPercent: 60, lowThresholdPercent: 5 } }),
    ]);
    expect(applyServerSide(yaml).warnings).toEqual([]);
    const label = nodeLabelKey(POOL).replace(/\./g, '\\.');
    for (const node of [ERR, WARN])
      await waitFor(
        `${node} warm`,
        () => kubectl(['get', 'node', node, '-o', `jsonpath={.metadata.labels.${label}}`], { allowFail: true }) === 'warm',
        300_000,
        500,
      );
    for (const node of [ERR, WARN]) await waitNodeListsImages(node, pool.all);
  });

  afterAll(async () => {
    for (const n of [ERR, WARN]) await removeNode(n).catch(() => undefined);
    kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false'], { allowFail: true });
  });

  it('an error where the pinned images pass the high threshold, a warning where they pass only the low one; exit 3', () => {
    const r = doctor();
    expect(r.code, r.stderr).toBe(3);
    const err = budgetOf(r, ERR);
    const warn = budgetOf(r, WARN);
    console.log(`${err.level}: ${err.message}\n${warn.level}: ${warn.message}`);
    expect(err.level).toBe('error');
    expect(err.message).toContain('image GC from 10% down to 5%: the pinned images alone pass the high threshold');
    expect(warn.level).toBe('warning');
    expect(warn.message).toContain('image GC from 60% down to 5%: the pinned images alone pass the low threshold');
    for (const f of [err, warn]) {
      // Every image is on the warm node and in its list: no registry sizes, no lower bound.
      expect(f.message).toMatch(new RegExp(`^pool ${POOL} pins 3 images, \\d+\\.\\d MiB, \\d+% of an image filesystem of`));
      expect(f.message).not.toContain('compressed');
      expect(f.message).not.toContain('at least');
      expect(f.fix).toContain('larger image filesystem');
    }
  });

  it("the sidecar exports the pool's pinned bytes from the node's image list, complete", async () => {
    const pod = poolPodOnNode(pool, WARN);
    if (!pod) throw new Error(`no pool pod on ${WARN}`);
    const ip = kubectl(['-n', NS, 'get', 'pod', pod.name, '-o', 'jsonpath={.status.podIP}']).trim();
    const spec = loadSpec(WARN);
    if (!spec) throw new Error(`no spec of ${WARN}`);
    const script = `require('http').get('http://${ip}:9464/metrics', (r) => { let b = ''; r.on('data', (c) => (b += c)); r.on('end', () => process.stdout.write(b)); })`;
    const scrape = () => run([process.execPath, '-e', script], { netns: nodeNet(WARN, spec.index).ns, timeoutMs: 30_000 }).stdout;
    // The sidecar reads the node's image list at each reconcile: pod events and the 5 min resync.
    // It warmed before the kubelet listed the images (its image cache refreshes every 30 s), so a
    // pod event (an annotation on its own pod) makes it read the now complete list.
    kubectl(['-n', NS, 'annotate', 'pod', pod.name, '--overwrite', `e2e.prewarm.dev/kick=${Date.now()}`]);
    let metrics = '';
    await waitFor(
      'prewarm_pool_pinned_bytes complete',
      () => /^prewarm_pool_pinned_bytes\{complete="true",pool="disk"\} \d+$/m.test((metrics = scrape())),
      30_000,
      1000,
    );
    const m = /^prewarm_pool_pinned_bytes\{complete="true",pool="disk"\} (\d+)$/m.exec(metrics);
    expect(m, metrics).not.toBeNull();
    const listed = JSON.parse(kubectl(['get', 'node', WARN, '-o', 'json'])) as {
      status: { images: { names?: string[]; sizeBytes: number }[] };
    };
    // The same bytes the node lists for the pool's images, and within a factor of two of what the registry states.
    const bytes = Number(m?.[1]);
    expect(bytes).toBeLessThanOrEqual(listed.status.images.reduce((n, i) => n + i.sizeBytes, 0));
    expect(bytes).toBeGreaterThan(pinned / 2);
    expect(bytes).toBeLessThan(pinned * 2);
  });
});
