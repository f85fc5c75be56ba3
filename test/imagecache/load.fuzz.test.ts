/**
 * Property-based fuzzing of the loader over file-system shapes: random trees of folders, files,
 * links (inside and outside the roots, dangling, loops, to folders and devices), FIFOs and
 * oversized files. Whatever the tree, the loader answers in bounded time, fails only with a
 * SpecError, never reads outside the roots, and reports every entry it must refuse.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SpecError, type Diagnostic } from '../../src/imagecache/errors.js';
import { loadBundle, readSources } from '../../src/imagecache/load.js';
import { MAX_SPEC_FILE_BYTES } from '../../src/files/read.js';

const SECRET = 'SECRET-outside-the-roots';

type Target =
  | { readonly t: 'entry'; readonly index: number }
  | { readonly t: 'outside-file' | 'outside-dir' | 'dev-zero' | 'proc' | 'dangling-inside' | 'dangling-outside' | 'self' };
type Kind =
  | { readonly t: 'dir' | 'valid' | 'big' | 'fifo' }
  | { readonly t: 'garbage'; readonly text: string }
  | { readonly t: 'link'; readonly to: Target; readonly relative: boolean };
interface Entry {
  readonly parent: number;
  readonly name: string;
  readonly ext: string;
  readonly hidden: boolean;
  readonly kind: Kind;
}

const target: fc.Arbitrary<Target> = fc.oneof(
  fc.record({ t: fc.constant('entry' as const), index: fc.nat() }),
  fc
    .constantFrom(...(['outside-file', 'outside-dir', 'dev-zero', 'proc', 'dangling-inside', 'dangling-outside', 'self'] as const))
    .map((t) => ({ t })),
);
const kind: fc.Arbitrary<Kind> = fc.oneof(
  { arbitrary: fc.constantFrom(...(['dir', 'valid'] as const)).map((t) => ({ t })), weight: 4 },
  { arbitrary: fc.string({ maxLength: 120 }).map((text) => ({ t: 'garbage' as const, text })), weight: 1 },
  { arbitrary: fc.constantFrom(...(['big', 'fifo'] as const)).map((t) => ({ t })), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant('link' as const), to: target, relative: fc.boolean() }), weight: 4 },
);
const entry: fc.Arbitrary<Entry> = fc.record({
  parent: fc.nat(),
  name: fc.constantFrom('a', 'b', 'c'),
  ext: fc.constantFrom('.yaml', '.yaml', '.yml', '.txt', ''),
  hidden: fc.integer({ min: 0, max: 9 }).map((n) => n < 2),
  kind,
});

/** A built tree: every entry's path, and whether the walk must see it. */
interface Built {
  readonly base: string;
  readonly root: string;
  readonly paths: string[];
  /** Folders the walk enters (not hidden, below visible folders). */
  readonly visibleDirs: Set<string>;
}

async function build(entries: readonly Entry[]): Promise<Built> {
  const base = await mkdtemp(join(tmpdir(), 'prewarm-fuzz-fs-'));
  const root = join(base, 'root');
  const outside = join(base, 'outside');
  await mkdir(root);
  await mkdir(outside);
  await writeFile(join(outside, 'secret.yaml'), `apiVersion: ${SECRET}\nkind: ImageCache\n`);
  await writeFile(join(outside, 'valid.yaml'), cache(`outside-${SECRET.toLowerCase()}`));
  const dirs = [root];
  const visibleDirs = new Set([root]);
  const paths: string[] = [];
  for (const [i, e] of entries.entries()) {
    const parent = dirs[e.parent % dirs.length] as string;
    const path = join(parent, `${e.hidden ? '.' : ''}${e.name}${i}${e.ext}`);
    paths.push(path);
    const k = e.kind;
    if (k.t === 'dir') {
      await mkdir(path);
      dirs.push(path);
      if (visibleDirs.has(parent) && !e.hidden) visibleDirs.add(path);
    } else if (k.t === 'valid') await writeFile(path, cache(`c${i}`));
    else if (k.t === 'garbage') await writeFile(path, k.text);
    else if (k.t === 'big') {
      await writeFile(path, cache(`big${i}`));
      await truncate(path, MAX_SPEC_FILE_BYTES + 1 + i);
    } else if (k.t === 'fifo') execFileSync('mkfifo', [path]);
    else if (k.t === 'link') {
      const to = linkTarget(k.to, i, paths, root, outside, path);
      await symlink(k.relative && to.startsWith(base) ? relative(dirname(path), to) || '.' : to, path);
    }
  }
  return { base, root, paths, visibleDirs };
}

function linkTarget(to: Target, i: number, paths: readonly string[], root: string, outside: string, self: string): string {
  switch (to.t) {
    case 'entry':
      return i === 0 ? join(root, 'gone') : (paths[to.index % i] as string);
    case 'outside-file':
      return join(outside, 'secret.yaml');
    case 'outside-dir':
      return outside;
    case 'dev-zero':
      return '/dev/zero';
    case 'proc':
      return '/proc/self/environ';
    case 'dangling-inside':
      return join(root, 'gone.yaml');
    case 'dangling-outside':
      return join(outside, 'gone.yaml');
    case 'self':
      return self;
  }
}

/** Whether reading entry `i` as a file must succeed, following links through the model. */
function readable(entries: readonly Entry[], i: number, depth = 0): boolean {
  const k = (entries[i] as Entry).kind;
  if (k.t === 'valid' || k.t === 'garbage') return true;
  if (k.t !== 'link' || k.to.t !== 'entry' || i === 0 || depth > entries.length) return false;
  return readable(entries, k.to.index % i, depth + 1);
}

const cache = (name: string) =>
  `apiVersion: kubefledged.io/v1alpha2\nkind: ImageCache\nmetadata: {name: ${name}, namespace: ns}\nspec:\n  cacheSpec:\n  - images: [redis:7]\n`;

/** Rejects when `promise` takes longer than `ms`: a hang is a failure, not a stuck test run. */
async function bounded<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms: the loader hangs`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const FILE_PROBLEM = /^(is |cannot read|file is UTF|changed into a link)/;

describe('the loader under file-system fuzzing', () => {
  it('answers in bounded time, fails only with a SpecError, never reads outside the roots, and reports every bad entry', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(entry, { minLength: 1, maxLength: 14 }), async (entries) => {
        const built = await build(entries);
        try {
          // Every diagnostic, from a successful load (warnings) or a failed one.
          const result = await bounded(
            loadBundle([built.root]).then(
              (r) => ({ diagnostics: r.warnings, caches: r.bundle.pools.flatMap((p) => p.sources) }),
              (err: unknown) => {
                if (!(err instanceof SpecError)) throw err;
                return { diagnostics: err.diagnostics, caches: [] as string[] };
              },
            ),
            10_000,
          );
          const diagnostics: Diagnostic[] = [];
          const files = await bounded(readSources([built.root], diagnostics), 10_000);

          // Never outside the roots: nothing read resolves outside, nothing of outside shows.
          const realRoot = await realpath(built.root);
          for (const f of files) expect((await realpath(f.path)).startsWith(realRoot + sep)).toBe(true);
          const everything = JSON.stringify([files, result]);
          expect(everything).not.toContain(SECRET);
          expect(everything).not.toContain(SECRET.toLowerCase());
          expect(result.diagnostics.filter((d) => d.message.includes('duplicate ImageCache'))).toEqual([]);

          // Every entry the walk sees: refused ones are reported by name, readable ones are not.
          for (const [i, e] of entries.entries()) {
            const path = built.paths[i] as string;
            const seen = built.visibleDirs.has(dirname(path)) && !e.hidden && /\.ya?ml$/.test(e.ext) && e.kind.t !== 'dir';
            if (!seen) continue;
            const problems = result.diagnostics.filter((d) => d.file === path && FILE_PROBLEM.test(d.message));
            if (readable(entries, i)) expect(problems).toEqual([]);
            else expect(problems.length, `${path} (${JSON.stringify(e.kind)}) must be reported`).toBe(1);
          }
        } finally {
          await rm(built.base, { recursive: true, force: true });
        }
      }),
      { numRuns: 50 },
    );
  }, 240_000);
});
