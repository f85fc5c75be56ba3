/**
 * docs/operations.md's "taint at join" recipes against the real things that read them. The
 * Karpenter recipe, taken out of the Markdown (the block marked `<!-- recipe: karpenter -->`),
 * is applied server-side to Karpenter's own NodePool CRD (sigs.k8s.io/karpenter, fetched by
 * fetch-crds.sh), and its startup taint must be the gate taint synth renders for a default gate:
 * the sidecar's key, tolerated by the pull pods, and the only key the admission policy lets the
 * sidecar remove. A recipe with a misspelt effect is refused, so the check can fail.
 *
 * The other recipes have no CRD: the kubelet's file is checked against the Go types of its
 * configuration (k8s.io/kubelet, fetched by fetch-crds.sh) and its taint against the apiserver's
 * own Node validation, which is what the kubelet's registration meets; the Cluster Autoscaler's
 * synth invocation and spec fragment against the built CLI. The managed node groups' rows are
 * provider CLI flags: only their taint text is checked. That the kubelet really registers with
 * the taint is test/e2e/gating.test.ts's to show.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { REPO_DIR } from '../../harness/cluster/config.js';
import type { RunResult } from '../../harness/cluster/sh.js';
import { yamlObjects } from '../../harness/manifests.js';
import { GATE_TAINT_EFFECT } from '../../src/contract/gate-key.js';
import { DEFAULT_GATE_TAINT_KEY, ENV } from '../../src/contract/names.js';
import { tolerates, type Toleration } from '../../src/contract/placement.js';
import { docBlock } from '../helpers.js';
import { CLI, installCrds, kubectlOf, ok, run, warnings } from './helpers.js';

const kubeconfig = inject('kubeconfig');
const kubectl = kubectlOf(kubeconfig);
const crdDir = inject('crdDir');
const CRD_FILE = 'karpenter.sh_nodepools.yaml';
const KARPENTER_VERSION = 'v1.15.0';

interface Taint {
  key: string;
  value?: string;
  effect: string;
}

const applyDry = (yaml: string): RunResult => kubectl(['apply', '--server-side', '--dry-run=server', '--validate=strict', '-f', '-'], yaml);

const operations = readFileSync(join(REPO_DIR, 'docs/operations.md'), 'utf8');
const recipe = docBlock(operations, 'karpenter');

/** The one startup taint of the recipe. */
function startupTaint(): Taint {
  const np = parse(recipe) as { spec: { template: { spec: { startupTaints: Taint[] } } } };
  const taints = np.spec.template.spec.startupTaints;
  expect(taints).toHaveLength(1);
  return taints[0]!;
}

describe('the Karpenter recipe of docs/operations.md', () => {
  beforeAll(() => {
    installCrds(kubectl, [join(crdDir, CRD_FILE)]);
  });

  it('the CRD is the pinned Karpenter release', () => {
    const crd = readFileSync(join(crdDir, CRD_FILE), 'utf8');
    expect(crd).toContain('kind: NodePool');
    expect(crd).toContain('startupTaints:');
    expect(readFileSync(join(REPO_DIR, 'test/gitops/fetch-crds.sh'), 'utf8')).toContain(`KARPENTER=${KARPENTER_VERSION}\n`);
    expect(crdDir).toContain(`-karpenter${KARPENTER_VERSION}`);
  });

  it('applies to the NodePool CRD as written, with strict field validation and no warnings', () => {
    const dry = ok(applyDry(recipe));
    expect(warnings(dry)).toEqual([]);
    const r = ok(kubectl(['apply', '--server-side', '--validate=strict', '-f', '-'], recipe));
    expect(r.stdout).toMatch(/nodepool\.karpenter\.sh\/gpu serverside-applied/);
    const live = JSON.parse(ok(kubectl(['get', 'nodepool', 'gpu', '-o', 'json'])).stdout) as {
      spec: { template: { spec: { startupTaints: Taint[]; taints?: Taint[] } } };
    };
    expect(live.spec.template.spec.startupTaints).toEqual([startupTaint()]);
    // The gate is a startup taint only: under `taints` Karpenter would never launch for workloads.
    expect(live.spec.template.spec.taints ?? []).toEqual([]);
  });

  it('its startup taint is the gate synth renders for a default gate', () => {
    const taint = startupTaint();
    expect(taint.key).toBe(DEFAULT_GATE_TAINT_KEY);
    expect(taint.effect).toBe(GATE_TAINT_EFFECT);
    // examples/ml/gpu-inference.yaml gates its pool with the default key.
    const s = run(['node', CLI, 'synth', 'examples/ml/gpu-inference.yaml', '--stdout']);
    expect(s.code, s.stderr).toBe(0);
    const objs = yamlObjects(s.stdout);
    const holders = objs.filter((o) => o.kind === 'DaemonSet' && o.metadata.labels?.['prewarm.dev/pool'] !== undefined);
    expect(holders.length).toBeGreaterThan(0);
    for (const ds of holders) {
      const pod = (
        ds['spec'] as {
          template: {
            spec: {
              tolerations: Toleration[];
              initContainers?: { env?: { name: string; value?: string }[] }[];
              containers: { env?: { name: string; value?: string }[] }[];
            };
          };
        }
      ).template.spec;
      // The sidecar is a native sidecar: an init container.
      const keys = [...(pod.initContainers ?? []), ...pod.containers]
        .flatMap((c) => c.env ?? [])
        .filter((e) => e.name === ENV.gateTaintKey);
      expect(keys.map((e) => e.value)).toEqual([taint.key]);
      expect(
        pod.tolerations.some((t) =>
          tolerates(t, { key: taint.key, ...(taint.value === undefined ? {} : { value: taint.value }), effect: GATE_TAINT_EFFECT }),
        ),
        ds.metadata.name,
      ).toBe(true);
    }
    const policies = objs.filter((o) => o.kind === 'ValidatingAdmissionPolicy');
    expect(policies.some((p) => JSON.stringify(p).includes(`may only remove the gating taints ${taint.key}`))).toBe(true);
  });

  it('a recipe with a misspelt effect, or the taint without a key, is refused by the CRD', () => {
    const typo = recipe.replace('effect: NoSchedule}', 'effect: NoSchedul}');
    expect(typo).not.toBe(recipe);
    const a = applyDry(typo);
    expect(a.code).not.toBe(0);
    expect(a.stderr).toMatch(/spec\.template\.spec\.startupTaints\[0\]\.effect: Unsupported value: "NoSchedul"/);
    const keyless = recipe.replace(`key: ${DEFAULT_GATE_TAINT_KEY}, `, '');
    expect(keyless).not.toBe(recipe);
    const b = applyDry(keyless);
    expect(b.code).not.toBe(0);
    expect(b.stderr).toMatch(/startupTaints\[0\]\.key: Required value/);
  });
});

/** `KEY=VALUE:EFFECT`, as the kubelet flag and the providers' CLIs spell a taint. */
function flagTaints(text: string): Taint[] {
  return [...text.matchAll(/(?:^|[\s=])([a-z0-9.-]+\/[A-Za-z0-9_.-]+)=([^:\s]*):([A-Za-z]+)/g)].map((m) => ({
    key: m[1]!,
    value: m[2]!,
    effect: m[3]!,
  }));
}

describe('the kubelet recipe of docs/operations.md', () => {
  const config = parse(docBlock(operations, 'kubelet')) as Record<string, unknown> & { registerWithTaints: Taint[] };
  const gate: Taint = { key: DEFAULT_GATE_TAINT_KEY, value: 'true', effect: GATE_TAINT_EFFECT };

  it('is a KubeletConfiguration whose every field is one of k8s.io/kubelet config/v1beta1', () => {
    expect(config['apiVersion']).toBe('kubelet.config.k8s.io/v1beta1');
    expect(config['kind']).toBe('KubeletConfiguration');
    const types = readFileSync(join(crdDir, 'kubelet-config-v1beta1-types.go'), 'utf8');
    const struct = /^type KubeletConfiguration struct \{\n([\s\S]*?)^\}/m.exec(types)?.[1] ?? '';
    const fields = new Set([...struct.matchAll(/json:"([^,"]+)/g)].map((m) => m[1]!));
    expect(fields.has('registerWithTaints')).toBe(true);
    // The Go struct embeds metav1.TypeMeta inline for these two.
    for (const k of Object.keys(config).filter((k) => k !== 'apiVersion' && k !== 'kind')) expect(fields.has(k), k).toBe(true);
    expect(/RegisterWithTaints \[\]v1\.Taint `json:"registerWithTaints/.test(types)).toBe(true);
  });

  it('registers the gate taint, as the flag form does', () => {
    expect(config.registerWithTaints).toEqual([gate]);
    expect(flagTaints(docBlock(operations, 'kubelet-flag'))).toEqual([gate]);
  });

  it("its taint passes the apiserver's Node validation, which a kubelet's registration meets; a misspelt effect does not", () => {
    const node = (taints: unknown[]) => JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'recipe' }, spec: { taints } });
    const r = ok(kubectl(['create', '--dry-run=server', '--validate=strict', '-f', '-'], node(config.registerWithTaints)));
    expect(warnings(r)).toEqual([]);
    const bad = kubectl(['create', '--dry-run=server', '-f', '-'], node([{ ...gate, effect: 'NoSchedul' }]));
    expect(bad.code).not.toBe(0);
    // (the apiserver's Node validation names the field metadata.taints)
    expect(bad.stderr).toMatch(/taints\[0\]\.effect: Unsupported value: "NoSchedul"/);
  });

  it("the managed node groups' CLI flags name the gate taint", () => {
    const section = operations.slice(operations.indexOf('**Managed node groups**'), operations.indexOf('**The kubelet directly**'));
    const taints = flagTaints(section);
    expect(taints.length).toBe(2);
    for (const t of taints) expect(t).toEqual(gate);
  });
});

describe('the Cluster Autoscaler recipe of docs/operations.md', () => {
  const invocation = docBlock(operations, 'cluster-autoscaler-synth');
  const allowance = /--allow-gate-key (\S+)/.exec(invocation)?.[1] ?? '';
  const fragment = parse(docBlock(operations, 'cluster-autoscaler-spec')) as { spec: { gate: { taintKey: string } } };
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'prewarm-ca-recipe-'));
    // examples/ml/gpu-inference.yaml with the recipe's gate put in.
    const spec = parse(readFileSync(join(REPO_DIR, 'examples/ml/gpu-inference.yaml'), 'utf8')) as { spec: Record<string, unknown> };
    spec.spec['gate'] = { ...(spec.spec['gate'] as object), ...fragment.spec.gate };
    writeFileSync(join(dir, 'spec.yaml'), stringify(spec));
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("gates on a start-up taint of the autoscaler's prefix, which the invocation allows", () => {
    expect(allowance).toBe('startup-taint.cluster-autoscaler.kubernetes.io/');
    expect(fragment.spec.gate.taintKey.startsWith(allowance)).toBe(true);
    expect(invocation).toContain(`PREWARM_PLUGIN_ALLOW_GATE_KEYS=${allowance}`);
  });

  it('synthesizes with the allowance, the sidecar gating on that key; without it synth refuses', () => {
    const s = run(['node', CLI, 'synth', dir, '--stdout', '--allow-gate-key', allowance]);
    expect(s.code, s.stderr).toBe(0);
    const env = yamlObjects(s.stdout)
      .filter((o) => o.kind === 'DaemonSet')
      .flatMap((o) => JSON.stringify(o).match(new RegExp(`"name":"${ENV.gateTaintKey}","value":"[^"]*"`, 'g')) ?? []);
    expect(env.length).toBeGreaterThan(0);
    for (const e of env) expect(e).toContain(`"value":"${fragment.spec.gate.taintKey}"`);
    const refused = run(['node', CLI, 'synth', dir, '--stdout']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`gate taint key "${fragment.spec.gate.taintKey}" is under kubernetes.io`);
  });
});
