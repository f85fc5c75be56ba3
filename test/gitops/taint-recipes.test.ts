/**
 * docs/operations.md's "taint at join" recipes against the real things that read them. The
 * Karpenter recipe, taken out of the Markdown (the block marked `<!-- recipe: karpenter -->`),
 * is applied server-side to Karpenter's own NodePool CRD (sigs.k8s.io/karpenter, fetched by
 * fetch-crds.sh), and its startup taint must be the gate taint synth renders for a default gate:
 * the sidecar's key, tolerated by the pull pods, and the only key the admission policy lets the
 * sidecar remove. A recipe with a misspelt effect is refused, so the check can fail.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
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
        ds['spec'] as { template: { spec: { tolerations: Toleration[]; containers: { env?: { name: string; value?: string }[] }[] } } }
      ).template.spec;
      const keys = pod.containers.flatMap((c) => c.env ?? []).filter((e) => e.name === ENV.gateTaintKey);
      expect(keys.map((e) => e.value)).toEqual([taint.key]);
      expect(
        pod.tolerations.some((t) =>
          tolerates(t, { key: taint.key, ...(taint.value === undefined ? {} : { value: taint.value }), effect: GATE_TAINT_EFFECT }),
        ),
        ds.metadata.name,
      ).toBe(true);
    }
    const policy = objs.find((o) => o.kind === 'ValidatingAdmissionPolicy');
    expect(JSON.stringify(policy)).toContain(`may only remove the gating taints ${taint.key}`);
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
