/**
 * deploy/renovate/renovate.json5 run by the real Renovate (the pinned 39.x CLI that
 * renovate-install.sh caches) over a fixture repository: examples/ as shipped, plus spec folders
 * that also hold other manifests and plain YAML, multi-document files, digests, comments and quoted
 * values, and dist/. Renovate runs on its local platform in `--dry-run=extract` mode, in a network
 * namespace of its own (it could not reach a registry if it tried), with its JSON log parsed for
 * the extracted packageFiles. What it extracts must be exactly the images prewarm's own loader
 * reads from the same files, with the same tags and digests, and nothing else.
 *
 * Two parts stay a model, because the real tool cannot do them offline or on this Node.js:
 * - `managerFilePatterns` is read as `fileMatch`: Renovate 41 renamed the option, and 39.x is the
 *   last line that runs on Node.js 20. The test translates each `/regex/` pattern back (the inverse
 *   of Renovate's own migration) and refuses any other kind of pattern.
 * - The rewrite of a line (a tag bump, `tag@sha256:digest` from pinDigests) needs a registry lookup
 *   to be proposed at all, so the last test applies Renovate's autoReplace by hand: the
 *   replaceString Renovate extracted, with the new value and digest put in place.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import { REPO_DIR } from '../../harness/cluster/config.js';
import { yamlObjects } from '../../harness/manifests.js';
import type { Diagnostic } from '../../src/imagecache/errors.js';
import { readSources } from '../../src/imagecache/load.js';
import { parseFiles } from '../../src/imagecache/parse.js';
import { parseImageRef } from '../../src/oci/reference.js';
import { CLI, run } from './helpers.js';

const renovateBin = inject('renovateBin');
const RENOVATE_VERSION = '39.264.1';

interface Dep {
  depName: string;
  currentValue?: string;
  currentDigest?: string;
  replaceString: string;
}
interface LogLine {
  level: number;
  msg: string;
  packageFiles?: Record<string, { packageFile: string; deps: Dep[] }[]>;
  errors?: unknown[];
  requests?: number;
  renovateVersion?: string;
}

/** renovate.json5 as written: JSON plus whole-line // comments. */
function readConfig(): Record<string, unknown> & { customManagers: Record<string, unknown>[] } {
  const text = readFileSync(join(REPO_DIR, 'deploy/renovate/renovate.json5'), 'utf8');
  return JSON.parse(
    text
      .split('\n')
      .filter((l) => !/^\s*\/\//.test(l))
      .join('\n'),
  );
}

/** The config as Renovate 39 spells it: `managerFilePatterns: ["/re/"]` becomes `fileMatch: ["re"]`. */
function asRenovate39(config: ReturnType<typeof readConfig>): Record<string, unknown> {
  const customManagers = config.customManagers.map(({ managerFilePatterns, ...m }) => ({
    ...m,
    fileMatch: (managerFilePatterns as string[]).map((p) => {
      const re = /^\/(.*)\/$/.exec(p);
      if (!re) throw new Error(`only /regex/ patterns without flags translate to fileMatch, got ${p}`);
      return re[1]!;
    }),
  }));
  return { ...config, customManagers };
}

// A fixture repository as a user's would look: specs beside the manifests of a GitOps folder.
const DIGEST_A = `sha256:${'a'.repeat(64)}`;
const DIGEST_B = `sha256:${'0123456789abcdef'.repeat(4)}`;
const FIXTURE: Record<string, string> = {
  // kube-fledged's dialect, beside an Argo CD Application whose kustomize images are plain strings
  // too, and a Deployment: only the ImageCache's images are prewarm's.
  'examples/apps/mixed.yaml': `# Argo CD app, workload and image cache of one team
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: shop, namespace: argocd}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source:
    repoURL: https://git.example.com/shop.git
    path: deploy
    kustomize:
      images:
        - quay.io/example/shop-api:1.4.2
        - "quay.io/example/shop-web:2.0.0"
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop-api, namespace: shop}
spec:
  selector: {matchLabels: {app: shop-api}}
  template:
    metadata: {labels: {app: shop-api}}
    spec:
      containers:
        - name: api
          image: quay.io/example/shop-api:1.4.2
---
# --- the cache (comment lines with dashes are not document separators) ---
apiVersion: kubefledged.io/v1alpha2
kind: ImageCache
metadata:
  name: shop
  namespace: kube-fledged
spec:
  cacheSpec:
    - images:
        # the storefront
        - quay.io/example/shop-web:2.0.0 # pinned by hand below
        - "quay.io/example/shop-search:0.9@${DIGEST_A}"
        - 'registry.example.com:5000/team/worker@${DIGEST_B}'
      nodeSelector:
        tier: frontend
`,
  // prewarm's dialect, keys in another order, apiVersion and kind quoted.
  'examples/apps/gpu.yml': `---
spec:
  cacheSpec:
    - pool: gpu
      nodeSelector: {node.kubernetes.io/instance-type: g5.2xlarge}
      images:
        - nvcr.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04
        - python:3.12-slim
metadata: {name: gpu, namespace: ml}
kind: "ImageCache"
apiVersion: 'prewarm.dev/v1alpha1'
---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-a-cache, namespace: ml}
data:
  images: |
    - redis:7
`,
  // Plain configuration and kustomize's images field: prewarm skips both.
  'examples/apps/values.yaml': `images:
  - redis:7.2
  - memcached:1.6
helperImage: busybox:1.36
`,
  'examples/apps/kustomization.yaml': `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [mixed.yaml, gpu.yml]
images:
  - name: quay.io/example/shop-api
    newTag: 1.4.3
`,
  // Not a spec folder at all.
  'apps/web.yaml': `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27}]
`,
};

let repo: string;
let log: LogLine[];
let renovateMs: number;

/** Renovate's packageFiles, by manager. */
function packageFiles(): Record<string, { packageFile: string; deps: Dep[] }[]> {
  const line = log.find((l) => l.packageFiles !== undefined);
  if (!line?.packageFiles) throw new Error(`Renovate logged no packageFiles:\n${log.map((l) => l.msg).join('\n')}`);
  return line.packageFiles;
}

/** The deps prewarm's custom managers extracted (Renovate 39 files custom regex managers under `regex`), per file. */
function extracted(): Map<string, Dep[]> {
  const out = new Map<string, Dep[]>();
  for (const f of packageFiles()['regex'] ?? []) out.set(f.packageFile, [...(out.get(f.packageFile) ?? []), ...f.deps]);
  return out;
}

function refOf(d: Dep): string {
  return `${d.depName}${d.currentValue ? `:${d.currentValue}` : ''}${d.currentDigest ? `@${d.currentDigest}` : ''}`;
}

function canonical(ref: string): string {
  const r = parseImageRef(ref);
  if (!r.ok) throw new Error(`${ref}: ${r.error}`);
  return r.ref.canonical;
}

/** What prewarm's loader reads from the fixture: per file, every entry's images, canonical. */
async function prewarmImages(): Promise<Map<string, string[]>> {
  const diagnostics: Diagnostic[] = [];
  const parsed = parseFiles(await readSources([join(repo, 'examples')], diagnostics));
  expect([...diagnostics, ...parsed.diagnostics].filter((d) => d.severity === 'error')).toEqual([]);
  const out = new Map<string, string[]>();
  for (const c of parsed.caches) {
    const file = relative(repo, c.location.file);
    const images = c.entries.flatMap((e) => e.images.map((i) => i.canonical));
    out.set(file, [...(out.get(file) ?? []), ...images]);
  }
  return out;
}

beforeAll(() => {
  repo = mkdtempSync(join(tmpdir(), 'prewarm-renovate-'));
  cpSync(join(REPO_DIR, 'examples'), join(repo, 'examples'), { recursive: true });
  for (const [path, text] of Object.entries(FIXTURE)) {
    mkdirSync(dirname(join(repo, path)), { recursive: true });
    writeFileSync(join(repo, path), text);
  }
  const synth = run(['node', CLI, 'synth', join(repo, 'examples'), '-o', join(repo, 'dist'), '--own-namespace', 'prewarm']);
  expect(synth.code, synth.stderr).toBe(0);
  writeFileSync(join(repo, 'renovate.json5'), JSON.stringify(asRenovate39(readConfig()), null, 2));
  const git = (...args: string[]) => {
    const r = run(['git', '-c', 'user.name=fixture', '-c', 'user.email=fixture@example.com', ...args], { cwd: repo });
    expect(r.code, r.stderr).toBe(0);
  };
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'fixture');
  // Everything Renovate keeps goes to the temporary folder; a network namespace of its own leaves
  // it no route anywhere, so extraction cannot have looked anything up.
  const env: NodeJS.ProcessEnv = {
    PATH: process.env['PATH'],
    HOME: repo,
    LOG_FORMAT: 'json',
    LOG_LEVEL: 'debug',
    RENOVATE_BASE_DIR: join(repo, '.renovate'),
    RENOVATE_ONBOARDING: 'false',
    RENOVATE_REQUIRE_CONFIG: 'required',
  };
  const t0 = Date.now();
  const r = run(['unshare', '--net', renovateBin, '--platform=local', '--dry-run=extract'], { cwd: repo, env, timeoutMs: 300_000 });
  renovateMs = Date.now() - t0;
  expect(r.code, r.stderr).toBe(0);
  log = r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}, 360_000);
afterAll(() => {
  if (repo) rmSync(repo, { recursive: true, force: true });
});

describe('deploy/renovate/renovate.json5 in the real Renovate', () => {
  it(`is Renovate ${RENOVATE_VERSION} with RE2, offline, and the config is valid`, () => {
    console.log(`[renovate] extract took ${(renovateMs / 1000).toFixed(1)}s`);
    expect(log.find((l) => l.renovateVersion !== undefined)?.renovateVersion).toBe(RENOVATE_VERSION);
    // Production Renovate compiles regex managers with RE2, which refuses what JavaScript allows.
    expect(log.map((l) => l.msg)).toContain('Using RE2 regex engine');
    expect(log.filter((l) => l.msg === 'Found renovate config errors')).toEqual([]);
    expect(log.filter((l) => l.level >= 40).map((l) => l.msg)).toEqual([]);
    const http = log.filter((l) => l.msg === 'HTTP statistics');
    expect(http.length).toBeGreaterThan(0);
    for (const h of http) expect(h.requests).toBe(0);
  });

  it('extracts exactly the images prewarm reads, per file, with their tags and digests', async () => {
    const found = extracted();
    const read = await prewarmImages();
    expect(read.size).toBeGreaterThan(4);
    expect([...found.keys()].sort()).toEqual([...read.keys()].sort());
    for (const [file, images] of read) {
      expect((found.get(file) ?? []).map((d) => canonical(refOf(d))).sort(), file).toEqual([...images].sort());
    }
    // The fixture's own cases, spelt out: digests, quotes and comments, other manifests left alone.
    const mixed = (found.get('examples/apps/mixed.yaml') ?? []).map(refOf).sort();
    expect(mixed).toEqual([
      `quay.io/example/shop-search:0.9@${DIGEST_A}`,
      'quay.io/example/shop-web:2.0.0',
      `registry.example.com:5000/team/worker@${DIGEST_B}`,
    ]);
    expect((found.get('examples/apps/gpu.yml') ?? []).map(refOf).sort()).toEqual([
      'nvcr.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04',
      'python:3.12-slim',
    ]);
    for (const f of found.keys()) expect(f).not.toMatch(/^dist\/|values\.yaml$|kustomization\.yaml$|^apps\//);
  });

  it("Renovate's built-in managers keep to their own files: none reads a spec file, so no line has two updaters", async () => {
    const specs = new Set((await prewarmImages()).keys());
    const others = Object.entries(packageFiles()).filter(([m]) => m !== 'regex');
    // The fixture's plain values.yaml is Helm's by its name, and its kustomization.yaml kustomize's.
    expect(others.map(([m, fs]) => `${m}: ${fs.map((f) => f.packageFile).join(', ')}`).sort()).toEqual([
      'helm-values: examples/apps/values.yaml',
      'kustomize: examples/apps/kustomization.yaml',
    ]);
    for (const [, fs] of others) for (const f of fs) expect(specs.has(f.packageFile), f.packageFile).toBe(false);
  });

  it("Renovate's replaceString of each image is one line of its file, or the end of one", () => {
    for (const [file, deps] of extracted()) {
      const lines = readFileSync(join(repo, file), 'utf8').split('\n');
      for (const d of deps) {
        const line = d.replaceString.replace(/\n$/, '');
        expect(line, file).not.toContain('\n');
        expect(lines.filter((l) => l.endsWith(line)).length, `${file}: ${line}`).toBeGreaterThan(0);
        expect(line).toContain(refOf(d));
      }
    }
  });

  it('a pinDigests rewrite (tag@sha256:digest) and a tag bump of each line still validate and synth', () => {
    const dir = join(repo, 'pinned');
    cpSync(join(repo, 'examples'), dir, { recursive: true });
    const pinned: string[] = [];
    let n = 0;
    for (const [file, deps] of extracted()) {
      const path = join(dir, relative('examples', file));
      let text = readFileSync(path, 'utf8');
      for (const d of deps) {
        // Renovate's autoReplace: the matched string with the new value and digest put in place.
        const digest = `sha256:${(++n).toString(16).padStart(64, '0')}`;
        const value = d.currentValue ?? 'latest';
        const bumped = n % 2 === 0 ? `${value}-bumped` : value;
        const next = d.replaceString.replace(refOf(d), `${d.depName}:${bumped}@${digest}`);
        expect(next, d.replaceString).not.toBe(d.replaceString);
        text = text.replace(d.replaceString, next);
        pinned.push(`${d.depName}:${bumped}@${digest}`);
      }
      writeFileSync(path, text);
    }
    expect(pinned.length).toBeGreaterThan(10);
    const v = run(['node', CLI, 'validate', dir]);
    expect(v.code, v.stderr).toBe(0);
    const s = run(['node', CLI, 'synth', dir, '--stdout']);
    expect(s.code, s.stderr).toBe(0);
    const images = new Set(
      yamlObjects(s.stdout)
        .flatMap((o) => JSON.stringify(o).match(/"image":"[^"]+"/g) ?? [])
        .map((x) => canonical(x.slice(9, -1))),
    );
    for (const p of pinned) expect(images.has(canonical(p)), p).toBe(true);
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
