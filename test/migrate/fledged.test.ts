import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { migrateObjects, migrateText } from '../../src/migrate/fledged.js';
import { buildBundle } from '../../src/imagecache/bundle.js';
import { parseFiles } from '../../src/imagecache/parse.js';

function placement(text: string) {
  const parsed = parseFiles([{ path: 'x.yaml', text }]);
  expect(parsed.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return buildBundle(parsed.caches).bundle.pools.map((p) => ({ key: p.key, images: p.images.map((i) => i.canonical), secrets: p.imagePullSecrets }));
}

describe('migrateText', () => {
  it("converts kube-fledged's sample so that every image lands on the same nodes", async () => {
    const source = await readFile('examples/kube-fledged/imagecache.yaml', 'utf8');
    const { text, converted } = migrateText(source);
    expect(converted).toBe(1);
    expect(parse(text)).toMatchObject({ apiVersion: 'prewarm.dev/v1alpha1', kind: 'ImageCache' });
    expect(placement(text)).toEqual(placement(source));
  });

  it('keeps comments and the sequence style, and changes only the lines it must', async () => {
    const source = await readFile('examples/kube-fledged/imagecache.yaml', 'utf8');
    const { text } = migrateText(source);
    const removed = source.split('\n').filter((l) => !text.split('\n').includes(l));
    expect(removed).toEqual(['apiVersion: kubefledged.io/v1alpha2']);
    expect(text).toContain('# Name of the image cache.');
    expect(text).toContain('  - images:\n    - ghcr.io/jitesoft/nginx:1.23.1\n    tolerations:\n    - operator: Exists\n');
  });

  it('passes other documents through and drops cluster-only fields', () => {
    const source = [
      'apiVersion: prewarm.dev/v1alpha1',
      'kind: ImageCache',
      'metadata: {name: a}',
      'spec: {cacheSpec: [{images: ["redis:7"]}]}',
      '---',
      'apiVersion: kubefledged.io/v1alpha2',
      'kind: ImageCache',
      'metadata:',
      '  name: b',
      '  uid: 1234',
      '  resourceVersion: "99"',
      '  annotations: {kubefledged.io/refresh-imagecache: refresh, team: ml}',
      'spec: {cacheSpec: [{images: ["redis:7"], nodeSelector: {a: b}}]}',
      'status: {status: Succeeded}',
      '',
    ].join('\n');
    const { text, converted } = migrateText(source);
    expect(converted).toBe(1);
    const [first, second] = text.split(/^---$/m).map((d) => parse(d));
    expect(first.apiVersion).toBe('prewarm.dev/v1alpha1');
    expect(second).toEqual({
      apiVersion: 'prewarm.dev/v1alpha1',
      kind: 'ImageCache',
      metadata: { name: 'b', annotations: { team: 'ml' } },
      spec: { cacheSpec: [{ images: ['redis:7'], nodeSelector: { a: 'b' }, tolerations: [{ operator: 'Exists' }] }] },
    });
  });
});

describe('migrateObjects', () => {
  it('renders cluster objects through the generated ImageCache construct, sorted', () => {
    const yaml = migrateObjects([
      { metadata: { name: 'z', namespace: 'b' }, spec: { cacheSpec: [{ images: ['redis:7'] }] } },
      {
        metadata: { name: 'a', namespace: 'a', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' } },
        spec: { cacheSpec: [{ images: ['nginx:1'], nodeSelector: { tier: 'web' } }], imagePullSecrets: [{ name: 's' }] },
      },
    ]);
    const docs = yaml.split(/^---$/m).map((d) => parse(d));
    expect(docs.map((d) => `${d.metadata.namespace}/${d.metadata.name}`)).toEqual(['a/a', 'b/z']);
    expect(docs[0]).toEqual({
      apiVersion: 'prewarm.dev/v1alpha1',
      kind: 'ImageCache',
      metadata: { name: 'a', namespace: 'a' },
      spec: { cacheSpec: [{ images: ['nginx:1'], nodeSelector: { tier: 'web' }, tolerations: [{ operator: 'Exists' }] }], imagePullSecrets: [{ name: 's' }] },
    });
  });

  it('sorts in code-point order whatever the locale (Estonian collation puts z before t)', () => {
    const script =
      "import { migrateObjects } from './src/migrate/fledged.ts';" +
      "const yaml = migrateObjects(['t', 'z', 's'].map((name) => ({ metadata: { name, namespace: 'ns' }, spec: { cacheSpec: [{ images: ['redis:7'] }] } })));" +
      'console.log(JSON.stringify([...yaml.matchAll(/^  name: (\\w+)$/gm)].map((m) => m[1])));';
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env: { ...process.env, LC_ALL: 'et_EE.UTF-8' }, encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual(['s', 't', 'z']);
  }, 60_000);
});
