import { afterEach, describe, expect, it } from 'vitest';
import { FakeApiserver } from '../../harness/fake-apiserver.js';
import { KubeHttp } from '../../src/http/client.js';
import { IMAGES, gate, node, pod, st } from '../reconciler/fixtures.js';

/** The fake refuses what kube-apiserver refuses, so the sidecar cannot pass against it and fail on a cluster. */
describe('the fake apiserver refuses what kube-apiserver refuses', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  async function serve(token?: string, callerToken = token) {
    const api = await new FakeApiserver(
      pod(IMAGES, [st.creating('c1'), st.creating('c2')]),
      node({ taints: [gate] }),
      token === undefined ? {} : { token },
    ).start();
    const http = new KubeHttp({ server: api.url, ...(callerToken === undefined ? {} : { token: () => callerToken }) });
    close = async () => {
      http.close();
      await api.stop();
    };
    return { api, http };
  }

  const event = (namespace: string, involvedNamespace?: string) => ({
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: 'pull-a-xyz.1', namespace },
    involvedObject: { apiVersion: 'v1', kind: 'Node', name: 'node-a', ...(involvedNamespace ? { namespace: involvedNamespace } : {}) },
    reason: 'Warm',
    message: 'warm',
  });

  it('a request without the bearer token it was given is 401', async () => {
    const { http } = await serve('s3cret', 'wrong');
    await expect(http.json('GET', '/api/v1/nodes/node-a')).rejects.toMatchObject({ code: 401, reason: 'Unauthorized' });
    await close?.();
    const ok = await serve('s3cret');
    await expect(ok.http.json('GET', '/api/v1/nodes/node-a')).resolves.toMatchObject({ metadata: { name: 'node-a' } });
  });

  it('a Node Event lives in default: elsewhere 422, a body namespace unlike the path 400, a name taken 409', async () => {
    const { api, http } = await serve();
    await expect(http.json('POST', '/api/v1/namespaces/prewarm/events', event('prewarm'))).rejects.toMatchObject({
      code: 422,
      reason: 'Invalid',
      message: expect.stringContaining('involvedObject.namespace: Invalid value: "": does not match event.namespace') as unknown,
    });
    await expect(http.json('POST', '/api/v1/namespaces/default/events', event('prewarm'))).rejects.toMatchObject({
      code: 400,
      reason: 'BadRequest',
    });
    await expect(http.json('POST', '/api/v1/namespaces/default/events', event('default'))).resolves.toMatchObject({
      metadata: { name: 'pull-a-xyz.1', namespace: 'default' },
    });
    await expect(http.json('POST', '/api/v1/namespaces/default/events', event('default'))).rejects.toMatchObject({
      code: 409,
      reason: 'AlreadyExists',
    });
    expect(api.events).toHaveLength(1);
  });

  it('a JSON patch removing a taint past the end is 422, and the node is unchanged', async () => {
    const { api, http } = await serve();
    const ops = [{ op: 'remove', path: '/spec/taints/1' }];
    await expect(http.json('PATCH', '/api/v1/nodes/node-a', ops, 'application/json-patch+json')).rejects.toMatchObject({ code: 422 });
    expect(api.node.spec?.taints).toEqual([gate]);
  });

  it('a JSON patch test compares JSON values, not their key order', async () => {
    const { api, http } = await serve();
    const reordered = Object.fromEntries(Object.entries(gate).reverse());
    const ops = [
      { op: 'test', path: '/spec/taints/0', value: reordered },
      { op: 'remove', path: '/spec/taints/0' },
    ];
    await http.json('PATCH', '/api/v1/nodes/node-a', ops, 'application/json-patch+json');
    expect(api.node.spec?.taints).toEqual([]);
  });

  it('a watch from a resourceVersion that is not a number is 422 before any event', async () => {
    const { http } = await serve();
    const watch = http.watch(
      '/api/v1/namespaces/prewarm/pods?watch=true&resourceVersion=abc',
      () => undefined,
      new AbortController().signal,
    );
    await expect(watch).rejects.toMatchObject({ code: 422, reason: 'Invalid' });
  });
});
