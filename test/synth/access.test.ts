import { App, Chart, Testing } from 'cdk8s';
import { describe, expect, it } from 'vitest';
import { ReconcilerAccess, type ReconcilerAccessProps } from '../../src/synth/access.js';
import { ACCESS_NAMES } from '../../src/contract/access-names.js';

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; [k: string]: unknown };

function synth(props: ReconcilerAccessProps): Obj[] {
  const chart = Testing.chart();
  new ReconcilerAccess(chart, 'access', props);
  return Testing.synth(chart) as Obj[];
}

const byKind = (objs: Obj[], kind: string): Obj[] => objs.filter((o) => o.kind === kind);
const CLUSTER_SCOPED = new Set(['ClusterRole', 'ClusterRoleBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);

describe('ReconcilerAccess', () => {
  it('defaults', () => {
    expect(synth({ namespaces: ['prewarm'] })).toMatchSnapshot();
  });

  it('custom', () => {
    expect(
      synth({
        namespaces: ['team-b', 'team-a', 'team-b'],
        serviceAccountName: 'warmer',
        gateTaintKeys: ['example.com/cold', 'prewarm.dev/warming'],
        requireNodeClaim: false,
      }),
    ).toMatchSnapshot();
  });

  it('grants exactly the calls the sidecar makes: no wildcards, no secrets, lists of pods only', () => {
    const objs = synth({ namespaces: ['a', 'b'] });
    const rules = byKind(objs, 'ClusterRole').flatMap(
      (r) => (r as unknown as { rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[] }).rules,
    );
    expect(rules).toEqual([
      { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'patch'] },
      // list: the pool's pods on the sidecar's node (holder and burst pullers); bound per namespace.
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create'] },
    ]);
    const text = JSON.stringify(rules);
    expect(text).not.toContain('*');
    expect(text).not.toContain('secrets');
    expect(rules.filter((r) => r.verbs.includes('list')).map((r) => r.resources)).toEqual([['pods']]);
  });

  it('binds nodes cluster-wide and pods/events only in the pool namespaces', () => {
    const objs = synth({ namespaces: ['b', 'a'] });
    const crb = byKind(objs, 'ClusterRoleBinding');
    expect(crb).toHaveLength(1);
    expect(crb[0]).toMatchObject({
      roleRef: { kind: 'ClusterRole', name: ACCESS_NAMES.nodesRole },
      subjects: [
        { kind: 'ServiceAccount', name: 'prewarm-reconciler', namespace: 'a' },
        { kind: 'ServiceAccount', name: 'prewarm-reconciler', namespace: 'b' },
      ],
    });
    const rbs = byKind(objs, 'RoleBinding');
    expect(rbs.map((r) => `${r.metadata.namespace}/${r.metadata.name}`)).toEqual([
      'a/prewarm-reconciler',
      'b/prewarm-reconciler',
      'default/prewarm-reconciler-events',
    ]);
    for (const rb of rbs.slice(0, 2)) expect(rb).toMatchObject({ roleRef: { kind: 'ClusterRole', name: ACCESS_NAMES.podsRole } });
    // Events about Nodes must be in "default": only there may the sidecars create them.
    expect(rbs[2]).toMatchObject({
      roleRef: { kind: 'ClusterRole', name: ACCESS_NAMES.eventsRole },
      subjects: [{ namespace: 'a' }, { namespace: 'b' }],
    });
    expect(byKind(objs, 'ServiceAccount').map((s) => `${s.metadata.namespace}/${s.metadata.name}`)).toEqual([
      'a/prewarm-reconciler',
      'b/prewarm-reconciler',
    ]);
  });

  it('keeps cluster-scoped objects namespace-less and namespaced ones explicit', () => {
    for (const o of synth({ namespaces: ['x'] })) {
      if (CLUSTER_SCOPED.has(o.kind)) expect(o.metadata.namespace).toBeUndefined();
      else expect(['x', 'default']).toContain(o.metadata.namespace);
    }
  });

  it('admission policy: v1, fail closed, matches only the sidecars, checks node claim, prefixes and taint removal', () => {
    const objs = synth({ namespaces: ['a', 'b'], gateTaintKeys: ['prewarm.dev/warming', 'example.com/cold'] });
    const [vap] = byKind(objs, 'ValidatingAdmissionPolicy') as unknown as {
      apiVersion: string;
      spec: {
        failurePolicy: string;
        matchConstraints: unknown;
        matchConditions: { expression: string }[];
        validations: { expression: string }[];
      };
    }[];
    expect(vap?.apiVersion).toBe('admissionregistration.k8s.io/v1');
    expect(vap?.spec.failurePolicy).toBe('Fail');
    expect(vap?.spec.matchConstraints).toEqual({
      resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['nodes'] }],
    });
    expect(vap?.spec.matchConditions[0]?.expression).toBe(
      "request.userInfo.username in ['system:serviceaccount:a:prewarm-reconciler', 'system:serviceaccount:b:prewarm-reconciler']",
    );
    const ex = vap?.spec.validations.map((v) => v.expression) ?? [];
    expect(ex[0]).toBe('variables.tokenNode.size() == 1 && variables.tokenNode[0] == object.metadata.name');
    expect(ex[1]).toContain("k.startsWith('prewarm.dev/')");
    expect(ex[2]).toContain("k.startsWith('status.prewarm.dev/')");
    expect(ex[3]).toContain("o.key in ['example.com/cold', 'prewarm.dev/warming']");
    const [binding] = byKind(objs, 'ValidatingAdmissionPolicyBinding');
    expect(binding).toMatchObject({
      metadata: { name: ACCESS_NAMES.policy },
      spec: { policyName: ACCESS_NAMES.policy, validationActions: ['Deny'] },
    });
  });

  it('drops the node-claim check when asked, and the ServiceAccounts when another construct owns them', () => {
    const objs = synth({ namespaces: ['a'], requireNodeClaim: false, createServiceAccounts: false });
    const [vap] = byKind(objs, 'ValidatingAdmissionPolicy') as unknown as { spec: { validations: { expression: string }[] } }[];
    expect(vap?.spec.validations.some((v) => v.expression.includes('tokenNode'))).toBe(false);
    expect(byKind(objs, 'ServiceAccount')).toEqual([]);
  });

  it.each([
    [{ namespaces: [] }, 'ReconcilerAccess: namespaces must not be empty'],
    [{ namespaces: ['Bad_NS'] }, 'ReconcilerAccess: namespace "Bad_NS" is not a valid DNS label'],
    [{ namespaces: ['a'], serviceAccountName: 'No' }, 'ReconcilerAccess: serviceAccountName "No" is not a valid DNS subdomain'],
    [{ namespaces: ['a'], gateTaintKeys: [] }, 'ReconcilerAccess: gateTaintKeys must not be empty'],
    [{ namespaces: ['a'], gateTaintKeys: ['bad key'] }, 'ReconcilerAccess: gate taint key "bad key" is not a valid qualified name'],
    [
      { namespaces: ['a'], gateTaintKeys: ['node-role.kubernetes.io/control-plane'] },
      'ReconcilerAccess: gate taint key "node-role.kubernetes.io/control-plane" is a taint Kubernetes itself sets and lifts',
    ],
  ])('rejects %j', (props, msg) => {
    expect(() => synth(props)).toThrow(msg);
  });

  it('grants patch pods only where pools refresh, narrowed by a policy to a digest on the own holder pod', () => {
    expect(synth({ namespaces: ['a', 'b'] }).filter((o) => o.metadata.name.includes('refresh'))).toEqual([]);
    const objs = synth({ namespaces: ['a', 'b'], refreshNamespaces: ['b'] });
    const role = byKind(objs, 'ClusterRole').find((r) => r.metadata.name === ACCESS_NAMES.refreshRole);
    expect(role).toMatchObject({ rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['patch'] }] });
    const bindings = byKind(objs, 'RoleBinding').filter((b) => b.metadata.name === ACCESS_NAMES.refreshRole);
    expect(bindings.map((b) => b.metadata.namespace)).toEqual(['b']);
    const policy = byKind(objs, 'ValidatingAdmissionPolicy').find((p) => p.metadata.name === ACCESS_NAMES.refreshPolicy) as unknown as {
      spec: {
        matchConstraints: { resourceRules: { operations: string[]; resources: string[] }[] };
        matchConditions: { expression: string }[];
        validations: { expression: string; message?: string }[];
      };
    };
    expect(policy.spec.matchConstraints.resourceRules).toEqual([
      { apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['pods'] },
    ]);
    expect(policy.spec.matchConditions[0]?.expression).toBe("request.userInfo.username in ['system:serviceaccount:b:prewarm-reconciler']");
    const expressions = policy.spec.validations.map((v) => v.expression).join('\n');
    expect(expressions).toContain('variables.tokenPod[0] == object.metadata.name');
    expect(expressions).toContain("'prewarm.dev/pool' in oldObject.metadata.labels");
    expect(expressions).toContain("c.image.matches('^[^@]+@sha256:[0-9a-f]{64}$')");
    expect(() => synth({ namespaces: ['a'], refreshNamespaces: ['c'] })).toThrow(
      'ReconcilerAccess: refresh namespace "c" is not one of namespaces',
    );
  });

  it('confines pod patches to the own pod even where the node claim is not required', () => {
    const refreshPolicy = (requireNodeClaim: boolean): string =>
      (
        byKind(synth({ namespaces: ['a'], refreshNamespaces: ['a'], requireNodeClaim }), 'ValidatingAdmissionPolicy').find(
          (p) => p.metadata.name === ACCESS_NAMES.refreshPolicy,
        ) as unknown as { spec: { validations: { expression: string }[] } }
      ).spec.validations[0]?.expression ?? '';
    expect(refreshPolicy(false)).toBe('variables.tokenPod.size() == 1 && variables.tokenPod[0] == object.metadata.name');
    expect(refreshPolicy(true)).toContain('variables.tokenPod[0] == object.metadata.name');
    expect(refreshPolicy(true)).toContain('variables.tokenNode[0] == object.spec.nodeName');
  });

  it('refuses a chart with a namespace (it would stamp it onto cluster-scoped objects)', () => {
    const app = new App({ outdir: '/tmp/prewarm-access-test-unused' });
    const chart = new Chart(app, 'c', { namespace: 'oops' });
    new ReconcilerAccess(chart, 'access', { namespaces: ['a'] });
    expect(() => app.synth()).toThrow(
      'ReconcilerAccess must be placed in a chart without a namespace (found "oops"): it emits cluster-scoped objects',
    );
  });

  it('is deterministic', () => {
    expect(JSON.stringify(synth({ namespaces: ['b', 'a'] }))).toBe(JSON.stringify(synth({ namespaces: ['a', 'b'] })));
  });
});
