/**
 * A loopback apiserver whose every answer a test writes: a function from the request path to a
 * status and a body (404 otherwise), for the CLI's read-only commands (`status`, `doctor`,
 * `migrate --from-cluster`) through @kubernetes/client-node. With {@link kubeconfigFor} the CLI
 * reaches it as it reaches a real cluster. The test starts and stops it; for servers that
 * misbehave at the HTTP level (silence, drips, endless bodies) see hostile-server.ts.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** One answer: `body` is sent as it is when a string (so it may be cut or not JSON), else as JSON. */
export interface ScriptedAnswer {
  readonly status: number;
  readonly body: unknown;
}

/** Answers a GET of `path` (with its query), or undefined for 404. */
export type Script = (path: string) => ScriptedAnswer | undefined;

/** A started server. */
export interface ScriptedApiserver {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** Paths requested so far, with their queries. */
  readonly requests: readonly string[];
  stop(): Promise<void>;
}

/** Starts a server that answers as `script` says. */
export async function startScriptedApiserver(script: Script): Promise<ScriptedApiserver> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    const path = req.url ?? '/';
    requests.push(path);
    const answer = script(path) ?? { status: 404, body: { kind: 'Status', code: 404, reason: 'NotFound', message: 'not found' } };
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Runs `fn` with KUBECONFIG naming a fresh kubeconfig whose one context reaches `url` over plain
 * HTTP (client-node allows it only with TLS verification off, which means nothing on loopback).
 */
export async function withKubeconfig<T>(url: string, fn: () => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'prewarm-kubeconfig-'));
  const file = join(dir, 'config');
  await writeFile(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: loopback, cluster: {server: "' + url + '", insecure-skip-tls-verify: true}}]',
      'users: [{name: tester, user: {token: loopback-test}}]',
      'contexts: [{name: loopback, context: {cluster: loopback, user: tester}}]',
      'current-context: loopback',
      '',
    ].join('\n'),
  );
  const previous = process.env['KUBECONFIG'];
  process.env['KUBECONFIG'] = file;
  try {
    return await fn();
  } finally {
    if (previous === undefined) delete process.env['KUBECONFIG'];
    else process.env['KUBECONFIG'] = previous;
    await rm(dir, { recursive: true, force: true });
  }
}
