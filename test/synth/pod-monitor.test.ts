import { Chart, Testing } from 'cdk8s';
import { describe, expect, it } from 'vitest';
import { METRICS_PATH, SIDECAR_CONTAINER } from '../../src/contract/names.js';
import { run } from '../../src/cli/main.js';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { synthYaml } from '../../src/synth/app.js';
import { METRICS_PORT_NAME, POD_MONITOR } from '../../src/synth/naming.js';
import { POD_MONITOR_TYPE, ReconcilerPodMonitor } from '../../src/synth/pod-monitor.js';
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

describe('ReconcilerPodMonitor', () => {
  it('defaults', () => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'prewarm' });
    new ReconcilerPodMonitor(chart, 'pm');
    expect(Testing.synth(chart)).toMatchSnapshot();
  });

  it('custom: labels for a Prometheus selector and an interval; our own labels win', () => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'prewarm' });
    new ReconcilerPodMonitor(chart, 'pm', { labels: { release: 'kps', 'app.kubernetes.io/managed-by': 'x' }, interval: '30s' });
    const [pm] = Testing.synth(chart) as Obj[];
    expect(pm?.metadata.labels).toMatchObject({ release: 'kps', 'app.kubernetes.io/managed-by': 'prewarm' });
    expect((pm?.spec['podMetricsEndpoints'] as { interval?: string }[])[0]?.interval).toBe('30s');
  });
});

describe('synth with podMonitor', () => {
  const objects = yamlObjects(synthYaml(bundleOf(spec), { ...reconciler, podMonitor: true })) as unknown as Obj[];
  const monitors = objects.filter((o) => o.kind === POD_MONITOR_TYPE.kind);

  it('one PodMonitor per namespace, named from the one naming place', () => {
    expect(monitors.map((m) => `${m.metadata.namespace ?? ''}/${m.metadata.name}`)).toEqual([`ml/${POD_MONITOR}`]);
  });

  it("scrapes the sidecar's metrics port by name and path, on holders only (pullers have no sidecar)", () => {
    const pm = monitors[0] as Obj;
    const endpoint = (pm.spec['podMetricsEndpoints'] as { port: string; path: string }[])[0];
    expect(endpoint).toMatchObject({ port: METRICS_PORT_NAME, path: METRICS_PATH });
    const selector = (pm.spec['selector'] as { matchLabels: Record<string, string> }).matchLabels;
    const daemonSets = objects.filter((o) => o.kind === 'DaemonSet');
    type Template = {
      template: { metadata: { labels: Record<string, string> }; spec: { initContainers?: { name: string; ports?: { name: string }[] }[] } };
    };
    const selected = daemonSets.filter((d) =>
      Object.entries(selector).every(([k, v]) => (d.spec as Template).template.metadata.labels[k] === v),
    );
    expect(selected.map((d) => d.metadata.name)).toEqual(daemonSets.filter((d) => isHolder(d.metadata.labels)).map((d) => d.metadata.name));
    expect(daemonSets.length).toBeGreaterThan(selected.length);
    for (const d of selected) {
      // A native sidecar: Prometheus's pod discovery lists init containers' ports too (2.44+).
      const sidecar = (d.spec as Template).template.spec.initContainers?.find((c) => c.name === SIDECAR_CONTAINER);
      expect(sidecar?.ports?.map((p) => p.name)).toEqual([endpoint?.port]);
    }
  });

  it('is off by default, and refused without a reconciler', () => {
    expect(synthYaml(bundleOf(spec), reconciler)).not.toContain('PodMonitor');
    expect(() => synthYaml(bundleOf(spec), { podMonitor: true })).toThrow(
      'podMonitor needs a reconciler: without the sidecar there are no metrics',
    );
  });

  it('the CLI: --pod-monitor emits it; with --no-reconciler it is a usage error', async () => {
    const err: string[] = [];
    const io = { stdout: () => undefined, stderr: (t: string) => void err.push(t) };
    expect(await run(['synth', 'examples', '--stdout', '--pod-monitor', '--no-reconciler'], io)).toBe(ExitCode.Usage);
    expect(err.join('')).toContain('--pod-monitor needs the sidecar: without it there are no metrics to scrape (drop --no-reconciler)');
    const out: string[] = [];
    expect(
      await run(['synth', 'examples', '--stdout', '--pod-monitor'], { stdout: (t) => void out.push(t), stderr: () => undefined }),
    ).toBe(ExitCode.Success);
    expect(yamlObjects(out.join('')).filter((o) => o.kind === 'PodMonitor').length).toBeGreaterThan(0);
  });
});
