/**
 * `synth --pod-monitor` against the Prometheus Operator's real PodMonitor CRD (fetched from its Go
 * module by fetch-crds.sh, as the Flux and Argo CD CRDs are): the PodMonitors the shipped CLI
 * emits for examples/ apply server-side with strict field validation and no warnings, and the
 * schema is enforced, so the check can fail.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { yamlObjects } from '../../harness/manifests.js';
import { POD_MONITOR } from '../../src/synth/naming.js';
import { POD_MONITOR_TYPE } from '../../src/synth/pod-monitor.js';
import { CLI, installCrds, kubectlOf, ok, run, warnings } from './helpers.js';

const kubeconfig = inject('kubeconfig');
const kubectl = kubectlOf(kubeconfig);
const crdDir = inject('crdDir');
const CRD_FILE = 'monitoring.coreos.com_podmonitors.yaml';

describe('synth --pod-monitor against the Prometheus Operator CRD', () => {
  let monitors: string;
  let namespaces: string[];

  beforeAll(() => {
    installCrds(kubectl, [join(crdDir, CRD_FILE)]);
    const synth = run(['node', CLI, 'synth', 'examples', '--stdout', '--pod-monitor']);
    expect(synth.code, synth.stderr).toBe(0);
    const objs = yamlObjects(synth.stdout).filter((o) => o.apiVersion === POD_MONITOR_TYPE.apiVersion && o.kind === POD_MONITOR_TYPE.kind);
    expect(objs.length).toBeGreaterThan(0);
    namespaces = objs.map((o) => o.metadata.namespace ?? '').sort();
    for (const ns of namespaces) kubectl(['create', 'namespace', ns]);
    monitors = objs.map((o) => JSON.stringify(o)).join('\n---\n');
  });

  it('the CRD is the pinned release of the Prometheus Operator', () => {
    const crd = readFileSync(join(crdDir, CRD_FILE), 'utf8');
    expect(crd).toMatch(/operator\.prometheus\.io\/version: 0\.85\.0/);
    expect(crd).toContain('kind: PodMonitor');
  });

  it('every PodMonitor applies with strict field validation and no warnings, one per namespace', () => {
    const dry = ok(kubectl(['apply', '--server-side', '--dry-run=server', '--validate=strict', '-f', '-'], monitors));
    expect(warnings(dry)).toEqual([]);
    const r = ok(kubectl(['apply', '--server-side', '--validate=strict', '-f', '-'], monitors));
    expect(warnings(r)).toEqual([]);
    const live = JSON.parse(ok(kubectl(['get', 'podmonitors', '-A', '-o', 'json'])).stdout) as {
      items: { metadata: { namespace: string; name: string }; spec: { podMetricsEndpoints: { port: string }[] } }[];
    };
    expect(live.items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`).sort()).toEqual(
      namespaces.map((ns) => `${ns}/${POD_MONITOR}`),
    );
    for (const i of live.items) expect(i.spec.podMetricsEndpoints.map((e) => e.port)).toEqual(['metrics']);
  });

  it('the schema is enforced: an unknown field and a wrong type are refused', () => {
    const unknown = monitors.replace('"path":"/metrics"', '"path":"/metrics","scrapeEvery":"30s"');
    expect(unknown).not.toBe(monitors);
    const a = kubectl(['apply', '--server-side', '--dry-run=server', '--validate=strict', '-f', '-'], unknown);
    expect(a.code).not.toBe(0);
    expect(a.stderr).toContain('.spec.podMetricsEndpoints[0].scrapeEvery: field not declared in schema');
    const wrongType = monitors.replace('"port":"metrics"', '"port":["metrics"]');
    expect(wrongType).not.toBe(monitors);
    expect(kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], wrongType).code).not.toBe(0);
  });
});
