import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CliError, ExitCode } from '../../src/cli/exit-codes.js';
import { kubeClient } from '../../src/cli/kube.js';

const TOKEN = 'eyJhbGciOiJSUzI1NiIsImtpZCI6InByZXdhcm0ifQ.c2VjcmV0LXBheWxvYWQtZm9yLXRlc3Rz.c2lnbmF0dXJl';

const valid = (user: string) => `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: 'https://127.0.0.1:6443', certificate-authority: ca.pem}
users:
- name: u
  user: ${user}
contexts:
- name: ctx
  context: {cluster: c, user: u}
- name: other
  context: {cluster: c, user: u}
current-context: ctx
`;

const dirs: string[] = [];
async function workdir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'prewarm-kube-'));
  dirs.push(dir);
  return dir;
}
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** Requests bounded as the CLI's default --request-timeout bounds them; no context named. */
const OPTS = { requestTimeoutMs: 30_000 };

/** kubeClient's failure, which must be a CliError. */
async function failure(...args: Parameters<typeof kubeClient>): Promise<CliError> {
  const err = await kubeClient(...args).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CliError);
  return err as CliError;
}

describe('kubeClient', () => {
  it('without any kubeconfig says where it looked, as kubectl does, with exit 2', async () => {
    const home = await workdir();
    const err = await failure(OPTS, { env: {}, home, serviceAccountDir: join(home, 'sa') });
    expect(err.exitCode).toBe(ExitCode.Usage);
    expect(err.message).toBe(
      `no kubeconfig found: KUBECONFIG is not set; ${join(home, '.kube', 'config')} does not exist; ` +
        `no in-cluster service account (KUBERNETES_SERVICE_HOST and ${join(home, 'sa', 'token')}); set KUBECONFIG or create ~/.kube/config`,
    );
    expect(err.message).not.toContain('HTTP protocol');
  });

  it('passes over files of KUBECONFIG that do not exist, and says so when none does', async () => {
    const home = await workdir();
    const err = await failure(OPTS, {
      env: { KUBECONFIG: '/nonexistent/a:/nonexistent/b' },
      home,
      serviceAccountDir: join(home, 'sa'),
    });
    expect(err.message).toContain('no kubeconfig found: KUBECONFIG=/nonexistent/a:/nonexistent/b names no file that exists');
    await writeFile(join(home, 'ca.pem'), 'CA PEM\n');
    await writeFile(join(home, 'config'), valid(`{token: ${TOKEN}}`));
    const { config } = await kubeClient(OPTS, { env: { KUBECONFIG: `/nonexistent/a:${join(home, 'config')}` }, home });
    expect(config.getCurrentUser()?.token).toBe(TOKEN);
  });

  it.each<[string, string]>([
    ['a token whose quote is not closed', valid(`\n    token: "${TOKEN.slice(0, 40)}\n    more: x`)],
    ['a token cut by a line break', valid(`\n    token: ${TOKEN.slice(0, 40)}\n  ${TOKEN.slice(40)}: [`)],
    ['bad indentation after a token', valid(`\n    token: ${TOKEN}\n   client-key-data: ${TOKEN}`)],
    ['a flow mapping left open', valid(`{token: ${TOKEN}`)],
    ['a duplicate key', valid(`{token: ${TOKEN}, token: ${TOKEN}}`)],
    ['an invalid escape', valid(`{token: "${TOKEN.slice(0, 20)}\\q${TOKEN.slice(20)}"}`)],
  ])('names the file and line of %s, never the content', async (_name, text) => {
    const home = await workdir();
    await writeFile(join(home, 'config'), text);
    const err = await failure(OPTS, { env: { KUBECONFIG: join(home, 'config') }, home });
    expect(err.exitCode).toBe(ExitCode.Usage);
    expect(err.message).toMatch(new RegExp(`^kubeconfig ${join(home, 'config')}:\\d+: not valid YAML: [a-z]`));
    for (const piece of [TOKEN.slice(0, 8), TOKEN.slice(20, 30), TOKEN.slice(40, 50), TOKEN.slice(-8), 'c2VjcmV0']) {
      expect(err.message).not.toContain(piece);
    }
  });

  it('refuses a FIFO, /proc/self/environ and a folder as a kubeconfig without blocking or quoting them', async () => {
    const home = await workdir();
    execFileSync('mkfifo', [join(home, 'fifo')]);
    for (const [path, why] of [
      [join(home, 'fifo'), 'is a FIFO (named pipe), not a regular file'],
      ['/proc/self/environ', 'is not a plain file on disk'],
      [home, 'is a folder, not a file'],
    ] as const) {
      const err = await failure(OPTS, { env: { KUBECONFIG: path, SECRET_ENV: TOKEN }, home });
      expect(err.message).toContain(`cannot read kubeconfig ${path}: it ${why}`);
      expect(err.message).not.toContain(TOKEN.slice(0, 8));
    }
  }, 30_000);

  it('reads the files the context names itself, bounded, relative to the kubeconfig; a FIFO among them never blocks', async () => {
    const home = await workdir();
    await mkdir(join(home, 'kube'));
    await writeFile(join(home, 'kube', 'ca.pem'), 'CA PEM\n');
    await writeFile(join(home, 'kube', 'token'), `${TOKEN}\n`);
    await writeFile(join(home, 'kube', 'config'), valid('{token-file: token}'));
    const { config } = await kubeClient(OPTS, { env: { KUBECONFIG: join(home, 'kube', 'config') }, home });
    expect(config.getCurrentUser()?.token).toBe(TOKEN);
    expect(config.getCurrentCluster()?.caData).toBe(Buffer.from('CA PEM\n').toString('base64'));
    expect(config.getCurrentCluster()?.caFile).toBeUndefined();

    execFileSync('mkfifo', [join(home, 'kube', 'key')]);
    await writeFile(join(home, 'kube', 'config'), valid('{client-certificate: ca.pem, client-key: key}'));
    const err = await failure(OPTS, { env: { KUBECONFIG: join(home, 'kube', 'config') }, home });
    expect(err.message).toBe(
      `cannot read the client-key ${join(home, 'kube', 'key')} that kubeconfig ${join(home, 'kube', 'config')} names: ` +
        'it is a FIFO (named pipe), not a regular file; only regular files are read',
    );
  }, 30_000);

  it('reads ~/.kube/config without KUBECONFIG, picks --context, and refuses an unknown one with exit 2', async () => {
    const home = await workdir();
    await mkdir(join(home, '.kube'));
    await writeFile(join(home, '.kube', 'ca.pem'), 'CA\n');
    await writeFile(join(home, '.kube', 'config'), valid(`{token: ${TOKEN}}`));
    const { config } = await kubeClient({ context: 'other', requestTimeoutMs: 30_000 }, { env: {}, home });
    expect(config.getCurrentContext()).toBe('other');
    const err = await failure({ context: 'nope', requestTimeoutMs: 30_000 }, { env: {}, home });
    expect([err.exitCode, err.message]).toEqual([ExitCode.Usage, `kubeconfig ${join(home, '.kube', 'config')}: no context "nope"`]);
  });

  it("reports client-node's own shape checks, which quote nothing, and nothing else of them", async () => {
    const home = await workdir();
    await writeFile(join(home, 'config'), `clusters:\n- name: c\n  server: https://x\nusers: []\ncontexts: []\n`);
    const err = await failure(OPTS, { env: { KUBECONFIG: join(home, 'config') }, home });
    expect(err.message).toBe(`kubeconfig ${join(home, 'config')}: clusters[0].cluster is missing`);
    await writeFile(join(home, 'config'), `- ${TOKEN}\n`);
    const list = await failure(OPTS, { env: { KUBECONFIG: join(home, 'config') }, home });
    expect(list.message).toBe(`kubeconfig ${join(home, 'config')}:1: not a kubeconfig: expected a mapping`);
  });
});
