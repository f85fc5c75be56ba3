import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { poolEntryOf } from '../../src/synth/charts.js';
import { parsePoolsFile, renderPoolsFile } from '../../src/contract/pools-file.js';
import { createApp, synthYaml } from '../../src/synth/app.js';
import { bundleOf } from '../helpers.js';

const reconciler = { reconciler: { image: 'ghcr.io/prewarm-dev/reconciler:0.1.0' } };
const specs = [
  '  cacheSpec:\n  - images: [redis:7, python:3.12]\n    nodeSelector: {pool: gpu}\n  - images: [busybox:1.36]\n',
  '  cacheSpec:\n  - images: [redis:7]\n    nodeSelector: {pool: gpu}\n  imagePullSecrets: [{name: s}]\n',
];

function docs(yaml: string) {
  return parseAllDocuments(yaml).map((d) => d.toJS());
}

describe('synthYaml', () => {
  it('is byte-identical whatever the order of the specs', () => {
    const forward = synthYaml(bundleOf(...specs), reconciler);
    const backward = synthYaml(bundleOf(...[...specs].reverse()), reconciler);
    expect(backward).toBe(forward);
  });

  it('puts cluster-scoped objects in a chart without a namespace, first', () => {
    const app = createApp(bundleOf(...specs), reconciler);
    const [cluster, ...rest] = app.charts;
    expect(cluster?.namespace).toBeUndefined();
    const namespace = cluster?.toJson().find((o: { kind: string }) => o.kind === 'Namespace');
    expect(namespace.metadata).not.toHaveProperty('namespace');
    expect(namespace.metadata.labels['pod-security.kubernetes.io/enforce']).toBe('restricted');
    expect(rest.map((c) => c.namespace)).toEqual(['ml']);
  });

  it('never emits ${, timestamps or GitOps tracking labels', () => {
    const yaml = synthYaml(bundleOf(...specs), reconciler);
    expect(yaml).not.toContain('${');
    expect(yaml).not.toMatch(/creationTimestamp|argocd\.argoproj\.io|kustomize\.toolkit\.fluxcd\.io|app\.kubernetes\.io\/instance/);
    expect(yaml).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);
  });

  it('emits one DaemonSet per pool and only valid names', () => {
    const all = docs(synthYaml(bundleOf(...specs), reconciler));
    const daemonSets = all.filter((d) => d.kind === 'DaemonSet');
    expect(daemonSets).toHaveLength(2);
    for (const o of all) {
      // RBAC names are path segments and may hold a colon; everything else is a DNS name.
      const pattern = o.kind.startsWith('ClusterRole') ? /^[a-z0-9]([-a-z0-9.:]{0,61}[a-z0-9])?$/ : /^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$/;
      expect(o.metadata.name).toMatch(pattern);
    }
  });

  it('writes every pool into each namespace pools file, sorted, for the sidecars', () => {
    const bundle = bundleOf(...specs);
    const file = parsePoolsFile(renderPoolsFile(bundle.pools.map(poolEntryOf)));
    expect(file.pools.map((p) => p.id)).toEqual([...file.pools.map((p) => p.id)].sort());
    expect(file.pools.find((p) => p.placement.nodeSelector['pool'] === 'gpu')).toMatchObject({ namespace: 'ml', gateTaintKey: 'prewarm.dev/warming' });
  });

  it('emits the sidecar access objects only with the sidecar, cluster-scoped ones without a namespace', () => {
    const all = docs(synthYaml(bundleOf(...specs), reconciler));
    for (const kind of ['ClusterRole', 'ClusterRoleBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding', 'Namespace']) {
      for (const o of all.filter((d) => d.kind === kind)) expect(o.metadata.namespace).toBeUndefined();
    }
    expect(all.filter((d) => d.kind === 'ServiceAccount').map((d) => d.metadata.namespace)).toEqual(['ml']);
  });

  it('omits the sidecar, its ServiceAccount and ConfigMap when asked', () => {
    const kinds = docs(synthYaml(bundleOf(...specs))).map((d) => d.kind);
    expect(kinds).toEqual(['Namespace', 'DaemonSet', 'DaemonSet']);
  });
});
