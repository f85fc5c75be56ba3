import { describe, expect, it } from 'vitest';
import { applyPins, findImages, needsPin, pinnedRef, type ImageSite } from '../../src/imagecache/pin.js';
import { manyAliases } from '../../harness/hostile-specs.js';

const D = `sha256:${'b'.repeat(64)}`;
const spec = `# team images
apiVersion: prewarm.dev/v1alpha1
kind: ImageCache
metadata: {name: c}
spec:
  cacheSpec:
    - images:
        - python:3.12-slim        # base
        - 'redis:7'
        - nginx@${D}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-a-cache}
data: {image: "python:3.12-slim"}
`;

describe('pin', () => {
  it('finds every image of ImageCache documents only, with exact spans', () => {
    const sites = findImages(spec);
    expect(sites.map((s) => s.text)).toEqual(['python:3.12-slim', 'redis:7', `nginx@${D}`]);
    for (const s of sites) expect(spec.slice(s.start, s.end)).toBe(s.text);
  });

  it('locates each image the way diagnostics do: file, document, line:column of the scalar, field path', () => {
    const sites = findImages(`---\n${spec}`, 'specs/a.yaml');
    expect(sites.map((s) => s.location)).toEqual([
      { file: 'specs/a.yaml', document: 1, line: 9, column: 11, path: 'spec.cacheSpec[0].images[0]' },
      { file: 'specs/a.yaml', document: 1, line: 10, column: 11, path: 'spec.cacheSpec[0].images[1]' },
      { file: 'specs/a.yaml', document: 1, line: 11, column: 11, path: 'spec.cacheSpec[0].images[2]' },
    ]);
    const flow =
      'kind: ConfigMap\n---\napiVersion: kubefledged.io/v1alpha2\nkind: ImageCache\nspec:\n  cacheSpec:\n  - {}\n  - images: [a:1, "b:2"]\n';
    expect(
      findImages(flow, 'f.yaml').map((s) => [s.text, s.location.document, s.location.line, s.location.column, s.location.path]),
    ).toEqual([
      ['a:1', 2, 8, 14, 'spec.cacheSpec[1].images[0]'],
      ['b:2', 2, 8, 19, 'spec.cacheSpec[1].images[1]'],
    ]);
  });

  it('needs a pin only for valid references without a digest', () => {
    expect(needsPin('python:3.12')).toBe(true);
    expect(needsPin(`nginx@${D}`)).toBe(false);
    expect(needsPin('Bad:1')).toBe(false);
  });

  it('rewrites tag into tag@digest and keeps every other byte, comments and quotes included', () => {
    const digests = new Map([
      ['python:3.12-slim', `sha256:${'1'.repeat(64)}`],
      ['redis:7', `sha256:${'2'.repeat(64)}`],
    ]);
    const out = applyPins(spec, findImages(spec), digests);
    expect(out).toBe(
      spec
        .replace('- python:3.12-slim        # base', `- python:3.12-slim@sha256:${'1'.repeat(64)}        # base`)
        .replace("'redis:7'", `'redis:7@sha256:${'2'.repeat(64)}'`),
    );
    expect(out).toContain('data: {image: "python:3.12-slim"}');
  });

  it('pins a reference without a tag as :latest@digest, the tag it stood for', () => {
    expect(pinnedRef('redis', D)).toBe(`redis:latest@${D}`);
    expect(pinnedRef('reg.example:5000/team/app', D)).toBe(`reg.example:5000/team/app:latest@${D}`);
    expect(pinnedRef('reg.example:5000/team/app:v1', D)).toBe(`reg.example:5000/team/app:v1@${D}`);
    const text = 'apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nspec:\n  cacheSpec:\n  - images: [redis]\n';
    expect(applyPins(text, findImages(text), new Map([['redis', D]]))).toBe(text.replace('[redis]', `[redis:latest@${D}]`));
  });

  it('marks block scalars and escaped strings as not rewritable and leaves them alone; CRLF lines stay CRLF', () => {
    const text =
      'apiVersion: prewarm.dev/v1alpha1\r\nkind: ImageCache\r\nspec:\r\n  cacheSpec:\r\n    - images:\r\n        - redis:7\r\n        - "a\\x3a1"\r\n        - |-\r\n          b:1\r\n';
    const sites = findImages(text);
    expect(sites.map((s) => [s.text, s.literal])).toEqual([
      ['redis:7', true],
      ['a:1', false],
      ['b:1', false],
    ]);
    const digests = new Map([
      ['redis:7', D],
      ['a:1', D],
      ['b:1', D],
    ]);
    expect(applyPins(text, sites, digests)).toBe(text.replace('- redis:7\r\n', `- redis:7@${D}\r\n`));
  });

  it('is idempotent: pinned references are not found again', () => {
    const digests = new Map([['redis:7', D]]);
    const once = applyPins(spec, findImages(spec), digests);
    expect(
      findImages(once)
        .filter((s) => needsPin(s.text))
        .map((s) => s.text),
    ).toEqual(['python:3.12-slim']);
  });

  const head = 'apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\n';
  it.each<[string, string, [string, boolean, number, string, ImageSite['alias']][]]>([
    [
      'an alias of an image field is pinned with it',
      `${head}metadata: {name: c}\nspec:\n  cacheSpec:\n  - images: [&img redis:7, *img]\n`,
      [['redis:7', true, 6, 'spec.cacheSpec[0].images[0]', undefined]],
    ],
    [
      'a shared images list is found once',
      `${head}metadata: {name: c}\nspec:\n  cacheSpec:\n  - images: &common [redis:7]\n  - images: *common\n    nodeSelector: {a: b}\n`,
      [['redis:7', true, 6, 'spec.cacheSpec[0].images[0]', undefined]],
    ],
    [
      'an alias of an annotation cannot be pinned',
      `${head}metadata:\n  name: c\n  annotations: {img: &img redis:7}\nspec:\n  cacheSpec:\n  - images:\n    - busybox:1\n    - *img\n`,
      [
        ['busybox:1', true, 9, 'spec.cacheSpec[0].images[0]', undefined],
        ['redis:7', false, 10, 'spec.cacheSpec[0].images[1]', { anchor: 'img', anchorLine: 5, merge: false }],
      ],
    ],
    [
      'images merged in from a mapping written in place are pinned there',
      `${head}metadata: {name: c}\nspec:\n  cacheSpec:\n  - <<: {images: [redis:7]}\n    nodeSelector: {a: b}\n`,
      [['redis:7', true, 6, 'spec.cacheSpec[0].images[0]', undefined]],
    ],
    [
      'an entry merged from another shares its images, found once',
      `${head}metadata: {name: c}\nspec:\n  cacheSpec:\n  - &e {images: [redis:7], nodeSelector: {a: b}}\n  - <<: *e\n    nodeSelector: {c: d}\n`,
      [['redis:7', true, 6, 'spec.cacheSpec[0].images[0]', undefined]],
    ],
    [
      'a helperImage is not an image of the spec (the invocation chooses it): never found, never pinned',
      `${head}metadata: {name: c}\nspec:\n  helperImage: busybox:1\n  cacheSpec:\n  - images: [redis@${D}]\n`,
      [[`redis@${D}`, true, 7, 'spec.cacheSpec[0].images[0]', undefined]],
    ],
  ])('%s', (_name, text, expected) => {
    const sites = findImages(text, 'a.yaml');
    expect(sites.map((s) => [s.text, s.literal, s.location.line, s.location.path, s.alias])).toEqual(expected);
    for (const s of sites.filter((x) => x.alias !== undefined)) expect(text.slice(s.start, s.end)).toMatch(/^\*/);
    // Nothing given through an alias is ever rewritten.
    expect(
      applyPins(
        text,
        sites.filter((x) => x.alias !== undefined),
        new Map(sites.map((x) => [x.text, D])),
      ),
    ).toBe(text);
  });

  it('keeps Latin-1 characters (read one per byte) around the references it rewrites', () => {
    const text = `# caf\xe9 \xfcber\r\n${head}metadata: {name: c}   # \xe9\r\nspec:\r\n  cacheSpec:\r\n  - images: [redis:7]   # \xa9\r\n`;
    expect(applyPins(text, findImages(text), new Map([['redis:7', D]]))).toBe(text.replace('[redis:7]', `[redis:7@${D}]`));
  });
});

// The test timeout is the bound: a quadratic walk over these inputs runs far past it. Speed is
// bench:loader's to measure, not a wall-clock assertion's.
describe('findImages in linear time, as the loader reads', () => {
  it('32,000 aliases of one image: one site, within the bound (the library resolved each alias by walking the document)', () => {
    const sites = findImages(manyAliases(32_000), 'bomb.yaml');
    expect(sites.map((s) => [s.text, s.literal])).toEqual([['x:1', true]]);
  }, 30_000);

  it('8,000 documents of one image each: every site, within the bound (no work over the earlier documents per document)', () => {
    const docs = Array.from(
      { length: 8_000 },
      (_, i) =>
        `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: c${i}}\nspec:\n  cacheSpec: [{images: ["r.example/app-${i}:v1"]}]\n`,
    );
    const sites = findImages(docs.join('---\n'), 'many.yaml');
    expect(sites).toHaveLength(8_000);
    expect(sites[7_999]?.location).toMatchObject({ document: 8_000, path: 'spec.cacheSpec[0].images[0]' });
  }, 30_000);
});
