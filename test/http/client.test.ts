/**
 * The one HTTP exchange of the sidecar and the CLI against servers that misbehave
 * (harness/hostile-server.ts): every request ends within its total deadline and under its body
 * cap, and error text from a server reaches a message escaped and bounded. Elapsed checks are
 * bounds with a wide margin, not timings.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { KubeHttp, MAX_WATCH_NESTS, request, tooManyNests } from '../../src/http/client.js';
import { ApiError } from '../../src/http/api-error.js';
import { startHostileServer, type HostileBehaviour, type HostileServer } from '../../harness/hostile-server.js';
import { startScriptedApiserver } from '../../harness/scripted-apiserver.js';

let server: HostileServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

async function start(behaviour: HostileBehaviour): Promise<HostileServer> {
  server = await startHostileServer(behaviour);
  return server;
}

describe('request', () => {
  it.each<HostileBehaviour>([{ kind: 'silent' }, { kind: 'drip-head', everyMs: 50 }, { kind: 'drip-body', everyMs: 50 }])(
    'ends a $kind exchange at its total deadline, though bytes keep coming',
    async (behaviour) => {
      const s = await start(behaviour);
      const started = Date.now();
      const err = await request({ method: 'GET', url: new URL(`${s.url}/x`), timeoutMs: 800 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe(0);
      expect((err as ApiError).message).toMatch(/within 800 ms|timeout after 800 ms/);
      expect(Date.now() - started).toBeGreaterThanOrEqual(700);
      expect(Date.now() - started).toBeLessThan(5_000);
    },
  );

  it('fails a body over its cap instead of reading on', async () => {
    const s = await start({ kind: 'endless-body' });
    const err = await request({ method: 'GET', url: new URL(`${s.url}/x`), maxBody: 1 << 20, timeoutMs: 20_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).message).toContain(`response body over ${1 << 20} bytes`);
  });
});

describe('KubeHttp', () => {
  it.each<HostileBehaviour>([
    { kind: 'huge-error', status: 500, bytes: 300 << 10 },
    { kind: 'status', status: 500 },
    { kind: 'status', status: 403 },
  ])('turns a $kind answer into one bounded line without raw escapes', async (behaviour) => {
    const s = await start(behaviour);
    const kube = new KubeHttp({ server: s.url, requestTimeoutMs: 5_000 });
    try {
      const err = await kube.json('GET', '/api/v1/nodes').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      const message = (err as ApiError).message;
      expect((err as ApiError).code).toBe(behaviour.kind === 'status' ? behaviour.status : 500);
      // A 500-character excerpt of the answer, escaped (a control character takes up to 6): bounded, whatever the server sends.
      expect(message.length).toBeLessThan(1_500);
      expect(/[\p{Cc}\u202e]/u.test(message)).toBe(false);
    } finally {
      kube.close();
    }
  });

  it('refuses an answer that is not JSON with its status code, not as a transport error', async () => {
    const s = await start({ kind: 'truncated-json', keep: 40 });
    const kube = new KubeHttp({ server: s.url });
    try {
      await expect(kube.json('GET', '/api/v1/nodes')).rejects.toMatchObject({ code: 200, reason: 'NotJSON' });
    } finally {
      kube.close();
    }
  });

  it('ends a JSON request at the endpoint deadline', async () => {
    const s = await start({ kind: 'silent' });
    const kube = new KubeHttp({ server: s.url, requestTimeoutMs: 500 });
    try {
      const started = Date.now();
      await expect(kube.json('GET', '/api/v1/nodes')).rejects.toMatchObject({ code: 0 });
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      kube.close();
    }
  });

  it('gives up a watch whose one event never ends', async () => {
    const s = await start({ kind: 'endless-body' });
    const kube = new KubeHttp({ server: s.url });
    try {
      const seen: unknown[] = [];
      const err = await kube.watch('/api/v1/nodes?watch=1', (o) => seen.push(o), new AbortController().signal).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).message).toContain('watch: an event over');
      expect(seen).toEqual([]);
    } finally {
      kube.close();
    }
  });

  it('refuses to parse a watch event of more objects than any pod holds: 1.3 M nested arrays in a 2.6 MB line', async () => {
    const depth = 1_300_000;
    const line = `{"type":"ADDED","object":{"metadata":{"name":"p"},"spec":${'['.repeat(depth)}${']'.repeat(depth)}}}\n`;
    const s = await startScriptedApiserver(() => ({ status: 200, body: line }));
    const kube = new KubeHttp({ server: s.url });
    try {
      const seen: unknown[] = [];
      const err = await kube.watch('/api/v1/pods?watch=true', (o) => seen.push(o), new AbortController().signal).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).message).toBe(`watch: an event of over ${MAX_WATCH_NESTS} objects and arrays`);
      expect(seen).toEqual([]);
    } finally {
      kube.close();
      await s.stop();
    }
  });

  it('parses a watch event of a pod with many containers', async () => {
    const containers = Array.from({ length: 1000 }, (_, i) => ({ name: `c${i}`, image: `reg/i${i}:1`, resources: { limits: {} } }));
    const line = `${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'p' }, spec: { containers } } })}\n`;
    const s = await startScriptedApiserver(() => ({ status: 200, body: line }));
    const kube = new KubeHttp({ server: s.url });
    try {
      const seen: unknown[] = [];
      await kube.watch('/api/v1/pods?watch=true', (o) => seen.push(o), new AbortController().signal);
      expect(seen).toHaveLength(1);
    } finally {
      kube.close();
      await s.stop();
    }
  });
});

/** A watch event of a pod with `n` containers, each with its status and the managedFields entries a real one carries. */
function podEvent(n: number): string {
  const names = Array.from({ length: n }, (_, i) => `c${i}`);
  const fields = Object.fromEntries(
    names.map((c) => [
      `k:{"name":"${c}"}`,
      { '.': {}, 'f:image': {}, 'f:resources': { '.': {}, 'f:limits': { '.': {}, 'f:cpu': {} } }, 'f:volumeMounts': { '.': {} } },
    ]),
  );
  return JSON.stringify({
    type: 'MODIFIED',
    object: {
      metadata: { name: 'p', managedFields: [{ manager: 'kube-controller-manager', fieldsV1: { 'f:spec': { 'f:containers': fields } } }] },
      spec: { containers: names.map((c) => ({ name: c, image: `reg/${c}:1`, command: ['/prewarm/busybox', 'sleep', 'infinity'] })) },
      status: {
        containerStatuses: names.map((c) => ({ name: c, image: `reg/${c}:1`, state: { running: { startedAt: '2026-12-07T08:00:00Z' } } })),
      },
    },
  });
}

describe('tooManyNests', () => {
  /** `line` with its steps counted: each search, and each character read one at a time. */
  const counted = (line: string): { text: Pick<string, 'length' | 'indexOf'>; searches: () => number } => {
    let searches = 0;
    const text = {
      length: line.length,
      indexOf: (s: string, from?: number) => (searches++, line.indexOf(s, from)),
      charCodeAt: (i: number) => (searches++, line.charCodeAt(i)),
      at: (i: number) => (searches++, line.at(i)),
    };
    return { text, searches: () => searches };
  };

  it('costs one string search per bracket of a pod event, not a step per character', () => {
    const line = podEvent(400);
    expect(line.length).toBeGreaterThan(MAX_WATCH_NESTS);
    const brackets = line.replace(/[^{[]/g, '').length;
    const { text, searches } = counted(line);
    expect(tooManyNests(text, MAX_WATCH_NESTS)).toBe(false);
    // One search finds each bracket and one per kind finds none left.
    expect(searches()).toBe(brackets + 2);
    expect(searches()).toBeLessThan(line.length / 10);
  });

  it('stops searching once past its bound', () => {
    const { text, searches } = counted(`${'['.repeat(50)}${'{'.repeat(50)}`);
    expect(tooManyNests(text, 30)).toBe(true);
    expect(searches()).toBe(31);
  });

  it('does not search a line shorter than its bound, which cannot hold more', () => {
    const { text, searches } = counted('{"type":"ADDED","object":{"metadata":{"name":"p"}}}');
    expect(tooManyNests(text, 100)).toBe(false);
    expect(searches()).toBe(0);
  });

  it('counts brackets of both kinds, inside strings too', () => {
    expect(tooManyNests('[{"a":"[{"}]', 4)).toBe(false);
    expect(tooManyNests('[{"a":"[{["}]', 4)).toBe(true);
  });
});
