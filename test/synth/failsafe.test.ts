/**
 * The fail-safe's Deployment and access as synthesis renders them: where it runs (only on nodes
 * that hold the reconciler image), how it is started, what it may do, and that only the sidecar's
 * output has it.
 */
import { Testing } from 'cdk8s';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { FAILSAFE_ACCESS_NAMES, FAILSAFE_NAME } from '../../src/contract/access-names.js';
import { FAILSAFE_DEFAULT_GRACE_SECONDS, FAILSAFE_ENV, FAILSAFE_MODE } from '../../src/contract/failsafe.js';
import { nodeLabelKey } from '../../src/contract/identity.js';
import { synthYaml } from '../../src/synth/app.js';
import { ReconcilerAccess } from '../../src/synth/access.js';
import { failsafeNamespace } from '../../src/synth/charts.js';
import { bundleOf } from '../helpers.js';

const IMAGE = 'ghcr.io/prewarm-dev/reconciler:0.1.0';
const specs = [
  '  cacheSpec:\n  - images: [redis:7]\n    nodeSelector: {pool: gpu}\n  - images: [busybox:1.36]\n',
  '  cacheSpec:\n  - images: [python:3.12]\n    nodeSelector: {pool: cpu}\n',
];

type Doc = { kind: string; metadata: { name: string; namespace?: string }; spec?: Record<string, unknown>; rules?: unknown };
const docs = (yaml: string): Doc[] => parseAllDocuments(yaml).map((d) => d.toJS() as Doc);

interface PodSpec {
  serviceAccountName: string;
  automountServiceAccountToken: boolean;
  tolerations?: unknown;
  affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: unknown[] } } };
  containers: { image: string; imagePullPolicy: string; args: string[]; env: { name: string; value?: string }[] }[];
}
const podSpec = (d: Doc | undefined): PodSpec => (d?.spec as { template: { spec: PodSpec } }).template.spec;

describe('the fail-safe Deployment', () => {
  it('runs one replica of the reconciler image in fail-safe mode, only on nodes some sidecar marked', () => {
    const bundle = bundleOf(...specs);
    const all = docs(synthYaml(bundle, { reconciler: { image: IMAGE } }));
    const deployments = all.filter((d) => d.kind === 'Deployment');
    expect(deployments.map((d) => `${d.metadata.namespace}/${d.metadata.name}`)).toEqual([`ml/${FAILSAFE_NAME}`]);
    expect(deployments[0]?.spec?.['replicas']).toBe(1);
    const pod = podSpec(deployments[0]);
    expect(pod.serviceAccountName).toBe(FAILSAFE_NAME);
    expect(pod.automountServiceAccountToken).toBe(true);
    expect(pod.tolerations).toBeUndefined();
    const [c] = pod.containers;
    expect(c).toMatchObject({ image: IMAGE, imagePullPolicy: 'IfNotPresent', args: [FAILSAFE_MODE] });
    expect(c?.env.find((e) => e.name === FAILSAFE_ENV.graceSeconds)?.value).toBe(String(FAILSAFE_DEFAULT_GRACE_SECONDS));
    // One term per pool (terms are ORed): a node that any pool's sidecar marked holds the image.
    expect(pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms).toEqual(
      bundle.pools
        .map((p) => p.id)
        .sort()
        .map((id) => ({ matchExpressions: [{ key: nodeLabelKey(id), operator: 'In', values: ['warm', 'partial'] }] })),
    );
  });

  it('takes the grace the invocation sets, and refuses one out of range', () => {
    const bundle = bundleOf(...specs);
    const all = docs(synthYaml(bundle, { reconciler: { image: IMAGE, failsafeGraceSeconds: 45 } }));
    const env = podSpec(all.find((d) => d.kind === 'Deployment')).containers[0]?.env;
    expect(env?.find((e) => e.name === FAILSAFE_ENV.graceSeconds)?.value).toBe('45');
    expect(() => synthYaml(bundle, { reconciler: { image: IMAGE, failsafeGraceSeconds: 0 } })).toThrow(
      'Failsafe: graceSeconds must be a whole number of seconds from 1 to 86400, got 0',
    );
  });

  it('is not in --no-reconciler output', () => {
    const all = docs(synthYaml(bundleOf(...specs)));
    expect(all.filter((d) => d.kind === 'Deployment' || d.metadata.name.includes('failsafe'))).toEqual([]);
  });

  it('lives in an owned namespace first, then one every cluster does not have', () => {
    expect(failsafeNamespace(['b', 'a', 'prewarm'], ['prewarm'])).toBe('prewarm');
    expect(failsafeNamespace(['default', 'ml'], [])).toBe('ml');
    expect(failsafeNamespace(['default'], [])).toBe('default');
  });
});

describe('the fail-safe access', () => {
  const objects = (): (Doc & { roleRef?: { name: string }; subjects?: unknown[] })[] => {
    const chart = Testing.chart();
    new ReconcilerAccess(chart, 'access', { namespaces: ['a', 'b'], failsafeNamespace: 'a' });
    return Testing.synth(chart) as Doc[];
  };

  it('grants list and patch of nodes, list of pods in the pool namespaces, create of events in default: nothing else', () => {
    const all = objects();
    const rules = (name: string) => all.find((o) => o.kind === 'ClusterRole' && o.metadata.name === name)?.rules;
    expect(rules(FAILSAFE_ACCESS_NAMES.nodesRole)).toEqual([{ apiGroups: [''], resources: ['nodes'], verbs: ['list', 'patch'] }]);
    expect(rules(FAILSAFE_ACCESS_NAMES.podsRole)).toEqual([{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }]);
    expect(rules(FAILSAFE_ACCESS_NAMES.eventsRole)).toEqual([{ apiGroups: [''], resources: ['events'], verbs: ['create'] }]);
    const bindings = all
      .filter((o) => (o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding') && o.roleRef?.name.includes(':failsafe'))
      .map((o) => `${o.kind} ${o.metadata.namespace ?? '-'} ${o.roleRef?.name ?? ''}`);
    expect(bindings.sort()).toEqual([
      'ClusterRoleBinding - prewarm.dev:failsafe',
      'RoleBinding a prewarm.dev:failsafe-pods',
      'RoleBinding b prewarm.dev:failsafe-pods',
      'RoleBinding default prewarm.dev:failsafe-events',
    ]);
  });

  it('lets the admission policy judge the fail-safe too: any node, but no label or annotation', () => {
    const policy = objects().find((o) => o.kind === 'ValidatingAdmissionPolicy');
    const text = JSON.stringify(policy);
    expect(text).toContain(`'system:serviceaccount:a:${FAILSAFE_NAME}'`);
    expect(text).toContain('variables.failsafe || (variables.tokenNode.size() == 1');
    expect(text).toContain('!variables.failsafe || (variables.newLabels == variables.oldLabels');
  });

  it('refuses a fail-safe namespace that holds no pool', () => {
    const chart = Testing.chart();
    expect(() => new ReconcilerAccess(chart, 'access', { namespaces: ['a'], failsafeNamespace: 'z' })).toThrow(
      'ReconcilerAccess: the fail-safe\'s namespace "z" holds no pool, so it has no pools.json to read',
    );
  });
});
