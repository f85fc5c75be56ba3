import { Chart, Testing } from 'cdk8s';
import { describe, expect, it } from 'vitest';
import { SIDECAR_CONTAINER } from '../../src/contract/names.js';
import { run } from '../../src/cli/main.js';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { synthYaml } from '../../src/synth/app.js';
import { METRICS_PORT_NAME, NETWORK_POLICY } from '../../src/synth/naming.js';
import { NETWORK_POLICY_TYPE, ReconcilerNetworkPolicy } from '../../src/synth/network-policy.js';
import { yamlObjects } from '../../harness/manifests.js';
import { bundleOf } from '../helpers.js';
import { isHolder } from '../../src/contract/roles.js';

const reconciler = { reconciler: { image: 'ghcr.io/prewarm-dev/reconciler:0.1.0' } };
const spec =
  '  cacheSpec:\n  - images: [redis:7, python:3.12, busybox:1.36, nginx:1.27, alpine:3.20]\n    nodeSelector: {pool: gpu}\n  lanes: 3\n';

interface Obj {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec: Record<string, unknown>;
}

interface Rule {
  from: { namespaceSelector?: unknown; podSelector?: unknown; ipBlock?: { cidr: string } }[];
  ports: { protocol: string; port: string }[];
}

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await run(['synth', 'examples', '--stdout', ...args], { stdout: (t) => void out.push(t), stderr: (t) => void err.push(t) });
  return { code, out: out.join(''), err: err.join('') };
}

describe('ReconcilerNetworkPolicy', () => {
  it('defaults: holders accept no connection but the node', () => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'prewarm' });
    new ReconcilerNetworkPolicy(chart, 'np');
    expect(Testing.synth(chart)).toMatchSnapshot();
  });

  it('custom: a scraper by namespace and pod labels, and node CIDRs, to the metrics port only', () => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'prewarm' });
    new ReconcilerNetworkPolicy(chart, 'np', {
      scraperNamespaceLabels: { 'kubernetes.io/metadata.name': 'monitoring' },
      scraperPodLabels: { 'app.kubernetes.io/name': 'prometheus' },
      nodeCidrs: ['10.0.0.0/16', 'fd00::/64', '10.0.0.0/16'],
    });
    const synthesized = Testing.synth(chart) as Obj[];
    expect(synthesized).toMatchSnapshot();
    const [rule] = synthesized[0]?.spec['ingress'] as Rule[];
    expect(rule?.ports).toEqual([{ protocol: 'TCP', port: METRICS_PORT_NAME }]);
    expect(rule?.from).toEqual([
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
        podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
      },
      { ipBlock: { cidr: '10.0.0.0/16' } },
      { ipBlock: { cidr: 'fd00::/64' } },
    ]);
  });
});

describe('synth with networkPolicy', () => {
  const objects = yamlObjects(
    synthYaml(bundleOf(spec), { ...reconciler, networkPolicy: { scraperNamespaceLabels: { team: 'obs' } } }),
  ) as unknown as Obj[];
  const policies = objects.filter((o) => o.kind === NETWORK_POLICY_TYPE.kind);

  it('one NetworkPolicy per namespace, selecting exactly the pods that run the sidecar', () => {
    expect(policies.map((p) => `${p.metadata.namespace ?? ''}/${p.metadata.name}`)).toEqual([`ml/${NETWORK_POLICY}`]);
    const selector = ((policies[0] as Obj).spec['podSelector'] as { matchLabels: Record<string, string> }).matchLabels;
    type Template = { template: { metadata: { labels: Record<string, string> }; spec: { initContainers?: { name: string }[] } } };
    const daemonSets = objects.filter((o) => o.kind === 'DaemonSet');
    const selected = daemonSets.filter((d) =>
      Object.entries(selector).every(([k, v]) => (d.spec as Template).template.metadata.labels[k] === v),
    );
    expect(selected.map((d) => d.metadata.name)).toEqual(daemonSets.filter((d) => isHolder(d.metadata.labels)).map((d) => d.metadata.name));
    for (const d of daemonSets) {
      const runsSidecar = ((d.spec as Template).template.spec.initContainers ?? []).some((c) => c.name === SIDECAR_CONTAINER);
      expect(selected.includes(d)).toBe(runsSidecar);
    }
  });

  it('is off by default, and refused without a reconciler', () => {
    expect(synthYaml(bundleOf(spec), reconciler)).not.toContain('NetworkPolicy');
    expect(() => synthYaml(bundleOf(spec), { networkPolicy: {} })).toThrow(
      'networkPolicy needs a reconciler: without the sidecar there is no port to guard',
    );
  });

  it('the CLI: --network-policy with scraper labels and node CIDRs', async () => {
    const r = await cli([
      '--network-policy',
      '--scraper-namespace-label',
      'kubernetes.io/metadata.name=monitoring',
      '--scraper-pod-label',
      'app.kubernetes.io/name=prometheus',
      '--node-cidr',
      '10.0.0.0/16',
      '--node-cidr',
      'fd00::/64',
    ]);
    expect(r.code).toBe(ExitCode.Success);
    const found = yamlObjects(r.out).filter((o) => o.kind === 'NetworkPolicy') as unknown as Obj[];
    expect(found.length).toBeGreaterThan(0);
    const [rule] = found[0]?.spec['ingress'] as Rule[];
    expect(rule?.from.map((f) => f.ipBlock?.cidr ?? 'scraper')).toEqual(['scraper', '10.0.0.0/16', 'fd00::/64']);
  });

  it.each([
    [
      ['--network-policy', '--no-reconciler'],
      '--network-policy needs the sidecar: without it there is no port to guard (drop --no-reconciler)',
    ],
    [['--scraper-pod-label', 'app=prometheus'], '--scraper-pod-label needs --network-policy'],
    [['--network-policy', '--node-cidr', '10.0.0.0/33'], 'is not a CIDR'],
    [['--network-policy', '--node-cidr', 'example.com/8'], 'is not a CIDR'],
    [['--network-policy', '--scraper-pod-label', 'app'], 'is not a label key=value'],
    [['--network-policy', '--scraper-namespace-label', 'a b=c'], 'is not a valid label'],
  ])('the CLI refuses %j as a usage error', async (args, message) => {
    const r = await cli(args);
    expect(r.code).toBe(ExitCode.Usage);
    expect(r.err).toContain(message);
  });
});
