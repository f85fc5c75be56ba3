// What goes into the sidecar image, derived once from its import graph: the compiled entry point
// lib/src/reconciler/main.js and every module it reaches through relative imports, nothing else.
// The Dockerfile, build-image.sh and the test harness's e2e image all copy this list, so a module
// the shipped image lacks fails every one of them alike. Plain JavaScript on node built-ins: it
// runs in the Dockerfile's build stage and in build-image.sh before anything else is compiled.
//
//   node src/reconciler/image-files.mjs LIB_DIR            prints the files, relative to LIB_DIR
//   node src/reconciler/image-files.mjs LIB_DIR DEST_DIR   copies them to DEST_DIR, same layout
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The sidecar's entry point, relative to the compiled tree. */
export const SIDECAR_MAIN = 'src/reconciler/main.js';

// Relative specifiers of static imports and re-exports (`from '...'`), side-effect imports
// (`import '...'`) and dynamic `import('...')`, as tsc emits them.
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*)(['"])(\.\.?\/[^'"]+)\1/g;

/**
 * The relative module specifiers one compiled file names.
 * @param {string} text
 * @returns {string[]}
 */
export function relativeImports(text) {
  return [...text.matchAll(SPECIFIER)].map((m) => m[2] ?? '');
}

/**
 * Every file the sidecar loads, relative to `libDir` (the compiled tree, `lib/`), sorted: the
 * entry point and the closure of its relative imports. Throws when an import names a file that
 * is not there, which is exactly the image that would fail at start.
 * @param {string} libDir
 * @returns {string[]}
 */
export function sidecarImageFiles(libDir) {
  const root = resolve(libDir);
  const seen = new Set([SIDECAR_MAIN]);
  const queue = [SIDECAR_MAIN];
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    const path = join(root, file);
    if (!existsSync(path)) throw new Error(`${path} is missing: compile the sidecar first (tsc -p src/reconciler)`);
    for (const spec of relativeImports(readFileSync(path, 'utf8'))) {
      const next = relative(root, normalize(join(dirname(path), spec)));
      if (next.startsWith('..')) throw new Error(`${file} imports ${spec}, outside ${root}`);
      if (!seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  return [...seen].sort();
}

/**
 * Copies the sidecar's files from `libDir` to `destDir`, keeping their paths.
 * @param {string} libDir
 * @param {string} destDir
 * @returns {string[]} the files copied, as {@link sidecarImageFiles} lists them
 */
export function copySidecarImageFiles(libDir, destDir) {
  const files = sidecarImageFiles(libDir);
  for (const f of files) {
    mkdirSync(dirname(join(destDir, f)), { recursive: true });
    copyFileSync(join(libDir, f), join(destDir, f));
  }
  return files;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [libDir, destDir] = process.argv.slice(2);
  if (libDir === undefined) {
    process.stderr.write('usage: image-files.mjs LIB_DIR [DEST_DIR]\n');
    process.exitCode = 2;
  } else {
    const files = destDir === undefined ? sidecarImageFiles(libDir) : copySidecarImageFiles(libDir, destDir);
    if (destDir === undefined) process.stdout.write(files.map((f) => `${f}\n`).join(''));
  }
}
