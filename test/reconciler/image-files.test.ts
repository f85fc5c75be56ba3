/**
 * The sidecar image's file list (src/reconciler/image-files.mjs) is closed under imports and starts
 * at main.js, judged by a parser of its own (TypeScript's) on the sidecar as its tsconfig compiles
 * it; and the builders take the list from there.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { relativeImports, SIDECAR_MAIN, sidecarImageFiles } from '../../src/reconciler/image-files.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
let tmp = '';
let lib = '';

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'prewarm-image-files-'));
  lib = join(tmp, 'lib');
  execFileSync(process.execPath, [
    join(ROOT, 'node_modules/typescript/bin/tsc'),
    '-p',
    join(ROOT, 'src/reconciler/tsconfig.json'),
    '--outDir',
    lib,
  ]);
}, 120_000);
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A compiled tree of its own: file -> text. */
function tree(files: Readonly<Record<string, string>>): string {
  const dir = mkdtempSync(join(tmp, 'tree-'));
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    writeFileSync(join(dir, f), text);
  }
  return dir;
}

describe('sidecarImageFiles', () => {
  it('lists main.js and every module its relative imports reach, by TypeScript’s own reading of the compiled files', () => {
    const files = sidecarImageFiles(lib);
    expect(files).toContain(SIDECAR_MAIN);
    const listed = new Set(files);
    const missing: string[] = [];
    for (const f of files) {
      const text = readFileSync(join(lib, f), 'utf8');
      for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
        if (!fileName.startsWith('.')) continue;
        const to = relative(lib, normalize(join(lib, dirname(f), fileName)));
        if (!listed.has(to)) missing.push(`${f} -> ${to}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('holds the sidecar and its leaves, and nothing of synth, the spec model or the CLI', () => {
    const folders = [...new Set(sidecarImageFiles(lib).map((f) => f.split('/')[1]))].sort();
    expect(folders).toEqual(['contract', 'http', 'oci', 'reconciler', 'text']);
  });

  it('follows re-exports, side-effect and dynamic imports, and refuses an import of a file that is not there', () => {
    const dir = tree({
      'src/reconciler/main.js':
        "import { a } from './a.js';\nexport * from '../x/b.js';\nimport '../x/c.js';\nconst d = await import('./d.js');\n",
      'src/reconciler/a.js': 'export const a = 1;\n',
      'src/x/b.js': "export { a } from '../reconciler/a.js';\n",
      'src/x/c.js': '',
      'src/reconciler/d.js': '',
      'src/unused.js': '',
    });
    expect(sidecarImageFiles(dir)).toEqual(['src/reconciler/a.js', 'src/reconciler/d.js', SIDECAR_MAIN, 'src/x/b.js', 'src/x/c.js']);
    const broken = tree({ 'src/reconciler/main.js': "import { gone } from '../synth/gone.js';\n" });
    expect(() => sidecarImageFiles(broken)).toThrow(`${join(broken, 'src/synth/gone.js')} is missing`);
    expect(relativeImports("import { x } from 'yaml';\nimport('node:fs');\n")).toEqual([]);
  });

  it('is the list the Dockerfile, build-image.sh and the harness copy, and the only one', () => {
    const dockerfile = readFileSync(join(ROOT, 'src/reconciler/Dockerfile'), 'utf8');
    expect(dockerfile).toContain('node src/reconciler/image-files.mjs lib /out/lib');
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(runtime.match(/^COPY .*$/gm)).toEqual(['COPY --from=build /out /app']);
    const script = readFileSync(join(ROOT, 'src/reconciler/build-image.sh'), 'utf8');
    expect(script).toContain('node "$repo/src/reconciler/image-files.mjs" "$repo/lib" "$rootfs/app/lib"');
    expect(script).not.toMatch(/cp -r "\$repo\/lib/);
    const harness = readFileSync(join(ROOT, 'harness/cluster/images.ts'), 'utf8');
    expect(harness).toContain('copySidecarImageFiles(lib, ');
    expect(harness).not.toMatch(/cpSync\(libSrc/);
  });
});
