/**
 * `validate` refuses whatever `synth` refuses, with the same errors, so that a CI gate on validate
 * is enough: each case is a bundle that passes the spec checks and that only the synthesis
 * refuses (its output's names, sizes and budgets), or a spec field both refuse.
 */
import { mkdir, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from '../../src/cli/main.js';
import { poolKey } from '../../src/imagecache/bundle.js';
import { poolId } from '../../src/contract/identity.js';

const head = (name: string, extra = '') =>
  `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: ${name}, namespace: ml}\nspec:\n${extra}  cacheSpec:\n`;

/** The first i < j whose derived pool ids are equal (a fixed search: the same pair every run). */
function poolIdCollision(): [number, number] {
  const key = (t: string) => poolKey('ml', { nodeSelector: { pool: 'gpu' }, tolerations: [{ key: t, operator: 'Exists' }] });
  const seen = new Map<string, number>();
  for (let j = 0; j < 1_000_000; j++) {
    const id = poolId({ key: key(`t${j}`), nodeSelector: { pool: 'gpu' } });
    const i = seen.get(id);
    if (i !== undefined) return [i, j];
    seen.set(id, j);
  }
  throw new Error('no collision');
}

const tolerating = (name: string, key: string) =>
  `${head(name)}  - images: [redis:7]\n    nodeSelector: {pool: gpu}\n    tolerations: [{key: ${key}, operator: Exists}]\n`;

/** `pools` pools, each with `tolerations` long tolerations, which every namespace's pools.json lists. */
function wideTolerations(pools: number, tolerations: number): string {
  const out = [head('wide', '  lanes: 1\n')];
  for (let p = 0; p < pools; p++) {
    out.push(`  - pool: w${p}\n    images: [redis:7]\n    nodeSelector: {pool: w${p}}\n    tolerations:\n`);
    for (let t = 0; t < tolerations; t++)
      out.push(
        `    - {key: ${'a'.repeat(60)}.example.com/${'n'.repeat(40)}-${t}, operator: Equal, value: ${'v'.repeat(63)}, effect: NoSchedule}\n`,
      );
  }
  return out.join('');
}

/** One pool of `images` images whose references are about 200 characters long: a large DaemonSet. */
function longImages(images: number): string {
  const out = [head('long', '  lanes: 1\n'), '  - pool: long\n    images:\n'];
  for (let i = 0; i < images; i++) out.push(`    - registry.example.com/${'team/'.repeat(30)}app-${i}:${'v'.repeat(20)}\n`);
  return out.join('');
}

const [c1, c2] = poolIdCollision();
const derived = poolId({ key: poolKey('ml', { nodeSelector: { tier: 'web' }, tolerations: [] }), nodeSelector: { tier: 'web' } });

const CASES: { case: string; files: Record<string, string>; error: RegExp }[] = [
  {
    case: 'a pool named x-puller-1 beside the burst puller of pool x',
    files: {
      'a.yaml': `${head('a')}  - pool: x\n    images: [redis:7, redis:6, redis:5, redis:4, nginx:1]\n    nodeSelector: {tier: a}\n  - pool: x-puller-1\n    images: [redis:7]\n    nodeSelector: {tier: b}\n`,
    },
    error: /a\.yaml:9:5: error: document 1: spec\.cacheSpec\[1\]: DaemonSet ml\/prewarm-x-puller-1 is emitted twice/,
  },
  {
    case: 'two derived pool ids that collide (hash)',
    files: { 'a.yaml': tolerating('a', `t${c1}`), 'b.yaml': tolerating('b', `t${c2}`) },
    error:
      /b\.yaml:6:5: error: document 1: spec\.cacheSpec\[0\]: this pool gets id "gpu-[0-9a-f]{8}", as does the pool of ImageCache ml\/a/,
  },
  {
    case: 'an explicit pool name equal to the id derived for another pool',
    files: {
      'a.yaml': `${head('a')}  - images: [redis:7]\n    nodeSelector: {tier: web}\n`,
      'b.yaml': `${head('b')}  - pool: ${derived}\n    images: [redis:7]\n`,
    },
    error: new RegExp(
      `b\\.yaml:6:5: error: document 1: spec\\.cacheSpec\\[0\\]: this pool gets id "${derived}", as does the pool of ImageCache ml/a`,
    ),
  },
  {
    case: 'a DaemonSet over 1.5 MiB (2,400 images of 200 characters)',
    files: { 'long.yaml': longImages(2_400) },
    error:
      /long\.yaml:7:5: error: document 1: spec\.cacheSpec\[0\]: DaemonSet ml\/prewarm-long would be [\d.]+ MiB \([\d,]+ bytes\) as JSON; the apiserver refuses an object over about 1\.5 MiB/,
  },
  {
    case: 'the pools ConfigMap over 1 MiB (170 pools of 30 long tolerations)',
    files: { 'wide.yaml': wideTolerations(170, 30) },
    error:
      /^ConfigMap prewarm-pools: error: ConfigMap prewarm-pools in namespace ml would hold [\d.]+ MiB \([\d,]+ bytes\) of data; the apiserver refuses a ConfigMap over 1 MiB/,
  },
  {
    case: 'a pool too large to build (over 3,276 images)',
    files: {
      'big.yaml': `${head('big')}  - pool: big\n    images: [${Array.from({ length: 3_300 }, (_, i) => `r.example/a-${i}:1`).join(', ')}]\n`,
    },
    error: /big\.yaml:6:5: error: document 1: spec\.cacheSpec\[0\]: DaemonSet ml\/prewarm-big would hold 3,300 images/,
  },
  {
    case: 'a spec that chooses the helper image (code that every image container runs)',
    files: { 'helper.yaml': `${head('helper', '  helperImage: ghcr.io/attacker/busybox:1\n')}  - images: [redis:7]\n` },
    error:
      /^helper\.yaml:5:16: error: document 1: spec\.helperImage: a spec may not choose the helper image: .*\(prewarm synth --helper-image, or the Argo CD plugin's PREWARM_PLUGIN_HELPER_IMAGE\); remove this field$/,
  },
  {
    case: 'a system PriorityClass',
    files: { 'p.yaml': `${head('p', '  priorityClassName: system-node-critical\n')}  - images: [redis:7]\n` },
    error:
      /p\.yaml:5:22: error: document 1: spec\.priorityClassName: pool ml\/all-[0-9a-f]{8} \(.*p\.yaml:7:5 spec\.cacheSpec\[0\]\): priorityClassName "system-node-critical" is a system PriorityClass/,
  },
  {
    case: 'a PriorityClass the invocation has not allowed',
    files: { 'p.yaml': `${head('p', '  priorityClassName: warm\n')}  - images: [redis:7]\n` },
    error:
      /p\.yaml:5:22: error: document 1: spec\.priorityClassName: .*"warm" is not allowed by this invocation \(--allow-priority-class allows none\)/,
  },
  {
    case: 'a refresh interval under the floor',
    files: { 'r.yaml': `${head('r', '  refresh: {interval: 1s}\n')}  - images: [redis:7]\n` },
    error:
      /r\.yaml:5:23: error: document 1: spec\.refresh\.interval: .*refresh interval 1s is under 5m, the shortest this invocation allows/,
  },
  {
    case: 'memory per node over the bound (200 images on every node)',
    files: {
      'm.yaml': `${head('m')}  - images: [${Array.from({ length: 200 }, (_, i) => `r.example/a-${i}:1`).join(', ')}]\n`,
    },
    error:
      /m\.yaml:6:5: error: document 1: spec\.cacheSpec\[0\]: every node runs the pull pods of ml\/all-[0-9a-f]{8}, which request 1\.61 GiB .*--max-node-memory/,
  },
];

describe('validate refuses what synth refuses, with the same errors (exit 1, nothing written)', () => {
  it.each(CASES)(
    '$case',
    async ({ files, error }) => {
      const dir = await mkdtemp(join(tmpdir(), 'prewarm-parity-'));
      const specs = join(dir, 'specs');
      await mkdir(specs);
      for (const [name, text] of Object.entries(files)) await writeFile(join(specs, name), text);
      const errors: Record<string, string[]> = {};
      for (const command of ['validate', 'synth']) {
        let stderr = '';
        const argv = command === 'synth' ? ['synth', specs, '-o', join(dir, 'out')] : ['validate', specs];
        const code = await run(argv, { stdout: () => undefined, stderr: (t) => (stderr += t) });
        expect(code, `${command}: ${stderr.slice(0, 2000)}`).toBe(1);
        errors[command] = stderr
          .split('\n')
          .filter((l) => l.includes(' error: ') || l.startsWith('prewarm:'))
          .map((l) => l.replace(`${specs}/`, ''));
      }
      expect(
        errors['validate']?.some((l) => error.test(l)),
        errors['validate']?.join('\n'),
      ).toBe(true);
      expect(errors['validate']).toEqual(errors['synth']);
      expect(await readdir(dir)).toEqual(['specs']);
    },
    60_000,
  );
});
