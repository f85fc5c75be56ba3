import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../src/cli/exit-codes.js';
import { HOSTILE_TEXT, startHostileServer, type HostileServer } from '../../../harness/hostile-server.js';
import { startScriptedApiserver, withKubeconfig, type ScriptedApiserver } from '../../../harness/scripted-apiserver.js';
import { cli } from '../../helpers.js';

const servers: (HostileServer | ScriptedApiserver)[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
});

/** A cluster with no prewarm objects and no nodes: every read answers an empty list. */
async function emptyCluster(): Promise<ScriptedApiserver> {
  const server = await startScriptedApiserver(() => ({ status: 200, body: { kind: 'List', metadata: {}, items: [] } }));
  servers.push(server);
  return server;
}

describe('status --interval and --timeout', () => {
  const form = 'is not a duration: use whole numbers with h, m or s, e.g. 90s, 10m, 1h30m';
  it.each<[string[], string]>([
    [['--interval', 'abc'], `--interval "abc" ${form}`],
    [['--interval', '1e12'], `--interval "1e12" ${form}`],
    [['--interval', 'Infinity'], `--interval "Infinity" ${form}`],
    [['--interval=-5s'], `--interval "-5s" ${form}`],
    [['--interval', '2'], `--interval "2" ${form}`],
    [['--interval', '0s'], '--interval "0s" must be between 1s and 1h, got 0s'],
    [['--interval', '2h'], '--interval "2h" must be between 1s and 1h, got 2h'],
    [['--interval', '9999999999999999h'], '--interval "9999999999999999h" must be between 1s and 1h\n'],
    [['--timeout', '15'], `--timeout "15" ${form}`],
    [['--timeout', '1.5h'], `--timeout "1.5h" ${form}`],
    [['--timeout', '0s'], '--timeout "0s" must be between 1s and 24h, got 0s'],
    [['--timeout', '25h'], '--timeout "25h" must be between 1s and 24h, got 25h'],
    [['--interval', '1s', '--interval', '2s'], '--interval is given more than once'],
  ])('%j is a usage error (exit 2) before any request', async (options, message) => {
    const server = await emptyCluster();
    const r = await withKubeconfig(server.url, () => cli('status', '--watch', ...options));
    expect(r.code, r.stderr).toBe(ExitCode.Usage);
    expect(r.stderr).toContain(`prewarm: ${message}`);
    expect(r.stdout).toBe('');
    expect(server.requests).toEqual([]);
  });

  it('takes durations as the specs write them: --interval 1s --timeout 1m, and no pool is all warm at the first read', async () => {
    const server = await emptyCluster();
    // --timeout bounds the whole command, first read included: 1s failed on a loaded machine.
    const r = await withKubeconfig(server.url, () => cli('status', '--watch', '--interval', '1s', '--timeout', '1m'));
    // No pools: all warm at the first read, so the watch ends at once.
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    expect(server.requests.length).toBe(3);
  });
});

describe('status on a failing apiserver', () => {
  it('prints one bounded line for a 300 KB error answer, never the answer', async () => {
    const server = await startHostileServer({ kind: 'huge-error', status: 500, bytes: 300 << 10 });
    servers.push(server);
    const r = await withKubeconfig(server.url, () => cli('status'));
    expect(r.code).toBe(ExitCode.Internal);
    expect(r.stderr).toBe(
      'prewarm: cannot read the cluster: HTTP 500, with an answer that is not a Kubernetes Status (307200 chars, not shown)\n',
    );
    expect(r.stdout).toBe('');
  });

  it('escapes and bounds the message of a Status that holds terminal escapes', async () => {
    const server = await startHostileServer({ kind: 'status', status: 500 });
    servers.push(server);
    const r = await withKubeconfig(server.url, () => cli('status'));
    expect(r.code).toBe(ExitCode.Internal);
    expect(r.stderr.split('\n')).toHaveLength(2);
    expect(r.stderr).toContain('prewarm: cannot read the cluster: HTTP 500: \\x1b[2J\\x1b]0;owned\\x07\\x00\\u202e gnirts mmm');
    expect(r.stderr).toMatch(/m… \(\d+ chars\)\n$/);
    expect(r.stderr.length).toBeLessThan(500);
    // eslint-disable-next-line no-control-regex -- the point: no raw control character reaches the terminal
    expect(r.stderr.replace(/\n$/, '')).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    expect(HOSTILE_TEXT).toContain('\u001b');
  });
});
