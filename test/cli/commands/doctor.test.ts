import { afterEach, describe, expect, it } from 'vitest';
import { ApiException } from '@kubernetes/client-node';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { attempt, doctorCommand, firstRead, kubeletConfigOf, readFailure, type DoctorSource } from '../../../src/cli/commands/doctor.js';
import { CliError, ExitCode } from '../../../src/cli/exit-codes.js';
import type { DoctorInput } from '../../../src/doctor/input.js';
import type { DoctorReport } from '../../../src/doctor/report.js';
import { startHostileServer, type HostileServer } from '../../../harness/hostile-server.js';
import { startScriptedApiserver, withKubeconfig, type ScriptedApiserver } from '../../../harness/scripted-apiserver.js';
import { cli } from '../../helpers.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { stdout: (t: string) => void out.push(t), stderr: (t: string) => void err.push(t) }, out, err };
}

const base: DoctorInput = {
  now: 0,
  version: { kind: 'ok', value: { major: '1', minor: '36', gitVersion: 'v1.36.5' } },
  policy: { kind: 'ok', value: true },
  policyBinding: { kind: 'ok', value: true },
  earlyPullPolicy: { kind: 'missing' },
  earlyPullPolicyBinding: { kind: 'missing' },
  daemonSets: { kind: 'ok', value: [] },
  pods: { kind: 'ok', value: [] },
  nodes: { kind: 'ok', value: [] },
  secrets: new Map(),
  kubeletConfigs: new Map(),
  imageFs: new Map(),
  imageSizes: new Map(),
};
const fake =
  (input: DoctorInput, contexts: (string | undefined)[] = []) =>
  (context: string | undefined): Promise<DoctorSource> => {
    contexts.push(context);
    return Promise.resolve({ read: () => Promise.resolve(input) });
  };

describe('doctor command', () => {
  it('-o json prints the whole report on stdout and exits 0 without errors', async () => {
    const { io, out } = capture();
    const contexts: (string | undefined)[] = [];
    await doctorCommand(io, fake(base, contexts)).handler({ output: 'json', context: 'prod', requestTimeout: '30s', deadline: '2m' });
    const report = JSON.parse(out.join('')) as DoctorReport;
    expect(report.errors).toBe(0);
    expect(report.findings.map((f) => f.check)).toContain('apiserver-version');
    expect(contexts).toEqual(['prod']);
  });

  it('an error finding ends in exit 3 (NotReady) after the table is printed', async () => {
    const { io, out } = capture();
    const old = { ...base, version: { kind: 'ok' as const, value: { major: '1', minor: '29', gitVersion: 'v1.29.4' } } };
    const err = await doctorCommand(io, fake(old))
      .handler({ output: 'table', requestTimeout: '30s', deadline: '2m' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).exitCode).toBe(ExitCode.NotReady);
    expect((err as CliError).message).toBe('doctor found 1 error');
    expect(out.join('')).toContain('error   cluster   apiserver-version   Kubernetes v1.29.4');
  });
});

describe('reading the cluster', () => {
  it('classifies client-node failures by HTTP status, in one escaped and bounded line', () => {
    const body = { kind: 'Status', message: 'nodes "n1" is forbidden: User "dev" cannot get resource "nodes/proxy"' };
    expect(readFailure(new ApiException(403, 'Forbidden', body, {}))).toEqual({
      kind: 'denied',
      message: 'HTTP 403: nodes "n1" is forbidden: User "dev" cannot get resource "nodes/proxy"',
    });
    expect(readFailure(new ApiException(404, 'Not Found', {}, {}))).toEqual({ kind: 'missing' });
    expect(readFailure(new ApiException(502, 'x', 'error trying to reach service', {}))).toEqual({
      kind: 'failed',
      message: 'HTTP 502, with an answer that is not a Kubernetes Status (29 chars, not shown)',
    });
    const hostile = readFailure(new ApiException(500, 'x', { message: `\u001b[2J${'m'.repeat(5000)}` }, {}));
    expect(hostile).toMatchObject({ kind: 'failed' });
    expect((hostile as { message: string }).message).toMatch(/^HTTP 500: \\x1b\[2Jm+… \(5004 chars\)$/);
  });

  it("a read that got no answer is that read's failure; only the first read tells an unreachable cluster (exit 70)", async () => {
    const cut = new SyntaxError('Unexpected end of JSON input');
    expect(await attempt(() => Promise.reject(cut))).toEqual({ kind: 'failed', message: 'Unexpected end of JSON input' });
    expect(await attempt(() => Promise.resolve(3))).toEqual({ kind: 'ok', value: 3 });
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
    const err = await firstRead(() => Promise.reject(refused)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CliError);
    expect(err).toMatchObject({ exitCode: ExitCode.Internal, message: 'cannot reach the cluster: connect ECONNREFUSED 127.0.0.1:6443' });
    expect(await firstRead(() => Promise.reject(new ApiException(500, 'x', {}, {})))).toEqual({ kind: 'failed', message: 'HTTP 500' });
  });

  it('takes kubeletconfig out of a /configz answer, parsed or as text', () => {
    const kc = { serializeImagePulls: false, maxPods: 58 };
    expect(kubeletConfigOf({ kind: 'ok', value: { kubeletconfig: kc } })).toEqual({ kind: 'ok', value: kc });
    expect(kubeletConfigOf({ kind: 'ok', value: JSON.stringify({ kubeletconfig: kc }) })).toEqual({ kind: 'ok', value: kc });
    expect(kubeletConfigOf({ kind: 'ok', value: '<html>' })).toEqual({ kind: 'failed', message: 'the answer is not JSON' });
    expect(kubeletConfigOf({ kind: 'ok', value: {} })).toEqual({ kind: 'failed', message: 'the answer holds no kubeletconfig' });
    expect(kubeletConfigOf({ kind: 'missing' })).toEqual({ kind: 'missing' });
  });
});

describe('doctor against loopback apiservers', () => {
  const servers: (HostileServer | ScriptedApiserver)[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.stop();
  });
  // eslint-disable-next-line no-control-regex -- the point: no raw control character reaches the terminal
  const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/;

  it('every call failing with 500: nothing could be checked, so exit 70, with apiserver advice and no RBAC advice', async () => {
    const server = await startHostileServer({ kind: 'status', status: 500 });
    servers.push(server);
    const r = await withKubeconfig(server.url, () => cli('doctor'));
    expect(r.code, r.stderr).toBe(ExitCode.Internal);
    expect(r.stderr).toBe('prewarm: cannot run any doctor check (5 checks): see why in each finding\n');
    expect(r.stdout).toContain('\n0 errors, 0 warnings, 5 checks could not run\n');
    expect(r.stdout).not.toContain('0 errors, 0 warnings\n');
    expect(r.stdout).toMatch(/^unknown\s+cluster\s+apiserver-version\s+could not read \/version: HTTP 500: \\x1b\[2J/m);
    expect(r.stdout).toContain('the apiserver failed to answer (not a permission problem)');
    expect(r.stdout).not.toContain('grant');
    expect(r.stdout).not.toMatch(RAW);
    expect(r.stdout.split('\n').every((l) => l.length < 1500)).toBe(true);
  });

  it('every call refused with 403: RBAC advice, and still not exit 0', async () => {
    const server = await startHostileServer({ kind: 'status', status: 403 });
    servers.push(server);
    const r = await withKubeconfig(server.url, () => cli('doctor', '-o', 'json'));
    expect(r.code, r.stderr).toBe(ExitCode.Internal);
    const report = JSON.parse(r.stdout) as DoctorReport;
    expect(report.unchecked).toBe(report.findings.length);
    expect(report.findings.find((f) => f.message.startsWith('not allowed to read nodes'))?.fix).toBe('grant list on nodes');
    expect(r.stdout).not.toMatch(/\\u001b/);
  });

  it("one node's truncated /configz is that node's row; the others are checked and the run exits 3", async () => {
    const list = (items: unknown[]) => ({ status: 200, body: { kind: 'List', apiVersion: 'v1', metadata: {}, items } });
    const kubelet = { kubeletconfig: { serializeImagePulls: false, registerWithTaints: [] } };
    const server = await startScriptedApiserver((path) => {
      if (path === '/version') return { status: 200, body: { major: '1', minor: '36', gitVersion: 'v1.36.5' } };
      if (path.startsWith('/apis/admissionregistration.k8s.io/'))
        return { status: 200, body: { metadata: { name: 'reconciler.prewarm.dev' } } };
      if (path.startsWith('/apis/apps/v1/daemonsets') || path.startsWith('/api/v1/pods')) return list([]);
      if (path === '/api/v1/nodes') return list([{ metadata: { name: 'n1' } }, { metadata: { name: 'n2' } }]);
      if (path === '/api/v1/nodes/n1/proxy/configz') return { status: 200, body: kubelet };
      if (path === '/api/v1/nodes/n2/proxy/configz') return { status: 200, body: JSON.stringify(kubelet).slice(0, 20) };
      return undefined;
    });
    servers.push(server);
    const r = await withKubeconfig(server.url, () => cli('doctor', '-o', 'wide'));
    expect(r.code, r.stderr).toBe(ExitCode.NotReady);
    expect(r.stderr).toBe('prewarm: doctor could not run 1 check; the others found no error\n');
    expect(r.stdout).toMatch(/^unknown\s+node n2\s+kubelet-config\s+could not read the kubelet configuration \(\/configz\): .+; skipped$/m);
    expect(r.stdout).toMatch(/^ok\s+node n1\s+image-gc\s+/m);
    expect(r.stdout).toContain('node n2 kubelet-config: the kubelet did not answer through the node proxy');
  });

  it('disk budget: /stats/summary only of nodes with pools, a 403 and an endless body each their own row, registry sizes compressed', async () => {
    const list = (items: unknown[]) => ({ status: 200, body: { kind: 'List', apiVersion: 'v1', metadata: {}, items } });
    let registry = '';
    const image = () => `${registry}/ml/new:1`;
    const holderOn = (node: string) => ({
      metadata: {
        name: `prewarm-gpu-${node}`,
        namespace: 'prewarm',
        labels: { 'app.kubernetes.io/managed-by': 'prewarm', 'prewarm.dev/pool': 'gpu' },
      },
      spec: { nodeName: node, containers: [{ name: 'img-0', image: image() }] },
      status: { phase: 'Pending' },
    });
    const nodeObj = (name: string) => ({ metadata: { name }, status: { nodeInfo: { operatingSystem: 'linux', architecture: 'amd64' } } });
    const summary = { node: { runtime: { imageFs: { capacityBytes: 100 << 20, usedBytes: 10 << 20, availableBytes: 90 << 20 } } } };
    const server = await startScriptedApiserver((path) => {
      if (path === '/version') return { status: 200, body: { major: '1', minor: '36', gitVersion: 'v1.36.5' } };
      if (path.startsWith('/apis/admissionregistration.k8s.io/'))
        return { status: 200, body: { metadata: { name: 'reconciler.prewarm.dev' } } };
      if (path.startsWith('/apis/apps/v1/daemonsets')) return list([]);
      if (path.startsWith('/api/v1/pods')) return list(['n1', 'n2', 'n3'].map(holderOn));
      if (path === '/api/v1/nodes') return list(['n1', 'n2', 'n3', 'n4'].map(nodeObj));
      if (path.endsWith('/proxy/configz'))
        return { status: 200, body: { kubeletconfig: { imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 40 } } };
      if (path === '/api/v1/nodes/n1/proxy/stats%2Fsummary') return { status: 200, body: summary };
      if (path === '/api/v1/nodes/n2/proxy/stats%2Fsummary')
        return { status: 403, body: { kind: 'Status', code: 403, message: 'nodes "n2" is forbidden: cannot get resource "nodes/proxy"' } };
      if (path === '/api/v1/nodes/n3/proxy/stats%2Fsummary') return { status: 200, body: `{"node":"${'x'.repeat(9 << 20)}"}` };
      // The same server is the registry: a manifest of 45 MiB of layers and a config of 1 KiB.
      if (path === '/v2/ml/new/manifests/1')
        return { status: 200, body: { schemaVersion: 2, config: { size: 1024 }, layers: [{ size: 45 << 20 }] } };
      return undefined;
    });
    servers.push(server);
    registry = server.url.replace('http://', '');
    const r = await withKubeconfig(server.url, () => cli('doctor', '-o', 'json', '--plain-http', registry));
    const report = JSON.parse(r.stdout) as DoctorReport;
    const budget = (node: string) => report.findings.find((f) => f.check === 'disk-budget' && f.scope === `node ${node}`);
    expect(budget('n1')).toMatchObject({ level: 'warning' });
    expect(budget('n1')?.message).toContain(
      'pool gpu pins 1 image, 45.0 MiB (0.0 MiB as the node lists them, 45.0 MiB compressed, from the registry)',
    );
    expect(budget('n2')).toMatchObject({
      level: 'unknown',
      fix: 'grant get on nodes/proxy to read /api/v1/nodes/NAME/proxy/stats/summary',
    });
    expect(budget('n3')).toMatchObject({ level: 'unknown' });
    expect(budget('n3')?.fix).toContain('the kubelet did not answer through the node proxy');
    expect(budget('n4')).toBeUndefined();
    expect(server.requests.filter((p) => p.endsWith('summary')).sort()).toEqual(
      ['n1', 'n2', 'n3'].map((n) => `/api/v1/nodes/${n}/proxy/stats%2Fsummary`),
    );
    // One registry read for the one image, though three nodes run it.
    expect(server.requests.filter((p) => p.startsWith('/v2/'))).toEqual(['/v2/ml/new/manifests/1']);
    expect(r.code).toBe(ExitCode.NotReady);
  });

  it('a cluster that cannot be reached: one line, exit 70', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const r = await withKubeconfig(`http://127.0.0.1:${port}`, () => cli('doctor'));
    expect(r.code).toBe(ExitCode.Internal);
    expect(r.stderr).toMatch(/^prewarm: cannot reach the cluster: .+\n$/);
    expect(r.stdout).toBe('');
  });
});
