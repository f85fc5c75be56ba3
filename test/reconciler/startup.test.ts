/**
 * The sidecar's start-up input: every bad environment, pools.json or endpoint becomes one line, and
 * the real entry point (src/reconciler/main.ts, run as a process) exits 2 with exactly that line on
 * stderr and in its termination-log file, before any request to an apiserver.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ENV } from '../../src/contract/names.js';
import { renderPoolsFile } from '../../src/contract/pools-file.js';
import { EXIT_BAD_CONFIG, loadStartup, oneLine, reportStartupFailure, StartupError } from '../../src/reconciler/startup.js';
import { pool, SIDECAR_ENV } from './fixtures.js';

const exec = promisify(execFile);

const GOOD_POOLS = renderPoolsFile([pool('gpu')]);
const env = (over: Record<string, string | undefined> = {}): Record<string, string | undefined> => ({
  ...SIDECAR_ENV,
  PREWARM_POOLS_PATH: '/cfg/pools.json',
  PREWARM_KUBE_SERVER: 'https://127.0.0.1:1',
  ...over,
});
/** A file system of the given paths; any other path fails as a missing file does. */
const files =
  (fs: Record<string, string>) =>
  (p: string): Buffer => {
    const text = fs[p];
    if (text === undefined) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${p}'`), { code: 'ENOENT' });
    return Buffer.from(text);
  };

function failure(e: Record<string, string | undefined>, fs: Record<string, string> = { '/cfg/pools.json': GOOD_POOLS }): string {
  try {
    loadStartup(e, files(fs));
  } catch (err) {
    expect(err).toBeInstanceOf(StartupError);
    const msg = (err as Error).message;
    expect(msg).not.toContain('\n');
    return msg;
  }
  throw new Error('loadStartup accepted bad input');
}

describe('loadStartup', () => {
  it('accepts what synthesis writes', () => {
    const s = loadStartup(env(), files({ '/cfg/pools.json': GOOD_POOLS }));
    expect(s.config.poolId).toBe('gpu');
    expect(s.pools.pools.map((p) => p.id)).toEqual(['gpu']);
    expect(s.endpoint.server).toBe('https://127.0.0.1:1');
  });

  it('names the variable of a bad environment', () => {
    expect(failure(env({ [ENV.nodeName]: undefined }))).toBe(`environment variable ${ENV.nodeName} is required`);
    expect(failure(env({ [ENV.deadlineSeconds]: '10m' }))).toBe(
      `environment variable ${ENV.deadlineSeconds} must be an integer between 0 and 86400, got "10m"`,
    );
  });

  it('names the file and the problem of a malformed pools.json', () => {
    expect(failure(env(), {})).toBe('cannot read pools.json at /cfg/pools.json (ENOENT)');
    expect(failure(env(), { '/cfg/pools.json': '{"pools": [' })).toMatch(/^pools\.json is not valid JSON: .* \(\/cfg\/pools\.json\)$/);
    expect(failure(env(), { '/cfg/pools.json': '{"pools": {}}' })).toBe('pools.json: "pools" must be an array (/cfg/pools.json)');
    expect(failure(env(), { '/cfg/pools.json': '{"pools": [{"id": 1}]}' })).toBe(
      'pools.json: pools[0].id must be a string (/cfg/pools.json)',
    );
  });

  it('names the missing endpoint: no in-cluster service, an unreadable CA or token', () => {
    expect(failure(env({ PREWARM_KUBE_SERVER: undefined, KUBERNETES_SERVICE_HOST: undefined }))).toBe(
      'no apiserver endpoint: KUBERNETES_SERVICE_HOST is not set: not running in a cluster',
    );
    expect(failure(env({ PREWARM_KUBE_CA_FILE: '/sa/ca.crt' }))).toBe('cannot read the CA file /sa/ca.crt (ENOENT)');
    expect(failure(env({ PREWARM_KUBE_TOKEN_FILE: '/sa/token' }))).toBe('cannot read the token file /sa/token (ENOENT)');
  });
});

describe('reportStartupFailure', () => {
  it('writes one JSON line with the reason as msg, and the plain reason to the termination log', () => {
    const dir = mkdtempSync(join(tmpdir(), 'prewarm-startup-'));
    const lines: string[] = [];
    reportStartupFailure('invalid configuration: x', (l) => lines.push(l), join(dir, 'termination-log'));
    expect(lines).toHaveLength(1);
    expect(lines[0]?.endsWith('\n')).toBe(true);
    expect(JSON.parse(lines[0] as string)).toMatchObject({ level: 'error', msg: 'invalid configuration: x' });
    expect(readFileSync(join(dir, 'termination-log'), 'utf8')).toBe('invalid configuration: x\n');
    // No termination log (outside a pod): stderr alone, no throw.
    reportStartupFailure('y', () => undefined, join(dir, 'no', 'such', 'dir'));
  });

  it('folds a multi-line message into one line', () => {
    expect(oneLine(new Error('a\n  b\nc'))).toBe('a b c');
  });
});

describe('the sidecar process on bad input', () => {
  it('exits 2 with one line on stderr and in the termination log, for pools.json and for the environment', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'prewarm-main-'));
    const poolsPath = join(dir, 'pools.json');
    writeFileSync(poolsPath, '{"pools": [{"id": "gpu", "namespace": "ns"}]}');
    const cases: [Record<string, string | undefined>, string][] = [
      [env({ PREWARM_POOLS_PATH: poolsPath }), `invalid configuration: pools.json: pools[0].nodeLabelKey must be a string (${poolsPath})`],
      [env({ PREWARM_POOLS_PATH: poolsPath, [ENV.pool]: '' }), `invalid configuration: environment variable ${ENV.pool} is required`],
    ];
    for (const [i, [e, want]] of cases.entries()) {
      const log = join(dir, `termination-log-${i}`);
      const r = await exec(process.execPath, ['--import', 'tsx', 'src/reconciler/main.ts'], {
        env: { PATH: process.env.PATH, ...e, PREWARM_TERMINATION_LOG: log },
        timeout: 30_000,
      }).catch((x: unknown) => x as { code: number; stdout: string; stderr: string });
      expect((r as { code?: number }).code, r.stderr).toBe(EXIT_BAD_CONFIG);
      expect(r.stdout).toBe('');
      const lines = r.stderr.split('\n').filter(Boolean);
      expect(lines, r.stderr).toHaveLength(1);
      expect(JSON.parse(lines[0] as string)).toMatchObject({ level: 'error', msg: want });
      expect(readFileSync(log, 'utf8')).toBe(`${want}\n`);
    }
  }, 60_000);
});
