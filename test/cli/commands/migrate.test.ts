import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ExitCode } from '../../../src/cli/exit-codes.js';
import { startHostileServer, type HostileServer } from '../../../harness/hostile-server.js';
import { startScriptedApiserver, withKubeconfig, type ScriptedApiserver } from '../../../harness/scripted-apiserver.js';
import { cli } from '../../helpers.js';

const servers: (HostileServer | ScriptedApiserver)[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
});

const LIST = '/apis/kubefledged.io/v1alpha2/imagecaches';

/** A cluster whose kube-fledged ImageCache list holds `items`. */
async function fromCluster(items: unknown) {
  const server = await startScriptedApiserver((path) =>
    path === LIST
      ? { status: 200, body: { apiVersion: 'kubefledged.io/v1alpha2', kind: 'ImageCacheList', metadata: {}, items } }
      : undefined,
  );
  servers.push(server);
  return withKubeconfig(server.url, () => cli('migrate', '--from-cluster'));
}

const cache = (namespace: string, name: string, spec: unknown = { cacheSpec: [{ images: ['redis:7'] }] }) => ({
  apiVersion: 'kubefledged.io/v1alpha2',
  kind: 'ImageCache',
  metadata: { name, namespace, uid: 'u', resourceVersion: '1' },
  spec,
});

describe('migrate --from-cluster', () => {
  it('converts team--a/c and team/a--c, whose construct ids once collided', async () => {
    const r = await fromCluster([cache('team--a', 'c'), cache('team', 'a--c')]);
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    const docs = parseAllDocuments(r.stdout).map((d) => d.toJS() as { metadata: { name: string; namespace: string } });
    expect(docs.map((d) => `${d.metadata.namespace}/${d.metadata.name}`)).toEqual(['team/a--c', 'team--a/c']);
  });

  it.each<[string, unknown, string]>([
    ['a null item', [cache('ns', 'a'), null], 'cluster ImageCache list: error: items[1]: must be an ImageCache, got null'],
    [
      'a cacheSpec that is not a list',
      [cache('ns', 'b', { cacheSpec: 'redis:7' })],
      'cluster ImageCache ns/b: error: spec.cacheSpec: must be a list, got the string "redis:7"',
    ],
    ['items that are not a list', { a: 1 }, 'cluster ImageCache list: error: items: must be a list'],
  ])('%s is exit 1 naming the object and the field, nothing on stdout', async (_what, items, line) => {
    const r = await fromCluster(items);
    expect(r.code, r.stderr).toBe(ExitCode.InvalidInput);
    expect(r.stderr).toContain(`\n${line}\n`);
    expect(r.stderr).toMatch(/^prewarm: 1 error in the cluster's ImageCaches; nothing was converted:\n/);
    expect(r.stdout).toBe('');
  });

  it('an apiserver error is one escaped, bounded line', async () => {
    const server = await startHostileServer({ kind: 'status', status: 500 });
    servers.push(server);
    const r = await withKubeconfig(server.url, () => cli('migrate', '--from-cluster'));
    expect(r.code).toBe(ExitCode.Internal);
    expect(r.stderr).toMatch(/^prewarm: cannot list kubefledged.io\/v1alpha2 imagecaches: HTTP 500: \\x1b\[2J.*m… \(\d+ chars\)\n$/);
  });
});

describe('migrate (files)', () => {
  it('prints at most 100 diagnostics, then one line that counts the rest', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-migrate-'));
    const images = Array.from({ length: 300 }, (_, i) => `Bad${i}:1`).join(', ');
    await writeFile(
      join(dir, 'a.yaml'),
      `apiVersion: kubefledged.io/v1alpha2\nkind: ImageCache\nmetadata: {name: c, namespace: ns}\nspec:\n  cacheSpec:\n  - images: [${images}]\n`,
    );
    const r = await cli('migrate', dir);
    expect(r.code).toBe(ExitCode.InvalidInput);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines.filter((l) => l.includes(': error: '))).toHaveLength(100);
    expect(lines).toContain('... and 200 more errors, not shown (only the first 100 are)');
    expect(lines.at(-1)).toBe('prewarm: 300 errors found; nothing was converted');
    expect(r.stdout).toBe('');
  });
});
