/**
 * The README's "Getting started on your cluster" section as the tests read it: the fenced block
 * after each `<!-- getting-started: LABEL -->` marker, the shell commands in those blocks, and the
 * kubelet recipe of docs/operations.md that step 5 points to (marked the same way). Reading only;
 * test/e2e/getting-started.test.ts runs the commands against the harness cluster, and
 * test/docs/getting-started.test.ts checks without a cluster that the section still parses.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { parseTaint } from '../../harness/cluster/cluster.js';
import { REPO_DIR } from '../../harness/cluster/config.js';
import type { Taint } from '../../harness/cluster/node.js';
import { docBlock } from '../helpers.js';

/** The README section the steps live in. */
export const SECTION = 'Getting started on your cluster';
/** The marked blocks of the README section, in order (step 5 has none: it links to the recipes). */
export const STEPS = ['step 1', 'step 2', 'step 3', 'step 4', 'step 6'] as const;
export type Step = (typeof STEPS)[number];

/** The README's stand-in for "a registry your nodes can pull from" (the section says so). */
export const REGISTRY_PLACEHOLDER = 'registry.example.com/platform';
/** Step 6's stand-in for a node name. */
export const NODE_PLACEHOLDER = /(--node )NODE\b/g;

/**
 * Commands the README offers as alternatives to one it also shows, with the README's own words for
 * that; the test does not run them, and they count as skipped, never as passed.
 */
export const ALTERNATIVES: Readonly<Record<string, string>> = {
  'npx --yes --package ./prewarm-0.1.0.tgz prewarm validate specs/':
    'step 1: "install the tarball on a laptop, or run it with npx in CI"; the global install is run instead',
};

/** One fenced block: its info string (`sh`, `yaml`) and its text. */
export interface Block {
  readonly lang: string;
  readonly body: string;
}

/**
 * The text under the `## heading` of a Markdown file, up to the next heading of level 1 or 2
 * outside a fenced block (a shell comment in a block is no heading).
 */
export function section(markdown: string, heading: string): string {
  const lines = markdown.split('\n');
  const start = lines.indexOf(`## ${heading}`);
  if (start < 0) throw new Error(`no section "## ${heading}"`);
  let fenced = false;
  let end = start + 1;
  for (; end < lines.length; end++) {
    const line = lines[end] ?? '';
    if (line.startsWith('```')) fenced = !fenced;
    else if (!fenced && /^#{1,2} /.test(line)) break;
  }
  return lines.slice(start + 1, end).join('\n') + (end < lines.length ? '\n' : '');
}

const FENCE = /^```(\w*)\n([\s\S]*?)^```$/gm;
const MARKER = /^<!-- getting-started: ([^>]*?) -->\n$/;

/**
 * The marked fenced blocks of a section, by label, each label used once. With `every` (the
 * README's steps), every fenced block must be marked, so a block added to the section without a
 * marker fails here rather than going unrun.
 */
export function markedBlocks(text: string, every = true): Map<string, Block> {
  const out = new Map<string, Block>();
  for (const m of text.matchAll(FENCE)) {
    const before = text.slice(0, m.index);
    const label = MARKER.exec(before.slice(before.lastIndexOf('\n', before.length - 2) + 1))?.[1];
    if (label === undefined && !every) continue;
    if (label === undefined) throw new Error(`fenced block without a <!-- getting-started: … --> marker:\n${m[0]}`);
    if (out.has(label)) throw new Error(`marker "${label}" used twice`);
    out.set(label, { lang: m[1] ?? '', body: m[2] ?? '' });
  }
  return out;
}

/**
 * The commands of a shell block: comment-only lines dropped, then `\` continuations joined. A
 * command keeps its trailing `# …` comment (the shell ignores it).
 */
export function shellCommands(body: string): string[] {
  return body
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.trim().startsWith('#'))
    .join('\n')
    .split(/(?<!\\)\n/)
    .map((c) => c.replace(/\\\n\s*/g, '').trim());
}

/** A command without its trailing comment, as {@link ALTERNATIVES} names it. */
export function withoutComment(command: string): string {
  return command.replace(/\s+#.*$/, '');
}

function readRepoFile(path: string): string {
  return readFileSync(join(REPO_DIR, path), 'utf8');
}

/** The README's getting-started section: its prose and its marked blocks, one per step in {@link STEPS}. */
export function readmeSteps(): { text: string; blocks: ReadonlyMap<Step, Block> } {
  const text = section(readRepoFile('README.md'), SECTION);
  const blocks = markedBlocks(text);
  const labels = [...blocks.keys()];
  if (labels.join('|') !== STEPS.join('|'))
    throw new Error(`README "${SECTION}": marked blocks ${labels.join(', ')}; want ${STEPS.join(', ')}`);
  return { text, blocks: blocks as Map<Step, Block> };
}

/** The shell commands of one step (a `sh` block). */
export function stepCommands(blocks: ReadonlyMap<Step, Block>, step: Step): string[] {
  const b = blocks.get(step);
  if (b?.lang !== 'sh') throw new Error(`README ${step}: want a sh block, found ${b?.lang ?? 'none'}`);
  return shellCommands(b.body);
}

/** The kubelet recipe of docs/operations.md: the taints of its configuration file, and of its flag. */
export interface KubeletRecipe {
  readonly apiVersion: unknown;
  readonly kind: unknown;
  /** `registerWithTaints` of the marked KubeletConfiguration block. */
  readonly configTaints: Taint[];
  /** `--register-with-taints` of the marked kubelet command line. */
  readonly flagTaints: Taint[];
}

export function kubeletRecipe(): KubeletRecipe {
  const operations = readRepoFile('docs/operations.md');
  const config = { body: docBlock(operations, 'kubelet') };
  const flag = { body: docBlock(operations, 'kubelet-flag') };
  const doc = parse(config.body) as { apiVersion?: unknown; kind?: unknown; registerWithTaints?: Taint[] };
  const flagValue = /--register-with-taints=(\S+)/.exec(flag.body)?.[1];
  if (!doc.registerWithTaints || flagValue === undefined) throw new Error('docs/operations.md: the kubelet recipe names no taints');
  return {
    apiVersion: doc.apiVersion,
    kind: doc.kind,
    configTaints: doc.registerWithTaints,
    flagTaints: flagValue.split(',').map(parseTaint),
  };
}
