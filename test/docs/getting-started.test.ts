/**
 * The README's getting-started section still reads as test/e2e/getting-started.test.ts runs it:
 * one marked block per step, the placeholders the e2e test substitutes still there, the
 * alternatives it skips still in the README word for word, and the kubelet recipe's two forms
 * naming the same taint. Checked here without a cluster, so a docs edit that breaks the e2e
 * test's reading fails `npm run test:unit` too.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_GATE_TAINT_KEY } from '../../src/contract/names.js';
import {
  ALTERNATIVES,
  kubeletRecipe,
  markedBlocks,
  NODE_PLACEHOLDER,
  readmeSteps,
  REGISTRY_PLACEHOLDER,
  section,
  shellCommands,
  stepCommands,
  withoutComment,
} from './getting-started.js';

describe('README getting-started section', () => {
  const { text, blocks } = readmeSteps();
  const commands = [...blocks.keys()].filter((s) => s !== 'step 3').flatMap((s) => stepCommands(blocks, s));

  it('has one sh block per step but the ImageCache of step 3, which is YAML', () => {
    expect(blocks.get('step 3')?.lang).toBe('yaml');
    for (const s of ['step 1', 'step 2', 'step 4', 'step 6'] as const) expect(stepCommands(blocks, s).length, s).toBeGreaterThan(0);
  });

  it('says what the placeholders stand for, and uses them where the e2e test substitutes them', () => {
    expect(text).toContain(`\`${REGISTRY_PLACEHOLDER}\` stands for a registry your nodes can pull from`);
    expect(commands.filter((c) => c.includes(REGISTRY_PLACEHOLDER)).length).toBe(2);
    expect(commands.filter((c) => new RegExp(NODE_PLACEHOLDER.source).test(c))).toEqual([expect.stringMatching(/^kubectl prewarm status/)]);
  });

  it('still shows each skipped alternative word for word', () => {
    for (const alt of Object.keys(ALTERNATIVES)) expect(commands.map(withoutComment)).toContain(alt);
  });

  it('points step 5 at the recipes, whose kubelet forms name the default gate taint alike', () => {
    expect(text).toContain('(docs/operations.md#new-nodes-must-carry-the-gate-taint-from-their-first-moment)');
    const r = kubeletRecipe();
    expect([r.apiVersion, r.kind]).toEqual(['kubelet.config.k8s.io/v1beta1', 'KubeletConfiguration']);
    expect(r.configTaints).toEqual(r.flagTaints);
    expect(r.configTaints.map((t) => t.key)).toEqual([DEFAULT_GATE_TAINT_KEY]);
  });
});

describe('reading marked blocks', () => {
  it('takes a section up to the next heading of level 1 or 2', () => {
    expect(section('# t\n\n## A\na\n### sub\nb\n## B\nc\n', 'A')).toBe('a\n### sub\nb\n');
    expect(() => section('## B\n', 'A')).toThrow('no section "## A"');
  });

  it('refuses a fenced block without a marker unless told to pass it over, and a marker used twice', () => {
    const marked = '<!-- getting-started: one -->\n```sh\necho 1\n```\n';
    expect([...markedBlocks(marked).entries()]).toEqual([['one', { lang: 'sh', body: 'echo 1\n' }]]);
    expect(() => markedBlocks(`${marked}\n\`\`\`sh\necho 2\n\`\`\`\n`)).toThrow(
      'fenced block without a <!-- getting-started: … --> marker',
    );
    expect(() => markedBlocks(`${marked}\n${marked}`)).toThrow('marker "one" used twice');
    expect([...markedBlocks('```sh\necho 0\n```\n' + marked, false).keys()]).toEqual(['one']);
  });

  it('drops comment lines and joins continued lines into one command', () => {
    const body = 'a \\\n  --b c   # note\n# or: d \\\n#   e\nf\n';
    expect(shellCommands(body)).toEqual(['a --b c   # note', 'f']);
    expect(withoutComment('a --b c   # note')).toBe('a --b c');
  });
});
