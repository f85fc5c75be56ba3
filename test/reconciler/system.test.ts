import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { reconcilerNodeFlags } from '../../harness/cluster/images.js';
import { probe, startFlood, type Flood } from '../../harness/flood.js';
import { sleep, waitFor } from '../../harness/time.js';
import { STARTUP_PATH } from '../../src/contract/names.js';
import { serveMetrics } from '../../src/reconciler/adapters/system.js';
import { Metrics } from '../../src/reconciler/metrics.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const MiB = 1 << 20;

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** The server in a process of its own, with the sidecar image's node flags (its 16 MiB heap, `--expose-gc`). */
async function serverProcess(): Promise<{ child: ChildProcess; port: number; stats: { heap: number; conns: number }[] }> {
  const url = (f: string): string => pathToFileURL(path.join(ROOT, f)).href;
  const script = [
    `import { serveMetrics } from ${JSON.stringify(url('src/reconciler/adapters/system.ts'))};`,
    `import { Metrics } from ${JSON.stringify(url('src/reconciler/metrics.ts'))};`,
    `const s = await serveMetrics(new Metrics(), '127.0.0.1', 0, () => true);`,
    'process.stdout.write(`port ${s.port}\\n`);',
    // The live heap, after a full collection (the image's flags expose gc): what the flood keeps,
    // not the garbage that a 16 MiB heap collects at its own pace.
    'const live = () => { globalThis.gc(); return process.memoryUsage().heapUsed; };',
    'setInterval(() => s.server.getConnections((_, n) => process.stdout.write(`stat ${live()} ${n}\\n`)), 200);',
  ].join('\n');
  const flags = reconcilerNodeFlags();
  const child = spawn(process.execPath, [...flags, '--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanups.push(() => child.kill('SIGKILL'));
  let port = 0;
  const stats: { heap: number; conns: number }[] = [];
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  let partial = '';
  child.stdout?.on('data', (c: Buffer) => {
    const lines = (partial + c.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const l of lines) {
      const [kind, a = '0', b = '0'] = l.split(' ');
      if (kind === 'port') port = Number(a);
      if (kind === 'stat') stats.push({ heap: Number(a), conns: Number(b) });
    }
  });
  await waitFor(`the server process to listen (stderr: ${stderr})`, () => port > 0 && stats.length > 0, 30_000, 20);
  return { child, port, stats };
}

describe('serveMetrics under a connection flood', () => {
  it('keeps the startup probe answering and its heap bounded with 5,000 idle and 500 slowloris connections', async () => {
    const { child, port, stats } = await serverProcess();
    let exited: string | undefined;
    child.on('exit', (code, signal) => (exited = `exit ${code} ${signal}`));
    await sleep(500);
    const baseline = Math.max(...stats.map((s) => s.heap));
    const flood: Flood = await startFlood({ host: '127.0.0.1', port, idle: 5000, slow: 500, dripMs: 300 });
    cleanups.push(() => flood.close());
    const answers: number[] = [];
    for (let i = 0; i < 20 && exited === undefined; i++) {
      answers.push(await probe('127.0.0.1', port, STARTUP_PATH, 1000));
      if (i === 9) await flood.renew();
      await sleep(150);
    }
    const during = stats.slice(-15);
    flood.close();
    expect(exited).toBeUndefined();
    // A probe can still wait out a SYN retransmission while the kernel's accept queue is full of the
    // flood's connections, as any TCP server's would; the kubelet asks again the next second.
    expect(answers.filter((a) => a === 200).length).toBeGreaterThanOrEqual(16);
    expect(Math.max(...during.map((s) => s.heap)) - baseline).toBeLessThan(4 * MiB);
    expect(Math.max(...during.map((s) => s.conns))).toBeLessThanOrEqual(64);
  }, 90_000);
});

describe('serveMetrics bounds', () => {
  it('holds at most maxConnections: a new connection closes the oldest, and the probe is answered', async () => {
    const { server, port } = await serveMetrics(new Metrics(), '127.0.0.1', 0, () => false, { maxConnections: 4 });
    cleanups.push(() => server.close());
    const flood = await startFlood({ host: '127.0.0.1', port, idle: 10, slow: 0 });
    cleanups.push(() => flood.close());
    await waitFor('the oldest six closed', () => flood.closedByServer() >= 6, 5000, 10);
    expect(await probe('127.0.0.1', port, STARTUP_PATH)).toBe(503);
    const held = await new Promise<number>((r) => server.getConnections((_, n) => r(n)));
    expect(held).toBeLessThanOrEqual(4);
    expect(flood.open()).toBeLessThanOrEqual(4);
  });

  it('closes a connection whose headers do not complete in time, and one that stays silent', async () => {
    const { server, port } = await serveMetrics(new Metrics(), '127.0.0.1', 0, () => true, {
      headersTimeoutMs: 300,
      requestTimeoutMs: 600,
      idleTimeoutMs: 400,
    });
    cleanups.push(() => server.close());
    const flood = await startFlood({ host: '127.0.0.1', port, idle: 3, slow: 3, dripMs: 100 });
    cleanups.push(() => flood.close());
    await waitFor('every slow and idle connection closed', () => flood.open() === 0, 5000, 20);
    expect(flood.closedByServer()).toBe(6);
  });
});
