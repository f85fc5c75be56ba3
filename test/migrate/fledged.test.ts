import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { InPlaceError, migrateObjects, migrateText, readClusterObjects } from '../../src/migrate/fledged.js';
import { formatDiagnostic } from '../../src/imagecache/errors.js';
import { buildBundle } from '../../src/imagecache/bundle.js';
import { parseFiles } from '../../src/imagecache/parse.js';

function placement(text: string) {
  const parsed = parseFiles([{ path: 'x.yaml', text }]);
  expect(parsed.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return buildBundle(parsed.caches).bundle.pools.map((p) => ({
    key: p.key,
    images: p.images.map((i) => i.canonical),
    secrets: p.imagePullSecrets,
  }));
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

/** Lines joined with `eol`, ending with one. */
const lines = (eol: string, ...l: string[]) => l.map((x) => x + eol).join('');
const pw =
  'apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: pw}   # team cache\nspec:\n  cacheSpec:\n    - images: [redis:7]\n      tolerations: []\n';

describe('migrateText: only the spans that change', () => {
  it.each<[string, string, string]>([
    ['a prewarm.dev file: nothing to convert, every byte kept', pw, pw],
    [
      'kube-fledged block style: apiVersion, and tolerations at the sequence style of the file',
      lines(
        '\n',
        'apiVersion: kubefledged.io/v1alpha2   # was',
        'kind: ImageCache',
        'metadata: {name: a}',
        'spec:',
        '  cacheSpec:',
        '  - images:',
        '    - redis:7   # cache',
        '    nodeSelector: {tier: backend}',
      ),
      lines(
        '\n',
        'apiVersion: prewarm.dev/v1alpha1   # was',
        'kind: ImageCache',
        'metadata: {name: a}',
        'spec:',
        '  cacheSpec:',
        '  - images:',
        '    - redis:7   # cache',
        '    nodeSelector: {tier: backend}',
        '    tolerations:',
        '    - operator: Exists',
      ),
    ],
    [
      'indented sequences get indented tolerations',
      lines(
        '\n',
        'apiVersion: "kubefledged.io/v1alpha2"',
        'kind: ImageCache',
        'metadata:',
        '    name: a',
        'spec:',
        '    cacheSpec:',
        '        -   images:',
        '                - redis:7',
      ),
      lines(
        '\n',
        'apiVersion: "prewarm.dev/v1alpha1"',
        'kind: ImageCache',
        'metadata:',
        '    name: a',
        'spec:',
        '    cacheSpec:',
        '        -   images:',
        '                - redis:7',
        '            tolerations:',
        '              - operator: Exists',
      ),
    ],
    [
      'CRLF lines stay CRLF, added ones too; a BOM stays',
      '\uFEFF' +
        lines(
          '\r\n',
          'apiVersion: kubefledged.io/v1alpha2',
          'kind: ImageCache',
          'metadata: {name: a}',
          'spec:',
          '  cacheSpec:',
          '  - images: [redis:7]   # caf\u00e9',
        ),
      '\uFEFF' +
        lines(
          '\r\n',
          'apiVersion: prewarm.dev/v1alpha1',
          'kind: ImageCache',
          'metadata: {name: a}',
          'spec:',
          '  cacheSpec:',
          '  - images: [redis:7]   # caf\u00e9',
          '    tolerations:',
          '    - operator: Exists',
        ),
    ],
    [
      'no final newline',
      'apiVersion: kubefledged.io/v1alpha2\nkind: ImageCache\nmetadata: {name: a}\nspec:\n  cacheSpec:\n  - images: [redis:7]',
      'apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: a}\nspec:\n  cacheSpec:\n  - images: [redis:7]\n    tolerations:\n    - operator: Exists',
    ],
    [
      'flow entries get a flow pair',
      'apiVersion: kubefledged.io/v1alpha2\nkind: ImageCache\nmetadata: {name: a}\nspec: {cacheSpec: [{images: [redis:7]}, {images: [b:1], nodeSelector: {a: b}, tolerations: []}]}\n',
      'apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: a}\nspec: {cacheSpec: [{images: [redis:7], tolerations: [{operator: Exists}]}, {images: [b:1], nodeSelector: {a: b}, tolerations: []}]}\n',
    ],
    [
      'JSON on one line stays JSON on one line',
      '{"apiVersion": "kubefledged.io/v1alpha2", "kind": "ImageCache", "metadata": {"name": "a", "uid": "u-1"}, "spec": {"cacheSpec": [{"images": ["redis:7"]}]}, "status": {"status": "Succeeded"}}\n',
      '{"apiVersion": "prewarm.dev/v1alpha1", "kind": "ImageCache", "metadata": {"name": "a"}, "spec": {"cacheSpec": [{"images": ["redis:7"], "tolerations": [{"operator":"Exists"}]}]}}\n',
    ],
    [
      'indented JSON keeps its indentation',
      lines(
        '\n',
        '{',
        '  "apiVersion": "kubefledged.io/v1alpha2",',
        '  "kind": "ImageCache",',
        '  "metadata": {',
        '    "uid": "u-1",',
        '    "resourceVersion": "9",',
        '    "name": "a"',
        '  },',
        '  "spec": {',
        '    "cacheSpec": [',
        '      {',
        '        "images": ["redis:7"]',
        '      }',
        '    ]',
        '  }',
        '}',
      ),
      lines(
        '\n',
        '{',
        '  "apiVersion": "prewarm.dev/v1alpha1",',
        '  "kind": "ImageCache",',
        '  "metadata": {',
        '    "name": "a"',
        '  },',
        '  "spec": {',
        '    "cacheSpec": [',
        '      {',
        '        "images": ["redis:7"], "tolerations": [{"operator":"Exists"}]',
        '      }',
        '    ]',
        '  }',
        '}',
      ),
    ],
    [
      'cluster-only fields and kube-fledged annotations go, with their lines and comments; other annotations stay',
      lines(
        '\n',
        'apiVersion: kubefledged.io/v1alpha2',
        'kind: ImageCache',
        'metadata:',
        '  name: a',
        '  uid: 1234   # from kubectl get',
        '  creationTimestamp: "2024-01-01T00:00:00Z"',
        '  managedFields:',
        '  - manager: kubectl',
        '    operation: Update',
        '  annotations:',
        '    kubefledged.io/refresh-imagecache: refresh',
        '    team: ml   # kept',
        '  labels: {app: x}',
        'spec:',
        '  cacheSpec:',
        '  - images: [redis:7]',
        '    tolerations: [{operator: Exists}]',
        'status:',
        '  status: Succeeded',
        '  failures:',
        '    x: [1]',
        '---',
        'kind: ConfigMap   # untouched',
        'metadata: {name: c, uid: 1}',
      ),
      lines(
        '\n',
        'apiVersion: prewarm.dev/v1alpha1',
        'kind: ImageCache',
        'metadata:',
        '  name: a',
        '  annotations:',
        '    team: ml   # kept',
        '  labels: {app: x}',
        'spec:',
        '  cacheSpec:',
        '  - images: [redis:7]',
        '    tolerations: [{operator: Exists}]',
        '---',
        'kind: ConfigMap   # untouched',
        'metadata: {name: c, uid: 1}',
      ),
    ],
    [
      'annotations left empty go, in flow style; leading flow pairs go with their commas',
      'apiVersion: kubefledged.io/v1alpha2\nkind: ImageCache\nmetadata: {uid: 1, resourceVersion: "2", name: a, annotations: {kubectl.kubernetes.io/last-applied-configuration: "{}"}, generation: 3}\nspec: {cacheSpec: [{images: [redis:7], tolerations: []}]}\n',
      'apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: a}\nspec: {cacheSpec: [{images: [redis:7], tolerations: []}]}\n',
    ],
    [
      'an apiVersion written as a block scalar becomes a plain one',
      'apiVersion: >-\n  kubefledged.io/v1alpha2\nkind: ImageCache\nmetadata: {name: a}\nspec: {cacheSpec: [{images: [redis:7], tolerations: []}]}\n',
      'apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: a}\nspec: {cacheSpec: [{images: [redis:7], tolerations: []}]}\n',
    ],
    [
      'an anchored metadata map is edited where it is written',
      'apiVersion: kubefledged.io/v1alpha2\nkind: ImageCache\nmetadata: &m {name: a, uid: 1}\nspec: {cacheSpec: [{images: [redis:7], tolerations: []}]}\n',
      'apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: &m {name: a}\nspec: {cacheSpec: [{images: [redis:7], tolerations: []}]}\n',
    ],
  ])('%s', (_name, source, expected) => {
    const { text, converted } = migrateText(source);
    expect(text).toBe(expected);
    expect(converted).toBe(source === expected ? 0 : 1);
  });

  it('refuses a layout it cannot edit in place, naming the document', () => {
    const source =
      'kind: ConfigMap\n---\napiVersion: kubefledged.io/v1alpha2\nkind: ImageCache\nmetadata: {name: a}\nspec: {cacheSpec: [{images: [redis:7], tolerations: []}]}\n? status\n: {status: x}\n';
    expect(() => migrateText(source)).toThrow(new InPlaceError(2, 'cannot remove status: it shares its line with other syntax'));
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
      spec: {
        cacheSpec: [{ images: ['nginx:1'], nodeSelector: { tier: 'web' }, tolerations: [{ operator: 'Exists' }] }],
        imagePullSecrets: [{ name: 's' }],
      },
    });
  });

  it('sorts in code-point order whatever the locale (Estonian collation puts z before t)', () => {
    const script =
      "import { migrateObjects } from './src/migrate/fledged.ts';" +
      "const yaml = migrateObjects(['t', 'z', 's'].map((name) => ({ metadata: { name, namespace: 'ns' }, spec: { cacheSpec: [{ images: ['redis:7'] }] } })));" +
      'console.log(JSON.stringify([...yaml.matchAll(/^  name: (\\w+)$/gm)].map((m) => m[1])));';
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      env: { ...process.env, LC_ALL: 'et_EE.UTF-8' },
      encoding: 'utf8',
    });
    expect(JSON.parse(out)).toEqual(['s', 't', 'z']);
  }, 60_000);
});

describe('readClusterObjects', () => {
  const cache = (namespace: string, name: string, spec: unknown = { cacheSpec: [{ images: ['redis:7'] }] }) => ({
    apiVersion: 'kubefledged.io/v1alpha2',
    kind: 'ImageCache',
    metadata: { name, namespace, uid: 'u', resourceVersion: '7', managedFields: [{ manager: 'kubectl' }] },
    spec,
    status: { status: 'Succeeded' },
  });
  const messages = (items: unknown) => readClusterObjects(items).diagnostics.map(formatDiagnostic);

  it('names whose construct ids would collide (team--a/c and team/a--c) both convert', () => {
    const read = readClusterObjects([cache('team--a', 'c'), cache('team', 'a--c')]);
    expect(read.diagnostics).toEqual([]);
    const docs = migrateObjects(read.objects)
      .split(/^---$/m)
      .map((d) => parse(d));
    expect(docs.map((d) => `${d.metadata.namespace}/${d.metadata.name}`)).toEqual(['team/a--c', 'team--a/c']);
  });

  it('null items, a cacheSpec that is not a list and bad entries are errors naming the object and the field', () => {
    expect(messages([cache('ns', 'ok'), null, 3])).toEqual([
      'cluster ImageCache list: error: items[1]: must be an ImageCache, got null',
      'cluster ImageCache list: error: items[2]: must be an ImageCache, got number',
    ]);
    expect(messages([cache('ns', 'd', { cacheSpec: { images: ['a'] } })])).toEqual([
      'cluster ImageCache ns/d: error: spec.cacheSpec: must be a list, got a mapping',
    ]);
    expect(messages([cache('ns', 'e', { cacheSpec: [null, { images: [null] }] })])).toEqual([
      'cluster ImageCache ns/e: error: spec.cacheSpec[0]: must be a mapping, got null',
      'cluster ImageCache ns/e: error: spec.cacheSpec[1].images[0]: must be a string, got null',
    ]);
    expect(messages({ not: 'a list' })).toEqual(['cluster ImageCache list: error: items: must be a list']);
    expect(readClusterObjects([null]).objects).toEqual([]);
  });
});
