import { describe, expect, it } from 'vitest';
import { isAlias, isSeq, LineCounter, parseAllDocuments } from 'yaml';
import { deepBlockNesting, deepFlowNesting, largestSpec } from '../../harness/hostile-specs.js';
import { formatDiagnostic } from '../../src/imagecache/errors.js';
import { parseFiles } from '../../src/imagecache/parse.js';
import { MAX_YAML_DEPTH, MAX_YAML_NODES, parseYamlDocuments, resolveAlias } from '../../src/imagecache/yaml.js';

function diagnose(text: string): string[] {
  return parseFiles([{ path: 'in.yaml', text }]).diagnostics.map(formatDiagnostic);
}

describe('parseYamlDocuments', () => {
  it('reads what the library reads', () => {
    const text = 'a: &x [1, {b: 2}]\nc: *x\n<<: {d: 3}\n---\n- "yes"\n- 3.12\n---\n';
    const ours = [...parseYamlDocuments(text)].map((d) => d.toJS({ maxAliasCount: -1 }) as unknown);
    const theirs = parseAllDocuments(text, { version: '1.2', merge: true }) as unknown as { toJS(o: object): unknown }[];
    expect(ours).toEqual(theirs.map((d) => d.toJS({ maxAliasCount: -1 })));
    expect(ours).toHaveLength(3);
  });

  it('refuses duplicate keys in block and flow mappings, naming the line and column', () => {
    const [doc] = [...parseYamlDocuments('a: 1\nb: {x: 1, x: 2}\na: 3\n', new LineCounter())];
    expect(doc?.errors.map((e) => e.message)).toEqual([
      'Map keys must be unique at line 3, column 1:',
      'Map keys must be unique at line 2, column 11:',
    ]);
  });

  it('keeps keys of different types apart, as the library does', () => {
    const [doc] = [...parseYamlDocuments('1: a\n"1": b\ntrue: c\n"true": d\n')];
    expect(doc?.errors).toEqual([]);
  });

  it('resolves an alias to the last anchor of its name before it', () => {
    const [doc] = [...parseYamlDocuments('- &a 1\n- *a\n- &a 2\n- *a\n- [&b 3, *b]\n')];
    const items = isSeq(doc?.contents) ? doc.contents.items : [];
    const resolved = items.map((n) => (isAlias(n) && doc !== undefined ? resolveAlias(doc, n)?.toJSON() : undefined));
    expect(resolved).toEqual([undefined, 1, undefined, 2, undefined]);
  });

  it('leaves an alias without an anchor before it unresolved', () => {
    const [doc] = [...parseYamlDocuments('- *a\n- &a 1\n')];
    const first = isSeq(doc?.contents) ? doc.contents.items[0] : undefined;
    expect(isAlias(first) && doc !== undefined ? resolveAlias(doc, first) : 'not an alias').toBeUndefined();
  });
});

// Generous timeouts: these read large inputs on a shared machine. Speed is measured in bench:loader.
describe('parseFiles: nesting and size limits per document', { timeout: 120_000 }, () => {
  it.each([
    ['800 nested flow lists', deepFlowNesting(800), 'in.yaml:7:73'],
    ['100,000 nested flow lists', deepFlowNesting(100_000), 'in.yaml:7:73'],
    ['800 nested block mappings', deepBlockNesting(800), `in.yaml:${7 + MAX_YAML_DEPTH - 2}:`],
    [
      'compact nested lists',
      `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: c}\nspec:\n  cacheSpec:\n  - images:\n    ${'- '.repeat(5_000)}x\n`,
      'in.yaml:7:',
    ],
  ])('%s: one clean error where the limit is reached', (_name, text, at) => {
    const out = diagnose(text);
    expect(out).toEqual([
      expect.stringContaining(
        `: error: document 1: document is too deep to read: lists and mappings nested more than ${MAX_YAML_DEPTH} levels deep`,
      ),
    ]);
    expect(out[0]?.startsWith(at)).toBe(true);
  });

  it('refuses a document of more than the node limit, reading nothing past it', () => {
    const text = largestSpec('flow', (MAX_YAML_NODES + 1_000) * 24);
    const result = parseFiles([{ path: 'in.yaml', text }]);
    expect(result.caches).toEqual([]);
    expect(result.diagnostics.map(formatDiagnostic)).toEqual([
      expect.stringMatching(
        new RegExp(`^in\\.yaml:7:\\d+: error: document 1: document is too large to read: more than ${MAX_YAML_NODES} YAML nodes`),
      ),
    ]);
  });

  it('reads a document just under the node limit', () => {
    const text = largestSpec('block', (MAX_YAML_NODES - 100) * 22);
    const result = parseFiles([{ path: 'in.yaml', text }]);
    expect(result.diagnostics).toEqual([]);
    expect(result.caches[0]?.entries[0]?.images.length).toBeGreaterThan(MAX_YAML_NODES * 0.8);
  });
});
