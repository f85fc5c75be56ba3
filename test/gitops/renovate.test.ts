/**
 * deploy/renovate/renovate.json5 and deploy/renovate/dependabot.yml against the real spec files: the bot
 * sees exactly the images prewarm reads (no more, no less), each as one plain line, and a rewrite of
 * that line (a tag bump, or `tag@sha256:digest` from pinDigests) still validates and synthesizes.
 * The regex managers are applied the way Renovate's `recursive` and `any` strategies do: every
 * matchString compiled with the `g` flag alone, each level run over the previous level's matches.
 */
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { REPO_DIR } from '../../harness/cluster/config.js';
import { yamlObjects } from '../../harness/manifests.js';
import { CLI, run } from './helpers.js';

interface Manager {
  customType: string;
  managerFilePatterns: string[];
  matchStrings: string[];
  matchStringsStrategy?: 'any' | 'recursive' | 'combination';
  datasourceTemplate: string;
}
interface Found {
  depName: string;
  currentValue?: string;
  currentDigest?: string;
  replaceString: string;
}

/** renovate.json5 as written: JSON plus whole-line // comments. */
function readConfig(): { customManagers: Manager[]; ignorePaths: string[]; packageRules: Record<string, unknown>[] } {
  const text = readFileSync(join(REPO_DIR, 'deploy/renovate/renovate.json5'), 'utf8');
  return JSON.parse(
    text
      .split('\n')
      .filter((l) => !/^\s*\/\//.test(l))
      .join('\n'),
  );
}
const config = readConfig();

function filePattern(p: string): RegExp {
  const m = /^\/(.*)\/([a-z]*)$/.exec(p);
  if (!m) throw new Error(`only /regex/ patterns are used here, got ${p}`);
  return new RegExp(m[1]!, m[2]);
}

function extract(manager: Manager, content: string): Found[] {
  const level = (texts: string[], i: number): Found[] => {
    const re = new RegExp(manager.matchStrings[i]!, 'g');
    const matches = texts.flatMap((t) => [...t.matchAll(re)]);
    if (manager.matchStringsStrategy === 'recursive' && i + 1 < manager.matchStrings.length)
      return level(
        matches.map((m) => m[0]),
        i + 1,
      );
    return matches.map((m) => ({
      ...(m.groups as { depName: string; currentValue?: string; currentDigest?: string }),
      replaceString: m[0],
    }));
  };
  if (manager.matchStringsStrategy === 'recursive') return level([content], 0);
  return manager.matchStrings.flatMap((_, i) => {
    const re = new RegExp(manager.matchStrings[i]!, 'g');
    return [...content.matchAll(re)].map((m) => ({ ...(m.groups as { depName: string }), replaceString: m[0] }));
  });
}

function refOf(f: Found): string {
  return `${f.depName}${f.currentValue ? `:${f.currentValue}` : ''}${f.currentDigest ? `@${f.currentDigest}` : ''}`;
}

/** The images of a spec file as prewarm reads them: every cacheSpec entry's images, plus helperImage. */
function specImages(text: string): string[] {
  const out: string[] = [];
  for (const d of parseAllDocuments(text)) {
    const o = d.toJS() as { kind?: string; spec?: { cacheSpec?: { images?: unknown[] }[]; helperImage?: string } } | null;
    if (o?.kind !== 'ImageCache') continue;
    for (const c of o.spec?.cacheSpec ?? []) for (const i of c.images ?? []) out.push(String(i));
    if (o.spec?.helperImage !== undefined) out.push(o.spec.helperImage);
  }
  return out;
}

const specFiles = readdirSync(join(REPO_DIR, 'examples'), { recursive: true, withFileTypes: true })
  .filter((e) => e.isFile() && /\.ya?ml$/.test(e.name))
  .map((e) => relative(REPO_DIR, join(e.parentPath, e.name)))
  .sort();

function allFound(content: string): Found[] {
  return config.customManagers.flatMap((m) => extract(m, content));
}

const tmp = mkdtempSync(join(tmpdir(), 'prewarm-renovate-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('deploy/renovate/renovate.json5', () => {
  it('targets every ImageCache spec file and nothing in dist/', () => {
    expect(specFiles.length).toBeGreaterThan(0);
    for (const m of config.customManagers) {
      expect(m.customType).toBe('regex');
      expect(m.datasourceTemplate).toBe('docker');
      const res = m.managerFilePatterns.map(filePattern);
      for (const f of specFiles)
        expect(
          res.some((r) => r.test(f)),
          f,
        ).toBe(true);
      for (const f of readdirSync(join(REPO_DIR, 'dist')))
        expect(
          res.some((r) => r.test(`dist/${f}`)),
          f,
        ).toBe(false);
    }
    expect(config.ignorePaths).toContain('**/dist/**');
    expect(config.packageRules.some((r) => r['pinDigests'] === true)).toBe(true);
  });

  it.each(specFiles)('%s: the bot finds exactly the images prewarm reads', (file) => {
    const text = readFileSync(join(REPO_DIR, file), 'utf8');
    const expected = specImages(text);
    expect(expected.length).toBeGreaterThan(0);
    expect(allFound(text).map(refOf).sort()).toEqual([...expected].sort());
  });

  it.each(specFiles)('%s: every image is a plain string on its own `- image` line', (file) => {
    const lines = readFileSync(join(REPO_DIR, file), 'utf8').split('\n');
    for (const image of specImages(lines.join('\n'))) {
      const esc = image.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
      const own = new RegExp(`^\\s*(-|helperImage:)\\s+["']?${esc}["']?\\s*(#.*)?$`);
      expect(
        lines.filter((l) => own.test(l)),
        image,
      ).toHaveLength(1);
    }
  });

  it('would not mistake flow-style lists, tolerations or pull secrets for images (control)', () => {
    const text =
      'apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: x}\nspec:\n  cacheSpec:\n    - images: [a.io/b:1]\n      tolerations:\n        - key: nvidia.com/gpu\n  imagePullSecrets:\n    - name: reg\n';
    expect(allFound(text)).toEqual([]);
  });

  it('a pinDigests rewrite (tag@sha256:digest) and a tag bump of each line still validate and synth', () => {
    const dir = join(tmp, 'pinned');
    cpSync(join(REPO_DIR, 'examples'), dir, { recursive: true });
    const pinned: string[] = [];
    let n = 0;
    for (const file of specFiles) {
      const path = join(dir, relative('examples', file));
      let text = readFileSync(path, 'utf8');
      for (const f of allFound(text)) {
        // Renovate's autoReplace: the matched string with the new value and digest put in place.
        const digest = `sha256:${(++n).toString(16).padStart(64, '0')}`;
        const value = f.currentValue ?? 'latest';
        const bumped = n % 2 === 0 ? `${value}-bumped` : value;
        const next = f.replaceString.replace(refOf(f), `${f.depName}:${bumped}@${digest}`);
        expect(next, f.replaceString).not.toBe(f.replaceString);
        text = text.replace(f.replaceString, next);
        pinned.push(`${f.depName}:${bumped}@${digest}`);
      }
      writeFileSync(path, text);
    }
    expect(pinned.length).toBeGreaterThan(5);
    const v = run(['node', CLI, 'validate', dir]);
    expect(v.code, v.stderr).toBe(0);
    const s = run(['node', CLI, 'synth', dir, '--stdout']);
    expect(s.code, s.stderr).toBe(0);
    const images = new Set(
      yamlObjects(s.stdout)
        .flatMap((o) => JSON.stringify(o).match(/"image":"[^"]+"/g) ?? [])
        .map((x) => x.slice(9, -1)),
    );
    for (const p of pinned) {
      const short = p.replace(/^docker\.io\/library\//, '');
      expect(images.has(p) || images.has(short) || images.has(`docker.io/library/${p}`), p).toBe(true);
    }
    // The bot's edit touched nothing but those lines: same line count per file.
    for (const file of specFiles) {
      expect(readFileSync(join(dir, relative('examples', file)), 'utf8').split('\n').length).toBe(
        readFileSync(join(REPO_DIR, file), 'utf8').split('\n').length,
      );
    }
  });
});

describe('deploy/renovate/dependabot.yml', () => {
  it('is a version 2 config that never points Dependabot at dist/', () => {
    const d = parse(readFileSync(join(REPO_DIR, 'deploy/renovate/dependabot.yml'), 'utf8')) as {
      version: number;
      updates: { 'package-ecosystem': string; directory?: string; directories?: string[] }[];
    };
    expect(d.version).toBe(2);
    const dirs = d.updates.flatMap((u) => u.directories ?? [u.directory ?? '']);
    expect(dirs.length).toBeGreaterThan(0);
    for (const dir of dirs) expect(dir).not.toMatch(/dist/);
    expect(d.updates.some((u) => u['package-ecosystem'] === 'docker' && (u.directories ?? []).includes('/deploy/argocd'))).toBe(true);
  });
});
