/**
 * E2E: `prewarm discover --from-cluster --write` on the harness cluster, then synth and apply, and a
 * node joins the pool: the workloads' pods start on it with their images already there.
 *
 * Deployed first, before any node of the pool exists: a Deployment, a StatefulSet and a CronJob
 * that select the pool's label and tolerate its dedicated taint, and a Deployment that selects
 * another value of that label (it fits no pool). The spec repository holds one ImageCache whose
 * pool selects the label and tolerates the taint, so no other workload of the shared cluster fits
 * it. discover reads the cluster, writes the three workloads' images into the spec file (and
 * reports the fourth as uncovered); the spec synthesizes and is applied; the node joins with the
 * dedicated taint and the gate taint. The workloads' pods are held by the gate until the node is
 * warm, and the kubelet reports each of their images "already present on machine": it pulled none.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as runCli } from '../../src/cli/main.js';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { DEFAULT_GATE_TAINT_KEY } from '../../src/contract/names.js';
import type { Plan } from '../../src/discover/plan.js';
import { addNode, kubectl } from '../../harness/cluster/cluster.js';
import type { Taint } from '../../harness/cluster/node.js';
import { normalize } from '../../harness/cluster/images.js';
import { HARNESS_HELPER_IMAGE, poolsOf, prepareImages, synth, yamlObjects, type PoolImages } from '../../harness/manifests.js';
import { until } from '../../harness/nodes.js';
import { waitFor } from '../../harness/time.js';
import { workloadPod } from '../../harness/workloads.js';
import type { Kube, KubeObject } from '../../harness/kube.js';
import type { NodeWatch } from '../../harness/nodes.js';
import { applyServerSide, cleanUp, describePool, waitImagesOnNode, watchNodes } from './helpers.js';

const NS = 'e2e-discover';
const WL_NS = 'e2e-discover-wl';
const NODE = 'disc-node';
const SEL = 'e2e.prewarm.dev/discover';
const DEDICATED: Taint = { key: 'e2e.prewarm.dev/discover-dedicated', value: 'yes', effect: 'NoSchedule' };
const GATE: Taint = { key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' };
const BASE = 'docker.io/e2e/discover-base:1.0';
const WEB = 'docker.io/e2e/discover-web:1.0';
const DB = 'quay.io/e2e/discover-db:2.0';
const CRON = 'docker.io/e2e/discover-report:3.0';
const GPU = 'docker.io/e2e/discover-gpu:4.0';

const SPEC = `# The pool discover fills: its images are written below, comments and layout kept.
apiVersion: prewarm.dev/v1alpha1
kind: ImageCache
metadata:
  name: discovered
  namespace: ${NS}
spec:
  cacheSpec:
    - pool: dedicated
      nodeSelector:
        ${SEL}: "yes"
      tolerations:
        - key: ${DEDICATED.key}
          operator: Equal
          value: "${DEDICATED.value ?? ''}"
          effect: ${DEDICATED.effect}
      images:
        - ${BASE} # the base image, kept
`;

/** A pod template running `image` (started by the helper's busybox), selecting `pool` and tolerating the dedicated taint. */
function template(app: string, image: string, pool: string): Record<string, unknown> {
  const pod = workloadPod({ name: app, namespace: WL_NS, node: 'unused', helper: HARNESS_HELPER_IMAGE, images: [image] });
  const spec = pod['spec'] as Record<string, unknown>;
  return {
    metadata: { labels: { app } },
    spec: {
      ...spec,
      nodeSelector: { [SEL]: pool },
      tolerations: [{ key: DEDICATED.key, operator: 'Equal', value: DEDICATED.value, effect: DEDICATED.effect }],
    },
  };
}

function workloads(): KubeObject[] {
  const meta = (name: string) => ({ name, namespace: WL_NS });
  const selector = (app: string) => ({ matchLabels: { app } });
  const job = template('report', CRON, 'yes');
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: WL_NS } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta('web'),
      spec: { selector: selector('web'), template: template('web', WEB, 'yes') },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: meta('db'),
      spec: { serviceName: 'db', selector: selector('db'), template: template('db', DB, 'yes') },
    },
    {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: meta('report'),
      // Never due while the test runs: only its template matters.
      spec: {
        schedule: '0 0 1 1 *',
        suspend: true,
        jobTemplate: { spec: { template: { ...job, spec: { ...(job['spec'] as object), restartPolicy: 'Never' } } } },
      },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta('gpu'),
      spec: { selector: selector('gpu'), template: template('gpu', GPU, 'gpu') },
    },
  ] as KubeObject[];
}

async function discover(...args: string[]): Promise<{ code: ExitCode; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['discover', '--from-cluster', ...args], { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

interface CoreEvent {
  reason: string;
  message: string;
}

/** The kubelet's image Events about a pod. */
function podEvents(pod: string): CoreEvent[] {
  const out = kubectl(['-n', WL_NS, 'get', 'events', '--field-selector', `involvedObject.name=${pod}`, '-o', 'json']);
  return (JSON.parse(out) as { items: CoreEvent[] }).items.filter((e) => ['Pulling', 'Pulled', 'Failed'].includes(e.reason));
}

describe('discover --from-cluster on the harness cluster', () => {
  const dir = mkdtempSync(join(tmpdir(), 'prewarm-discover-e2e-'));
  const specFile = join(dir, 'dedicated.yaml');
  let kube: Kube;
  let watch: NodeWatch;
  let pool: PoolImages;

  beforeAll(async () => {
    kubectl(['delete', 'namespace', NS, WL_NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
    writeFileSync(specFile, SPEC);
    for (const o of workloads()) applyServerSide(JSON.stringify(o));
    ({ kube, watch } = await watchNodes(SEL));
  });

  afterAll(async () => {
    await cleanUp({ watch, kube, nodes: [NODE], namespaces: [NS, WL_NS] });
    rmSync(dir, { recursive: true, force: true });
  });

  it('plans the workloads that fit the pool, and reports the one that fits none', async () => {
    const r = await discover('--specs', dir, '-o', 'json');
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    const plan = JSON.parse(r.stdout) as Plan;
    const dedicated = plan.pools.find((p) => p.pool === 'dedicated');
    expect(dedicated?.add.map((a) => [a.canonical, a.workloads])).toEqual([
      [normalize(CRON), [`CronJob/${WL_NS}/report`]],
      [normalize(WEB), [`Deployment/${WL_NS}/web`]],
      // The workloads' init container starts the stand-ins' program: an image they use, too.
      [normalize(HARNESS_HELPER_IMAGE), [`CronJob/${WL_NS}/report`, `Deployment/${WL_NS}/web`, `StatefulSet/${WL_NS}/db`]],
      [normalize(DB), [`StatefulSet/${WL_NS}/db`]],
    ]);
    expect(plan.uncovered.map((u) => [u.workload, u.reasons.map((m) => m.reason)])).toContainEqual([
      `Deployment/${WL_NS}/gpu`,
      [`it selects ${SEL}=gpu, and the pool's nodes have ${SEL}=yes`],
    ]);
    const check = await discover('--specs', dir, '--check');
    expect(check.code, 'the specs lag the workloads').toBe(ExitCode.InvalidInput);
  });

  it('--write edits the spec in place; it synthesizes, and then the specs are in step', async () => {
    const w = await discover('--specs', dir, '--write');
    expect(w.code, w.stderr).toBe(ExitCode.Success);
    const text = readFileSync(specFile, 'utf8');
    expect(text).toContain('# The pool discover fills');
    expect(text).toContain(`- ${BASE} # the base image, kept`);
    for (const image of [WEB, DB, CRON]) expect(text).toContain(image);
    expect(text).not.toContain(GPU);
    const check = await discover('--specs', dir, '--check');
    expect(check.code, check.stdout + check.stderr).toBe(ExitCode.Success);

    const { yaml } = synth([dir]);
    const objects = yamlObjects(yaml);
    const found = poolsOf(objects).find((p) => p.namespace === NS);
    if (found === undefined) throw new Error(`synth output has no pool in ${NS}`);
    pool = found;
    expect(pool.images.map(normalize)).toEqual(expect.arrayContaining([BASE, WEB, DB, CRON].map(normalize)));
    prepareImages(objects);
    const applied = applyServerSide(yaml);
    expect(applied.warnings, applied.stderr).toEqual([]);
  });

  it('a node joins the pool: the workloads start on it with their images already present', async () => {
    expect(pool, 'the previous test synthesized the pool').toBeDefined();
    const t = watch.expect(NODE);
    await addNode(NODE, { labels: { [SEL]: 'yes' }, taints: [DEDICATED, GATE], wait: false });
    const gone = await until(t, (x) => x.taintsGoneAt.has(GATE.key), Date.now() + 300_000);
    expect(gone, `gate taint removed from ${NODE}\n${describePool(pool)}`).toBe(true);
    await waitImagesOnNode(NODE, [WEB, DB, CRON], 10_000);
    for (const app of ['web', 'db']) {
      const pod = await waitFor(
        `${app} Running on ${NODE}`,
        async () => {
          const list = await kube.list(`/api/v1/namespaces/${WL_NS}/pods`, { labelSelector: `app=${app}` });
          return list.items.find((p) => p.spec?.nodeName === NODE && p.status?.phase === 'Running');
        },
        120_000,
        500,
      );
      const events = podEvents(pod.metadata.name);
      const image = app === 'web' ? WEB : DB;
      expect(events.filter((e) => e.reason === 'Pulling').map((e) => e.message)).toEqual([]);
      // "... already present on machine", with "and can be accessed by the pod" where the kubelet
      // checks pull credentials of cached images (KubeletEnsureSecretPulledImages).
      const present = `Container image "${image}" already present on machine`;
      expect(
        events.filter((e) => e.reason === 'Pulled' && e.message.startsWith(present)),
        JSON.stringify(events),
      ).toHaveLength(1);
    }
    // The workload that fits no pool is still waiting: no node of ours selects it.
    const gpu = await kube.list(`/api/v1/namespaces/${WL_NS}/pods`, { labelSelector: 'app=gpu' });
    expect(gpu.items.map((p) => p.spec?.nodeName ?? '')).toEqual(gpu.items.map(() => ''));
  });
});
