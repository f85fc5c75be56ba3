import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { classifyOutput, isPrewarmOutput, OUTPUT_MARKER, writeOutputMarker, type FolderEntry } from '../../src/cli/output-marker.js';

const file = (name: string): FolderEntry => ({ name, isFile: true });
const folder = (name: string): FolderEntry => ({ name, isFile: false });
const marker = (...names: string[]) => `# header\n${names.join('\n')}\n`;

describe('classifyOutput', () => {
  it.each<[string, FolderEntry[], string | undefined, ReturnType<typeof classifyOutput>]>([
    ['an empty folder', [], undefined, { kind: 'empty' }],
    [
      'marker and the files it lists',
      [file(OUTPUT_MARKER), file('prewarm-cluster.k8s.yaml'), file('prewarm-ns-ml.k8s.yaml')],
      marker('prewarm-cluster.k8s.yaml', 'prewarm-ns-ml.k8s.yaml'),
      { kind: 'output' },
    ],
    [
      'marker listing a file since removed',
      [file(OUTPUT_MARKER), file('prewarm-cluster.k8s.yaml')],
      marker('prewarm-cluster.k8s.yaml', 'prewarm-ns-ml.k8s.yaml'),
      { kind: 'output' },
    ],
    ['marker alone', [file(OUTPUT_MARKER)], marker(), { kind: 'output' }],
    [
      'marker with CRLF lines',
      [file(OUTPUT_MARKER), file('prewarm-ns-a.k8s.yaml')],
      '# x\r\nprewarm-ns-a.k8s.yaml\r\n',
      { kind: 'output' },
    ],
    [
      'a prewarm-named file the marker does not list',
      [file(OUTPUT_MARKER), file('prewarm-cluster.k8s.yaml'), file('prewarm-ns-extra.k8s.yaml')],
      marker('prewarm-cluster.k8s.yaml'),
      { kind: 'foreign', names: ['prewarm-ns-extra.k8s.yaml'] },
    ],
    [
      'a marker that lists a file synth never names',
      [file(OUTPUT_MARKER), file('README.md')],
      marker('README.md'),
      { kind: 'foreign', names: ['README.md'] },
    ],
    [
      'a README next to the output',
      [file(OUTPUT_MARKER), file('prewarm-cluster.k8s.yaml'), file('README.md')],
      marker('prewarm-cluster.k8s.yaml'),
      { kind: 'foreign', names: ['README.md'] },
    ],
    ['a kustomization.yaml', [file('kustomization.yaml')], undefined, { kind: 'foreign', names: ['kustomization.yaml'] }],
    [
      'a sub-folder',
      [file(OUTPUT_MARKER), folder('prewarm-ns-a.k8s.yaml')],
      marker('prewarm-ns-a.k8s.yaml'),
      { kind: 'foreign', names: ['prewarm-ns-a.k8s.yaml/'] },
    ],
    [
      'a marker that is a folder',
      [folder(OUTPUT_MARKER), file('prewarm-cluster.k8s.yaml')],
      undefined,
      { kind: 'foreign', names: [`${OUTPUT_MARKER}/`] },
    ],
    [
      'an unreadable marker',
      [file(OUTPUT_MARKER), file('prewarm-cluster.k8s.yaml')],
      undefined,
      { kind: 'foreign', names: [OUTPUT_MARKER] },
    ],
    [
      'a name with an invalid namespace',
      [file(OUTPUT_MARKER), file('prewarm-ns-Bad.k8s.yaml')],
      marker('prewarm-ns-Bad.k8s.yaml'),
      { kind: 'foreign', names: ['prewarm-ns-Bad.k8s.yaml'] },
    ],
    ['an older output without marker', [file('prewarm-cluster.k8s.yaml'), file('prewarm-ns-ml.k8s.yaml')], undefined, { kind: 'output' }],
    ['no marker and no cluster file', [file('prewarm-ns-ml.k8s.yaml')], undefined, { kind: 'foreign', names: ['prewarm-ns-ml.k8s.yaml'] }],
    [
      'no marker and a stale file',
      [file('prewarm-cluster.k8s.yaml'), file('stale.k8s.yaml')],
      undefined,
      { kind: 'foreign', names: ['stale.k8s.yaml'] },
    ],
  ])('%s', (_name, entries, text, expected) => {
    expect(classifyOutput(entries, text)).toEqual(expected);
  });
});

describe('isPrewarmOutput', () => {
  it('recognises a folder after writeOutputMarker, and nothing else', async () => {
    const root = await mkdtemp(join(tmpdir(), 'prewarm-marker-'));
    const out = join(root, 'out');
    await mkdir(out);
    expect(await isPrewarmOutput(out)).toBe(false);
    await writeFile(join(out, 'prewarm-cluster.k8s.yaml'), 'kind: x\n');
    await writeFile(join(out, 'prewarm-ns-a.k8s.yaml'), 'kind: x\n');
    await writeOutputMarker(out);
    expect((await readFile(join(out, OUTPUT_MARKER), 'utf8')).split('\n').slice(2)).toEqual([
      'prewarm-cluster.k8s.yaml',
      'prewarm-ns-a.k8s.yaml',
      '',
    ]);
    expect(await isPrewarmOutput(out)).toBe(true);
    await writeFile(join(out, 'notes.md'), 'mine\n');
    expect(await isPrewarmOutput(out)).toBe(false);
    expect(await isPrewarmOutput(join(out, 'notes.md'))).toBe(false);
    expect(await isPrewarmOutput(join(root, 'missing'))).toBe(false);
  });
});
