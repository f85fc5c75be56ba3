import { describe, expect, it } from 'vitest';
import { ApiException } from '@kubernetes/client-node';
import { attempt, doctorCommand, kubeletConfigOf, readFailure, type DoctorSource } from '../../../src/cli/commands/doctor.js';
import { CliError, ExitCode } from '../../../src/cli/exit-codes.js';
import type { DoctorInput, DoctorReport } from '../../../src/doctor/checks.js';

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
  daemonSets: { kind: 'ok', value: [] },
  pods: { kind: 'ok', value: [] },
  nodes: { kind: 'ok', value: [] },
  secrets: new Map(),
  kubeletConfigs: new Map(),
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
    await doctorCommand(io, fake(base, contexts)).handler({ output: 'json', context: 'prod', requestTimeout: '30s' });
    const report = JSON.parse(out.join('')) as DoctorReport;
    expect(report.errors).toBe(0);
    expect(report.findings.map((f) => f.check)).toContain('apiserver-version');
    expect(contexts).toEqual(['prod']);
  });

  it('an error finding ends in exit 3 (NotReady) after the table is printed', async () => {
    const { io, out } = capture();
    const old = { ...base, version: { kind: 'ok' as const, value: { major: '1', minor: '29', gitVersion: 'v1.29.4' } } };
    const err = await doctorCommand(io, fake(old))
      .handler({ output: 'table', requestTimeout: '30s' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).exitCode).toBe(ExitCode.NotReady);
    expect((err as CliError).message).toBe('doctor found 1 error');
    expect(out.join('')).toContain('error   cluster   apiserver-version   Kubernetes v1.29.4');
  });
});

describe('reading the cluster', () => {
  it('classifies client-node failures by HTTP status', () => {
    const body = { kind: 'Status', message: 'nodes "n1" is forbidden: User "dev" cannot get resource "nodes/proxy"' };
    expect(readFailure(new ApiException(403, 'Forbidden', body, {}))).toEqual({
      kind: 'denied',
      message: '403: nodes "n1" is forbidden: User "dev" cannot get resource "nodes/proxy"',
    });
    expect(readFailure(new ApiException(404, 'Not Found', {}, {}))).toEqual({ kind: 'missing' });
    expect(readFailure(new ApiException(502, 'x', 'error trying to reach service', {}))).toEqual({ kind: 'failed', message: 'HTTP 502' });
  });

  it('rethrows a failure without a status: the cluster cannot be reached, which is not a finding', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
    await expect(attempt(() => Promise.reject(refused))).rejects.toBe(refused);
    expect(await attempt(() => Promise.resolve(3))).toEqual({ kind: 'ok', value: 3 });
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
