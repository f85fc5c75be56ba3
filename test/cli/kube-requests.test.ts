/**
 * The network commands against apiservers that misbehave (harness/hostile-server.ts): each request
 * ends within --request-timeout and under the body cap, and `status --watch --timeout` bounds the
 * whole command. The elapsed checks are bounds with a wide margin, not timings.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { run } from '../../src/cli/main.js';
import { startHostileServer, type HostileBehaviour, type HostileServer } from '../../harness/hostile-server.js';

let saved: string | undefined;
beforeAll(() => {
  saved = process.env.KUBECONFIG;
});
afterAll(() => {
  if (saved === undefined) delete process.env.KUBECONFIG;
  else process.env.KUBECONFIG = saved;
});

/** Points KUBECONFIG at `server` (plain HTTP, which client-node allows only with skip-verify). */
async function kubeconfigFor(server: HostileServer): Promise<void> {
  const file = join(await mkdtemp(join(tmpdir(), 'prewarm-kube-')), 'config');
  await writeFile(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      `- name: hostile\n  cluster: {server: "${server.url}", insecure-skip-tls-verify: true}`,
      'users:',
      '- name: u\n  user: {token: t0k}',
      'contexts:',
      '- name: hostile\n  context: {cluster: hostile, user: u}',
      'current-context: hostile',
      '',
    ].join('\n'),
  );
  process.env.KUBECONFIG = file;
}

async function cli(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const started = Date.now();
  const code = await run(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr, ms: Date.now() - started };
}

/** Runs `argv` against a fresh server that behaves as `behaviour`, stopping it afterwards. */
async function against(behaviour: HostileBehaviour, ...argv: string[]) {
  const server = await startHostileServer(behaviour);
  try {
    await kubeconfigFor(server);
    const r = await cli(...argv);
    return { ...r, requests: server.requests };
  } finally {
    await server.stop();
  }
}

/** The pools `discover --from-cluster` plans against. */
const DISCOVER_SPECS = resolve(dirname(fileURLToPath(import.meta.url)), '../fixtures/discover/specs');

const STALLS: readonly HostileBehaviour[] = [
  { kind: 'silent' },
  { kind: 'drip-head', everyMs: 100 },
  { kind: 'drip-body', everyMs: 100 },
  { kind: 'endless-body' },
];

describe('every apiserver request ends within --request-timeout', () => {
  for (const behaviour of STALLS) {
    it(`status, doctor, migrate and discover --from-cluster against a ${behaviour.kind} apiserver`, async () => {
      const commands = [
        ['status'],
        ['status', '--node', 'n1'],
        ['doctor'],
        ['migrate', '--from-cluster'],
        ['discover', '--from-cluster', '--specs', DISCOVER_SPECS, '--write'],
      ];
      for (const argv of commands) {
        const r = await against(behaviour, ...argv, '--request-timeout', '1s');
        expect(r.requests, argv.join(' ')).toBeGreaterThan(0);
        // What doctor makes of calls that failed is its own report's business; here it must end.
        if (argv[0] !== 'doctor') expect(r.code, `${argv.join(' ')}: ${r.stderr}`).toBe(ExitCode.Internal);
        // doctor makes a few rounds of calls, each bounded; none waits for ever.
        expect(r.ms, argv.join(' ')).toBeLessThan(15_000);
        expect(r.stderr.length, argv.join(' ')).toBeLessThan(20_000);
      }
    }, 90_000);
  }

  it('status --watch --timeout bounds the whole command, the request in flight included', async () => {
    const r = await against({ kind: 'silent' }, 'status', '--watch', '--timeout', '2s', '--request-timeout', '1m');
    expect(r.code, r.stderr).toBe(ExitCode.Internal);
    expect(r.stderr).toContain('did not answer within --timeout (2s)');
    expect(r.ms).toBeGreaterThanOrEqual(1_900);
    expect(r.ms).toBeLessThan(10_000);
  }, 30_000);

  it('an apiserver that answers 500 ends --watch at once, as a failed read', async () => {
    const r = await against({ kind: 'status', status: 500 }, 'status', '--watch', '--timeout', '1m', '--interval', '1s');
    expect(r.code, r.stderr).toBe(ExitCode.Internal);
    expect(r.ms).toBeLessThan(10_000);
  }, 30_000);

  it.each([['0s'], ['0'], ['abc'], ['2h'], ['-1s']])('refuses --request-timeout %s (exit 2): no request goes unbounded', async (value) => {
    for (const command of ['status', 'doctor', 'pin']) {
      const r = await cli(command, ...(command === 'pin' ? ['specs/'] : []), `--request-timeout=${value}`);
      expect(r.code, `${command}: ${r.stderr}`).toBe(ExitCode.Usage);
      expect(r.stderr).toContain('--request-timeout');
    }
  });
});
