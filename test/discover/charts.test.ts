/**
 * `prewarm discover` on condensed rendered manifests of real charts (test/fixtures/discover/charts,
 * each naming its chart) against a realistic spec set: a GPU pool with its taint and a CPU pool.
 * The plans are the ones a user of those charts should get.
 */
import { cp, mkdtemp, readFile, rename, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { run } from '../../src/cli/main.js';
import { ExitCode } from '../../src/cli/exit-codes.js';
import type { Plan } from '../../src/discover/plan.js';

const FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../fixtures/discover');
const CHARTS = join(FIXTURES, 'charts');
const SPECS = join(FIXTURES, 'specs');

async function discover(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await run(['discover', ...args], { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

async function plan(...args: string[]): Promise<Plan> {
  const r = await discover(...args, '-o', 'json');
  expect(r.code, r.stderr).toBe(ExitCode.Success);
  return JSON.parse(r.stdout) as Plan;
}

const adds = (p: Plan, pool: string) => p.pools.find((x) => x.pool === pool)?.add.map((a) => a.text) ?? [];

describe('prewarm discover on real charts', () => {
  it('adds serving images to the GPU pool and control planes to the CPU pool; skips DaemonSets and CRs', async () => {
    const p = await plan(CHARTS, '--specs', SPECS);
    expect(adds(p, 'gpu')).toEqual([
      'kserve/sklearnserver:v0.14.0',
      'kserve/storage-initializer:v0.14.0',
      'lmcache/vllm-openai:2025-05-27-v1',
      'vllm/vllm-openai:v0.8.5',
    ]);
    expect(adds(p, 'cpu')).toContain('lmcache/lmstack-router:latest');
    expect(adds(p, 'cpu')).toContain('quay.io/jupyterhub/k8s-hub:4.0.0');
    // A Deployment that tolerates only the control plane's taint has no requirement a CPU node fails.
    expect(adds(p, 'cpu')).toContain('nvcr.io/nvidia/gpu-operator:v24.9.0');
    // Nothing aimed at GPUs lands on the CPU pool.
    expect(adds(p, 'cpu').some((i) => i.includes('vllm-openai') || i.includes('sklearn'))).toBe(false);
    expect(p.skipped.map((s) => s.workload)).toEqual([
      'DaemonSet/gpu-operator/gpu-operator-node-feature-discovery-worker',
      'DaemonSet/jhub/continuous-image-puller',
      'DaemonSet/monitoring/kps-prometheus-node-exporter',
    ]);
    expect(p.others).toEqual({ ClusterPolicy: 1, ConfigMap: 1, InferenceService: 1, Prometheus: 1, Service: 1 });
    // The image the GPU pool already holds (busybox) is not added again.
    expect(adds(p, 'gpu')).not.toContain('docker.io/library/busybox:1.36');
  });

  it('reports partial fits and workloads no pool can run, with reasons', async () => {
    const p = await plan(CHARTS, '--specs', SPECS);
    expect(p.partial).toContainEqual({
      workload: 'Deployment/llm/vllm-mistral-deployment-vllm',
      pool: 'gpu',
      reason: "it selects nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3, which the pool's nodeSelector does not fix",
    });
    expect(p.uncovered).toEqual([
      {
        workload: 'Deployment/llm/vllm-phi-deployment-vllm',
        reasons: [
          {
            workload: 'Deployment/llm/vllm-phi-deployment-vllm',
            pool: 'cpu',
            reason: "it selects node.kubernetes.io/pool=gpu, and the pool's nodes have node.kubernetes.io/pool=cpu",
          },
          {
            workload: 'Deployment/llm/vllm-phi-deployment-vllm',
            pool: 'gpu',
            reason: "it does not tolerate the taint nvidia.com/gpu:NoSchedule that the pool's nodes carry",
          },
        ],
      },
    ]);
    const withPartial = await plan(CHARTS, '--specs', SPECS, '--partial');
    expect(adds(withPartial, 'gpu')).toContain('docker.io/library/busybox:1.36'.replace(/.*/, 'vllm/vllm-openai:v0.8.5'));
    expect(withPartial.pools.find((x) => x.pool === 'cpu')?.add.map((a) => a.text)).toContain('kserve/sklearnserver:v0.14.0');
  });

  it('brings DaemonSets back with --include-daemonsets, each only where it fits', async () => {
    const p = await plan(CHARTS, '--specs', SPECS, '--include-daemonsets');
    // The NFD worker tolerates the GPU taint and asks for no label: every GPU node can run it.
    expect(adds(p, 'gpu')).toContain('registry.k8s.io/nfd/node-feature-discovery:v0.16.6');
    expect(p.skipped).toEqual([]);
  });

  it('prunes only images no workload that can run on the pool uses, never one marked prewarm:keep', async () => {
    const p = await plan(CHARTS, '--specs', SPECS, '--prune');
    const gpu = p.pools.find((x) => x.pool === 'gpu');
    expect(gpu?.remove).toEqual([]);
    expect(gpu?.kept.map((k) => k.text)).toEqual(['nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04']);
    const alone = await plan(join(CHARTS, 'kserve.yaml'), '--specs', SPECS, '--prune');
    expect(alone.pools.find((x) => x.pool === 'gpu')?.remove.map((r) => r.text)).toEqual(['docker.io/library/busybox:1.36']);
  });

  it('gives the same plan whatever the order and names of the input files', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-discover-'));
    await cp(CHARTS, join(dir, 'charts'), { recursive: true });
    await rename(join(dir, 'charts', 'jupyterhub.yaml'), join(dir, 'charts', '0-first.json.yaml'));
    const a = await discover(CHARTS, '--specs', SPECS);
    const b = await discover(join(dir, 'charts', 'kserve.yaml'), join(dir, 'charts'), '--specs', SPECS);
    expect(b.stdout.replaceAll(join(dir, 'charts'), CHARTS)).toBe(a.stdout);
  });
});

describe('prewarm discover --check and --write', () => {
  async function copy() {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-discover-'));
    await cp(SPECS, join(dir, 'specs'), { recursive: true });
    return join(dir, 'specs');
  }

  it('--check exits 1 and prints the plan when the specs lag; --write edits in place, keeping comments; then --check passes', async () => {
    const specs = await copy();
    const before = await readFile(join(specs, 'pools.yaml'), 'utf8');
    const check = await discover(CHARTS, '--specs', specs, '--check');
    expect(check.code).toBe(ExitCode.InvalidInput);
    expect(check.stdout).toContain('+ vllm/vllm-openai:v0.8.5');
    expect(await readFile(join(specs, 'pools.yaml'), 'utf8')).toBe(before);
    const write = await discover(CHARTS, '--specs', specs, '--write');
    expect(write.code, write.stderr).toBe(ExitCode.Success);
    const after = await readFile(join(specs, 'pools.yaml'), 'utf8');
    expect(after).toContain(
      '        - nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04 # prewarm:keep (driver smoke test)\n' +
        '        - docker.io/library/busybox:1.36\n' +
        '        - kserve/sklearnserver:v0.14.0\n' +
        '        - kserve/storage-initializer:v0.14.0\n' +
        '        - lmcache/vllm-openai:2025-05-27-v1\n' +
        '        - vllm/vllm-openai:v0.8.5\n',
    );
    expect(after).toContain('      images: [quay.io/prometheus/node-exporter:v1.8.2, kserve/kserve-controller:v0.14.0, ');
    expect(after.startsWith('# A realistic spec set')).toBe(true);
    expect((await discover(CHARTS, '--specs', specs, '--check')).code).toBe(ExitCode.Success);
  });

  it('--write --prune removes a stale image line and keeps the marked one', async () => {
    const specs = await copy();
    const r = await discover(join(CHARTS, 'kserve.yaml'), '--specs', specs, '--write', '--prune');
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    const after = await readFile(join(specs, 'pools.yaml'), 'utf8');
    expect(after).not.toContain('busybox');
    expect(after).toContain('cuda:12.4.1-base-ubuntu22.04 # prewarm:keep');
  });

  it('writes nothing when the edited specs would not synthesize', async () => {
    const specs = await copy();
    // Removing the only image of the CPU entry would leave it empty.
    const before = await readFile(join(specs, 'pools.yaml'), 'utf8');
    const manifests = await mkdtemp(join(tmpdir(), 'prewarm-discover-'));
    await writeFile(join(manifests, 'none.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n');
    const r = await discover(manifests, '--specs', specs, '--write', '--prune');
    expect(r.code).toBe(ExitCode.InvalidInput);
    expect(await readFile(join(specs, 'pools.yaml'), 'utf8')).toBe(before);
  });
});

describe('prewarm discover, hostile and invalid manifests', () => {
  it('names file, document, line and field path of a bad image, and writes nothing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-discover-'));
    await writeFile(
      join(dir, 'bad.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n      containers:\n        - name: c\n          image: "Not An Image"\n',
    );
    const r = await discover(dir, '--specs', SPECS, '--write');
    expect(r.code).toBe(ExitCode.InvalidInput);
    expect(r.stderr).toContain(`${join(dir, 'bad.yaml')}:13:18: error: document 2: spec.template.spec.containers[0].image:`);
  });

  it('refuses a link that leaves the named folders, without reading it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-discover-'));
    await symlink('/etc/passwd', join(dir, 'evil.yaml'));
    const r = await discover(dir, '--specs', SPECS);
    expect(r.code).toBe(ExitCode.InvalidInput);
    expect(r.stderr).toContain('is a link whose target is outside the spec roots');
    expect(r.stderr).not.toContain('root:');
  });

  it('refuses an alias bomb and a document nested too deep, quickly', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-discover-'));
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x, x]',
      ...Array.from(
        { length: 9 },
        (_, i) =>
          `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10)
            .fill(`*${String.fromCharCode(97 + i)}`)
            .join(', ')}]`,
      ),
    ];
    await writeFile(
      join(dir, 'bomb.yaml'),
      `apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nx:\n${bomb.map((l) => `  ${l}`).join('\n')}\nspec:\n  template:\n    spec:\n      containers: *j\n`,
    );
    await writeFile(join(dir, 'deep.yaml'), `${'['.repeat(5000)}${']'.repeat(5000)}\n`);
    const r = await discover(dir, '--specs', SPECS);
    expect(r.code).toBe(ExitCode.InvalidInput);
    expect(r.stderr).toContain('too deep');
    expect(r.stderr).toContain('spec.template.spec.containers[0]: must be a mapping, got a list');
  });

  it('warns, with file, line and field path, of an operator Kubernetes refuses, and reads it as matching nothing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-discover-'));
    await writeFile(
      join(dir, 'ops.yaml'),
      [
        'apiVersion: v1',
        'kind: Pod',
        'metadata: {name: p, namespace: web}',
        'spec:',
        '  tolerations: [{key: a, operator: Bogus}]',
        '  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Near}]}]}}}',
        '  containers: [{name: c, image: "reg.invalid/ops:1"}]',
        '',
      ].join('\n'),
    );
    const r = await discover(dir, '--specs', SPECS, '-o', 'json');
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    const file = join(dir, 'ops.yaml');
    expect(r.stderr.split('\n').filter((l) => l.includes('warning'))).toEqual([
      `${file}:5:36: warning: document 1: spec.tolerations[0].operator: "Bogus" is not an operator Kubernetes accepts (Equal, Exists), so it tolerates nothing here`,
      `${file}:6:137: warning: document 1: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: "Near" is not an operator Kubernetes accepts (In, NotIn, Exists, DoesNotExist, Gt, Lt), so its term matches no node`,
    ]);
    const p = JSON.parse(r.stdout) as Plan;
    expect(p.uncovered.map((u) => u.workload)).toEqual(['Pod/web/p']);
  });

  it('needs manifests or --from-cluster, one of the two', async () => {
    expect((await discover('--specs', SPECS)).code).toBe(ExitCode.Usage);
  });
});
