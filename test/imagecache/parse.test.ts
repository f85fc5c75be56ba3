import { describe, expect, it } from 'vitest';
import { formatDiagnostic } from '../../src/imagecache/errors.js';
import { parseAllDocuments } from 'yaml';
import { parseFiles } from '../../src/imagecache/parse.js';
import { synthYaml } from '../../src/synth/app.js';
import { bundleOf } from '../helpers.js';

/** Parses one file and renders its diagnostics the way the CLI prints them. */
function diagnose(text: string): string[] {
  return parseFiles([{ path: 'in.yaml', text }]).diagnostics.map(formatDiagnostic);
}

const fledged = (spec: string, metadata = 'name: c\n  namespace: ns') =>
  `apiVersion: kubefledged.io/v1alpha2\nkind: ImageCache\nmetadata:\n  ${metadata}\nspec:\n${spec}`;
const prewarm = (spec: string) =>
  `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata:\n  name: c\n  namespace: ns\nspec:\n${spec}`;

describe('parseFiles: invalid input', () => {
  it.each([
    [
      'uppercase repository',
      fledged('  cacheSpec:\n  - images: [Redis:6]\n'),
      'in.yaml:8:14: error: document 1: spec.cacheSpec[0].images[0]: invalid image reference "Redis:6": repository name "Redis" must be lowercase',
    ],
    [
      'empty tag (an unquoted trailing colon)',
      fledged('  cacheSpec:\n  - images: ["redis:"]\n'),
      'in.yaml:8:14: error: document 1: spec.cacheSpec[0].images[0]: invalid image reference "redis:": tag is empty in "redis:"',
    ],
    [
      'empty tag, unquoted: YAML makes it a mapping',
      fledged('  cacheSpec:\n  - images:\n    - redis:\n'),
      'in.yaml:9:7: error: document 1: spec.cacheSpec[0].images[0]: must be a string, got a mapping (YAML reads an unquoted "redis:" as a mapping: the tag after the colon is empty)',
    ],
    [
      'short digest',
      fledged('  cacheSpec:\n  - images: [redis@sha256:abc]\n'),
      'in.yaml:8:14: error: document 1: spec.cacheSpec[0].images[0]: invalid image reference "redis@sha256:abc": digest "sha256:abc" is invalid: sha256 needs 64 lowercase hex characters, got 3',
    ],
    [
      'a name over 255 characters once normalised',
      fledged(`  cacheSpec:\n  - images: [${'a'.repeat(240)}:1]\n`),
      'in.yaml:8:14: error: document 1: spec.cacheSpec[0].images[0]: invalid image reference "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa…" (242 chars): repository name is 258 characters long once normalised (docker.io/library/aaaaaaaaaaaaaaaaaaaaaa…), over the limit of 255 that registries and container runtimes enforce',
    ],
    [
      'a bare name of 64 hex digits',
      fledged(`  cacheSpec:\n  - images: [redis:7]\n  - images: [${'0a'.repeat(32)}]\n`),
      'in.yaml:9:14: error: document 1: spec.cacheSpec[1].images[0]: invalid image reference "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a…" (64 chars): a name of 64 hex digits reads as an image ID, which the kubelet and containerd refuse to pull by name: add a tag or a registry',
    ],
    [
      'unquoted number',
      fledged('  cacheSpec:\n  - images:\n    - 3.12\n'),
      'in.yaml:9:7: error: document 1: spec.cacheSpec[0].images[0]: must be a string, got the number 3.12 (quote it)',
    ],
    [
      'boolean image',
      fledged('  cacheSpec:\n  - images: [true]\n'),
      'in.yaml:8:14: error: document 1: spec.cacheSpec[0].images[0]: must be a string, got the boolean true (quote it)',
    ],
    [
      'bad label key',
      fledged('  cacheSpec:\n  - images: [redis:7]\n    nodeSelector:\n      "bad key": x\n'),
      `in.yaml:10:7: error: document 1: spec.cacheSpec[0].nodeSelector["bad key"]: label key "bad key" is invalid: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
    ],
    [
      'bad label value',
      fledged('  cacheSpec:\n  - images: [redis:7]\n    nodeSelector:\n      tier: "back end"\n'),
      `in.yaml:10:13: error: document 1: spec.cacheSpec[0].nodeSelector.tier: label value "back end" is invalid: must be empty or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
    ],
    [
      'numeric label value',
      fledged('  cacheSpec:\n  - images: [redis:7]\n    nodeSelector:\n      gpus: 8\n'),
      'in.yaml:10:13: error: document 1: spec.cacheSpec[0].nodeSelector.gpus: must be a string, got the number 8 (quote it)',
    ],
    [
      'empty image list',
      fledged('  cacheSpec:\n  - images: []\n'),
      'in.yaml:8:13: error: document 1: spec.cacheSpec[0].images: must not be empty',
    ],
    ['empty cacheSpec', fledged('  cacheSpec: []\n'), 'in.yaml:7:14: error: document 1: spec.cacheSpec: must not be empty'],
    [
      'missing images',
      fledged('  cacheSpec:\n  - nodeSelector: {tier: a}\n'),
      'in.yaml:8:5: error: document 1: spec.cacheSpec[0].images: required field "images" is missing',
    ],
    [
      'typo in a field name',
      fledged('  cacheSpec:\n  - images: [redis:7]\n    nodeSelecter: {tier: a}\n'),
      'in.yaml:9:5: error: document 1: spec.cacheSpec[0].nodeSelecter: unknown field "nodeSelecter" (did you mean "nodeSelector"?)',
    ],
    [
      'prewarm-only field in a kube-fledged document',
      fledged('  cacheSpec:\n  - images: [redis:7]\n    tolerations: []\n'),
      'in.yaml:9:5: error: document 1: spec.cacheSpec[0].tolerations: unknown field "tolerations" (known fields: "images", "nodeSelector")',
    ],
    [
      'missing name',
      fledged('  cacheSpec:\n  - images: [redis:7]\n', 'namespace: ns'),
      'in.yaml:4:3: error: document 1: metadata.name: required field "name" is missing',
    ],
    [
      'generateName instead of name',
      fledged('  cacheSpec:\n  - images: [redis:7]\n', 'generateName: c-'),
      'in.yaml:4:3: error: document 1: metadata.name: required field "name" is missing (generateName is not supported: output must be reproducible)',
    ],
    [
      'YAML syntax error',
      'apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: c\n',
      'in.yaml:4:1: error: document 1: YAML syntax error: Flow map in block collection must be sufficiently indented and end with a } at line 4, column 1:',
    ],
    [
      'duplicate key',
      fledged('  cacheSpec:\n  - images: [redis:7]\n    images: [redis:6]\n'),
      'in.yaml:9:5: error: document 1: YAML syntax error: Map keys must be unique at line 9, column 5:',
    ],
    [
      'unsupported apiVersion',
      'apiVersion: kubefledged.io/v1alpha1\nkind: ImageCache\n',
      'in.yaml:1:13: error: document 1: apiVersion: unsupported apiVersion "kubefledged.io/v1alpha1": expected "kubefledged.io/v1alpha2" or "prewarm.dev/v1alpha1"',
    ],
    [
      'unsupported kind',
      'apiVersion: prewarm.dev/v1alpha1\nkind: ConfigMap\n',
      'in.yaml:2:7: error: document 1: kind: unsupported kind "ConfigMap": expected "ImageCache"',
    ],
    ['spec not a mapping', fledged('- a\n'), 'in.yaml:7:1: error: document 1: spec: must be a mapping, got a list'],
    [
      'an ImageCache without apiVersion',
      'kind: ImageCache\nmetadata: {name: c}\n',
      'in.yaml:1:1: error: document 1: apiVersion: required field "apiVersion" is missing',
    ],
    [
      'bad maxUnavailable',
      prewarm('  cacheSpec:\n  - images: [redis:7]\n  rollout: {maxUnavailable: 0}\n'),
      'in.yaml:9:29: error: document 1: spec.rollout.maxUnavailable: must be between 1 and 1000000, got 0',
    ],
    [
      'bad percentage',
      prewarm('  cacheSpec:\n  - images: [redis:7]\n  rollout: {maxUnavailable: "150%"}\n'),
      'in.yaml:9:29: error: document 1: spec.rollout.maxUnavailable: must be a positive integer or a percentage from 1% to 100%, got "150%"',
    ],
    [
      'bad duration',
      prewarm('  cacheSpec:\n  - images: [redis:7]\n  gate: {deadline: 10}\n'),
      'in.yaml:9:20: error: document 1: spec.gate.deadline: must be a string, got the number 10 (quote it)',
    ],
    [
      'gate deadline of zero (the sidecar refuses it and never lifts the gate)',
      prewarm('  cacheSpec:\n  - images: [redis:7]\n  gate: {deadline: 0s}\n'),
      'in.yaml:9:20: error: document 1: spec.gate.deadline: must be between 1s and 24h, got 0s',
    ],
    [
      'gate deadline over a day',
      prewarm('  cacheSpec:\n  - images: [redis:7]\n  gate: {deadline: 24h1s}\n'),
      'in.yaml:9:20: error: document 1: spec.gate.deadline: must be between 1s and 24h, got 24h1s',
    ],
    [
      'refresh interval over 30 days',
      prewarm('  cacheSpec:\n  - images: [redis:7]\n  refresh: {interval: 721h}\n'),
      'in.yaml:9:23: error: document 1: spec.refresh.interval: must be between 0s and 720h, got 721h',
    ],
    [
      'no lanes',
      prewarm('  cacheSpec:\n  - images: [redis:7]\n  lanes: 0\n'),
      'in.yaml:9:10: error: document 1: spec.lanes: must be between 1 and 16, got 0',
    ],
    [
      'more lanes than the cap',
      prewarm('  cacheSpec:\n  - images: [redis:7]\n  lanes: 17\n'),
      'in.yaml:9:10: error: document 1: spec.lanes: must be between 1 and 16, got 17',
    ],
    [
      'lanes in a kube-fledged document',
      fledged('  cacheSpec:\n  - images: [redis:7]\n  lanes: 2\n'),
      'in.yaml:9:3: error: document 1: spec.lanes: unknown field "lanes" (known fields: "cacheSpec", "imagePullSecrets")',
    ],
    [
      'earlyPull in a kube-fledged document',
      fledged('  cacheSpec:\n  - images: [redis:7]\n  earlyPull: true\n'),
      'in.yaml:9:3: error: document 1: spec.earlyPull: unknown field "earlyPull" (known fields: "cacheSpec", "imagePullSecrets")',
    ],
    [
      'a helper image: only the invocation chooses code',
      prewarm('  cacheSpec:\n  - images: [redis:7]\n  helperImage: ghcr.io/me/busybox:1\n'),
      "in.yaml:9:16: error: document 1: spec.helperImage: a spec may not choose the helper image: its binary runs in every container of the pool, so only the synth invocation chooses it (prewarm synth --helper-image, or the Argo CD plugin's PREWARM_PLUGIN_HELPER_IMAGE); remove this field",
    ],
    [
      'a helper image in a kube-fledged document',
      fledged('  cacheSpec:\n  - images: [redis:7]\n  helperImage: ghcr.io/me/busybox:1\n'),
      'in.yaml:9:3: error: document 1: spec.helperImage: unknown field "helperImage" (known fields: "cacheSpec", "imagePullSecrets")',
    ],
    [
      'earlyPull as a string',
      prewarm('  cacheSpec:\n  - images: [redis:7]\n  earlyPull: "yes"\n'),
      'in.yaml:9:14: error: document 1: spec.earlyPull: must be true or false, got the string "yes"',
    ],
    [
      'bad toleration operator',
      prewarm('  cacheSpec:\n  - images: [redis:7]\n    tolerations: [{key: a, operator: Is}]\n'),
      'in.yaml:9:38: error: document 1: spec.cacheSpec[0].tolerations[0].operator: value "Is" is not one of "Exists", "Equal", ""',
    ],
    [
      'Exists toleration with a value',
      prewarm('  cacheSpec:\n  - images: [redis:7]\n    tolerations: [{key: a, operator: Exists, value: b}]\n'),
      'in.yaml:9:53: error: document 1: spec.cacheSpec[0].tolerations[0].value: must be empty when operator is "Exists"',
    ],
    [
      'bad pool name',
      prewarm('  cacheSpec:\n  - images: [redis:7]\n    pool: GPU\n'),
      `in.yaml:9:11: error: document 1: spec.cacheSpec[0].pool: pool name "GPU" must be a lowercase RFC 1123 label: lowercase alphanumerics or '-', starting and ending with an alphanumeric`,
    ],
  ])('%s', (_name, text, expected) => {
    const lines = diagnose(text);
    expect(lines.filter((l) => l.includes(': error: '))[0]?.split('\n')[0]).toBe(expected);
  });

  it('treats Object.prototype names as unknown fields and plain label keys (found by fuzzing)', () => {
    expect(diagnose(fledged('  cacheSpec:\n  - images: [redis:7]\n  constructor: 1\n'))[0]).toMatch(/unknown field "constructor"/);
    const r = parseFiles([
      { path: 'p', text: fledged('  cacheSpec:\n  - images: [redis:7]\n    nodeSelector: {constructor: x, toString: y}\n') },
    ]);
    expect(r.caches[0]?.entries[0]?.nodeSelector).toEqual({ constructor: 'x', toString: 'y' });
    expect(diagnose(fledged('  cacheSpec:\n  - images: [redis:7]\n    nodeSelector: {__proto__: x}\n'))[0]).toMatch(
      /label key "__proto__" is invalid/,
    );
  });

  it('reports every error, not just the first', () => {
    const lines = diagnose(fledged('  cacheSpec:\n  - images: [Redis:6, "a:", 1]\n    nodeSelector: {"x y": z}\n'));
    expect(lines).toHaveLength(4);
  });

  it('rejects a duplicate name and namespace across files, at metadata.name, pointing at the first one', () => {
    const text = fledged('  cacheSpec:\n  - images: [redis:7]\n');
    const r = parseFiles([
      { path: 'a.yaml', text },
      { path: 'b.yaml', text: `# a comment first\n${text}` },
    ]);
    expect(r.diagnostics.map(formatDiagnostic)).toEqual([
      'b.yaml:5:9: error: document 1: metadata.name: duplicate ImageCache "ns/c": already defined at a.yaml:4:9 (document 1)',
    ]);
  });

  it('never returns a cache that had an error', () => {
    expect(parseFiles([{ path: 'x', text: fledged('  cacheSpec:\n  - images: [Redis:6]\n') }]).caches).toEqual([]);
  });
});

describe('parseFiles: valid input', () => {
  it('reads kube-fledged documents unchanged, tolerating every taint like its Jobs', () => {
    const r = parseFiles([
      {
        path: 'f.yaml',
        text: fledged(
          '  cacheSpec:\n  - images: [redis:7]\n    nodeSelector: {tier: backend}\n  imagePullSecrets: [{name: s}]\nstatus:\n  status: Succeeded\n',
        ),
      },
    ]);
    expect(r.diagnostics).toEqual([]);
    expect(r.caches[0]).toMatchObject({
      apiVersion: 'kubefledged.io/v1alpha2',
      name: 'c',
      namespace: 'ns',
      imagePullSecrets: ['s'],
      entries: [
        { nodeSelector: { tier: 'backend' }, tolerations: [{ operator: 'Exists' }], images: [{ canonical: 'docker.io/library/redis:7' }] },
      ],
    });
  });

  it('keeps YAML 1.2 strings as strings: yes, on and 0755 are not booleans or octals', () => {
    const r = parseFiles([
      { path: 'f.yaml', text: fledged('  cacheSpec:\n  - images: [redis:7]\n    nodeSelector: {a: yes, b: on, c: "0755"}\n') },
    ]);
    expect(r.caches[0]?.entries[0]?.nodeSelector).toEqual({ a: 'yes', b: 'on', c: '0755' });
  });

  it('warns, and defaults to latest, when an image has no tag', () => {
    const lines = diagnose(fledged('  cacheSpec:\n  - images: [busybox]\n'));
    expect(lines).toEqual([
      'in.yaml:8:14: warning: document 1: spec.cacheSpec[0].images[0]: image "busybox" has no tag; using docker.io/library/busybox:latest (pin a tag or digest)',
    ]);
  });

  it("reads any refresh interval the sidecar accepts: the floor is the invocation's, and synth holds specs to it (src/synth/bounds.ts)", () => {
    const text = prewarm('  cacheSpec:\n  - images: [redis:7]\n  refresh: {interval: 30s}\n');
    expect(diagnose(text)).toEqual([]);
    expect(parseFiles([{ path: 'in.yaml', text }]).caches[0]?.settings.refreshSeconds).toBe(30);
    expect(diagnose(prewarm('  cacheSpec:\n  - images: [redis:7]\n  refresh: {interval: 0s}\n'))).toEqual([]);
  });

  it('uses the default namespace when metadata names none', () => {
    const r = parseFiles([{ path: 'f', text: fledged('  cacheSpec:\n  - images: [redis:7]\n', 'name: c') }], { defaultNamespace: 'team' });
    expect(r.caches[0]?.namespace).toBe('team');
  });

  it('reads every prewarm field', () => {
    const r = parseFiles([
      {
        path: 'p.yaml',
        text: prewarm(
          [
            '  cacheSpec:',
            '  - pool: gpu',
            '    images: [nvcr.io/nvidia/pytorch:24.05-py3]',
            '    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]',
            '  priorityClassName: warm-images',
            '  rollout: {maxUnavailable: 25%}',
            '  gate: {taintKey: example.com/cold, deadline: 15m}',
            '  refresh: {interval: 6h}',
            '  lanes: 4',
            '  earlyPull: true',
            '',
          ].join('\n'),
        ),
      },
    ]);
    expect(r.diagnostics).toEqual([]);
    expect(r.caches[0]?.settings).toMatchObject({
      priorityClassName: 'warm-images',
      maxUnavailable: '25%',
      gate: { taintKey: 'example.com/cold', deadlineSeconds: 900 },
      refreshSeconds: 21600,
      lanes: 4,
      earlyPull: true,
    });
    expect(r.caches[0]?.settingLocations.earlyPull).toMatchObject({ line: 16, column: 14, path: 'spec.earlyPull' });
    expect(r.caches[0]?.entries[0]).toMatchObject({
      pool: 'gpu',
      tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
    });
  });

  it('turns gating off with gate.enabled: false', () => {
    const r = parseFiles([{ path: 'p', text: prewarm('  cacheSpec:\n  - images: [redis:7]\n  gate: {enabled: false}\n') }]);
    expect(r.caches[0]?.settings.gate).toBeUndefined();
  });

  it('skips empty documents and reads many per file', () => {
    const one = fledged('  cacheSpec:\n  - images: [redis:7]\n');
    const r = parseFiles([{ path: 'm', text: `---\n${one}---\n${one.replace('name: c', 'name: d')}---\n` }]);
    expect(r.diagnostics).toEqual([]);
    expect(r.caches.map((c) => c.name)).toEqual(['c', 'd']);
  });

  it('bounds alias expansion (billion laughs)', () => {
    const lines = ['a: &a ["x:1","x:1","x:1","x:1","x:1","x:1","x:1","x:1","x:1","x:1"]'];
    for (let i = 0; i < 8; i++)
      lines.push(
        `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10)
          .fill(`*${String.fromCharCode(97 + i)}`)
          .join(',')}]`,
      );
    const text = prewarm(`  cacheSpec:\n  - images: *i\n`).replace(
      'spec:\n',
      `x-anchors:\n${lines.map((l) => `  ${l}`).join('\n')}\nspec:\n`,
    );
    const started = performance.now();
    const out = diagnose(text);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(out.some((l) => l.includes('document is too large to read') || l.includes('unknown field "x-anchors"'))).toBe(true);
  });
});

describe('parseFiles: hostile values are quoted as short, escaped excerpts', () => {
  // A YAML double-quoted scalar: \e is ESC and \0 is NUL once parsed.
  const evil = `"\\e[31m${'Z'.repeat(100_000)}\\0"`;
  // YAML allows at most 1024 characters in an implicit key.
  const evilKey = `"\\e[31m${'Z'.repeat(1_000)}\\0"`;
  it.each([
    ['an image', fledged(`  cacheSpec:\n  - images: [${evil}]\n`)],
    ['an image that is a mapping', fledged(`  cacheSpec:\n  - images:\n    - ${'Z'.repeat(1_000)}:\n`)],
    ['an unknown field', fledged(`  cacheSpec:\n  - images: [redis:7]\n  ${evilKey}: 1\n`)],
    ['a label key', fledged(`  cacheSpec:\n  - images: [redis:7]\n    nodeSelector: {${evil}: x}\n`)],
    ['a label value', fledged(`  cacheSpec:\n  - images: [redis:7]\n    nodeSelector: {tier: ${evil}}\n`)],
    ['a namespace', fledged('  cacheSpec:\n  - images: [redis:7]\n', `name: c\n  namespace: ${evil}`)],
    ['an apiVersion', `apiVersion: ${evil.replace('"\\e', '"prewarm.dev/\\e')}\nkind: ImageCache\n`],
    ['a kind', `apiVersion: prewarm.dev/v1alpha1\nkind: ${evil}\n`],
    ['a duration', prewarm(`  cacheSpec:\n  - images: [redis:7]\n  gate: {deadline: ${evil}}\n`)],
    ['maxUnavailable', prewarm(`  cacheSpec:\n  - images: [redis:7]\n  rollout: {maxUnavailable: ${evil}}\n`)],
    ['a string where a boolean belongs', prewarm(`  cacheSpec:\n  - images: [redis:7]\n  gate: {enabled: ${evil}}\n`)],
    ['a long number', prewarm(`  cacheSpec:\n  - images: [${'9'.repeat(100_000)}]\n`)],
  ])('%s', (_name, text) => {
    const lines = diagnose(text);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      // eslint-disable-next-line no-control-regex -- the test looks for raw control characters
      expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
      expect(line).not.toContain('Z'.repeat(61));
      expect(line).not.toContain('9'.repeat(61));
      expect(line.length).toBeLessThan(700);
    }
    expect(lines.join('\n')).toMatch(/\\x1b|ZZZ…" \(\d+ chars\)|9… \(\d+ chars\)/);
  });

  it('bounds and escapes the parts of a reference that the image parser quotes', () => {
    // reference.ts ships alone in the sidecar's image, so its own quotes are bounded by fields.ts.
    const [line] = diagnose(fledged(`  cacheSpec:\n  - images: ["redis:\\e${'Z'.repeat(100_000)}"]\n`));
    expect(line).toMatch(/invalid image reference "redis:\\x1bZ{53}…" \(100007 chars\): tag "\\x1bZ+… \(\d+ chars\)$/);
    // eslint-disable-next-line no-control-regex -- the test looks for raw control characters
    expect(line).not.toMatch(/[\u0000-\u001f]|Z{181}/);
  });
});

describe('parseFiles: documents that are not ImageCaches', () => {
  const cache = fledged('  cacheSpec:\n  - images: [redis:7]\n');
  it.each([
    ['a Deployment', 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: kubefledged-controller}\nspec: {replicas: 1}\n'],
    ['a Namespace (core group)', 'apiVersion: v1\nkind: Namespace\nmetadata: {name: kube-fledged}\n'],
    [
      'the ImageCache CRD itself',
      'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: imagecaches.kubefledged.io}\nspec: {group: kubefledged.io}\n',
    ],
    ['a kustomization.yaml', 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [imagecache.yaml]\n'],
    ['a KEDA ScaledObject', 'apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: s}\nspec: {scaleTargetRef: {name: d}}\n'],
    [
      'an operator CR in a subdomain of kubefledged.io',
      'apiVersion: charts.helm.kubefledged.io/v1alpha2\nkind: KubeFledged\nmetadata: {name: k}\n',
    ],
    ["another vendor's ImageCache", 'apiVersion: images.example.com/v1\nkind: ImageCache\nspec: {anything: [1, 2]}\n'],
    ['plain configuration, no apiVersion or kind', 'replicaCount: 1\nimage: {repository: nginx}\n'],
    ['a list', '- group: charts.helm.k8s.io\n  kind: KubeFledged\n'],
    ['a scalar', 'just text\n'],
    ['an explicit null', '~\n'],
    [
      "another group's document that YAML refuses (a repeated key)",
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a, name: b}\n',
    ],
  ])('%s is skipped, counted and never reported on', (_name, text) => {
    const result = parseFiles([{ path: 'in.yaml', text: `${text}---\n${cache}` }]);
    expect(result.diagnostics).toEqual([]);
    expect(result.caches).toHaveLength(1);
    expect(result.skipped).toEqual({ documents: 1, files: 1, outputDocuments: 0, outputFiles: 0, helmTemplates: 0 });
  });

  it.each([
    [
      'an unknown version of kubefledged.io',
      'apiVersion: kubefledged.io/v1alpha1\nkind: ImageCache\n',
      'apiVersion: unsupported apiVersion "kubefledged.io/v1alpha1"',
    ],
    [
      'an unknown version of prewarm.dev',
      'apiVersion: prewarm.dev/v2\nkind: ImageCache\n',
      'apiVersion: unsupported apiVersion "prewarm.dev/v2"',
    ],
    [
      'an unknown kind of prewarm.dev',
      'apiVersion: prewarm.dev/v1alpha1\nkind: ImageCacheList\n',
      'kind: unsupported kind "ImageCacheList"',
    ],
    [
      'a typo in the group',
      'apiVersion: kubefleged.io/v1alpha2\nkind: ImageCache\n',
      'apiVersion: unsupported apiVersion "kubefleged.io/v1alpha2"',
    ],
    [
      'a group in capitals',
      'apiVersion: Prewarm.dev/v1alpha1\nkind: ImageCache\n',
      'apiVersion: unsupported apiVersion "Prewarm.dev/v1alpha1"',
    ],
    ['a group without its version', 'apiVersion: prewarm.dev\nkind: ImageCache\n', 'apiVersion: unsupported apiVersion "prewarm.dev"'],
    [
      "kube-fledged's former group",
      'apiVersion: fledged.k8s.io/v1alpha1\nkind: ImageCache\n',
      'apiVersion: unsupported apiVersion "fledged.k8s.io/v1alpha1"',
    ],
    [
      'a document that YAML refuses and that names no group',
      'kind: ImageCache\nmetadata: {name: a, name: b}\n',
      'YAML syntax error: Map keys must be unique',
    ],
  ])('%s stays an error (typo protection)', (_name, text, message) => {
    const result = parseFiles([{ path: 'in.yaml', text }]);
    expect(result.diagnostics.map((d) => `${d.path}: ${d.message}`)).toEqual([expect.stringContaining(message)]);
    expect(result.skipped.documents).toBe(0);
  });

  it('counts documents and the files they are in; empty documents are not counted', () => {
    const deployment = 'apiVersion: apps/v1\nkind: Deployment\n';
    const result = parseFiles([
      { path: 'a.yaml', text: `${deployment}---\n${deployment}---\n# only a comment\n---\n` },
      { path: 'b.yaml', text: `${cache}---\n${deployment}` },
      { path: 'c.yaml', text: cache.replace('name: c', 'name: d') },
    ]);
    expect(result.diagnostics).toEqual([]);
    expect(result.caches.map((c) => c.name)).toEqual(['c', 'd']);
    expect(result.skipped).toEqual({ documents: 3, files: 2, outputDocuments: 0, outputFiles: 0, helmTemplates: 0 });
  });
});

describe("prewarm's own output", () => {
  const cacheText = fledged('  cacheSpec:\n  - images: [redis:7]\n');
  const output = synthYaml(bundleOf('  cacheSpec:\n  - images: [redis:7]\n'), { ownedNamespaces: ['ml'] });
  const labelled = (apiVersion: string, managedBy: string): string =>
    `apiVersion: ${apiVersion}\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: {app.kubernetes.io/managed-by: ${managedBy}}\n`;

  it('parseFiles skips and counts it apart from other kinds, and still reads a labelled ImageCache', () => {
    const result = parseFiles([
      { path: 'out/a.k8s.yaml', text: output },
      { path: 'mixed.yaml', text: `${labelled('v1', 'prewarm')}---\n${labelled('v1', 'Helm')}` },
      { path: 'c.yaml', text: cacheText.replace('metadata:\n', 'metadata:\n  labels: {app.kubernetes.io/managed-by: prewarm}\n') },
    ]);
    expect(result.diagnostics).toEqual([]);
    expect(result.caches).toHaveLength(1);
    const documents = parseAllDocuments(output).length;
    expect(result.skipped).toEqual({ documents: 1, files: 1, outputDocuments: documents + 1, outputFiles: 2, helmTemplates: 0 });
  });
});

describe('parseFiles: smaller items', () => {
  const read = (text: string) => {
    const r = parseFiles([{ path: 'in.yaml', text }]);
    return { errors: r.diagnostics.filter((d) => d.severity === 'error').map(formatDiagnostic), caches: r.caches };
  };

  it.each([
    [
      'a merge key in a cacheSpec entry; keys written beside it win',
      prewarm(
        '  cacheSpec:\n  - &gpu\n    images: [a:1]\n    nodeSelector: {tier: gpu}\n    tolerations: [{key: g, operator: Exists}]\n  - <<: *gpu\n    images: [b:1]\n',
      ),
      [
        { images: ['docker.io/library/a:1'], nodeSelector: { tier: 'gpu' } },
        { images: ['docker.io/library/b:1'], nodeSelector: { tier: 'gpu' } },
      ],
    ],
    [
      'a merge key in a nodeSelector',
      prewarm(
        '  cacheSpec:\n  - images: [a:1]\n    nodeSelector: &sel {tier: gpu}\n  - images: [b:1]\n    nodeSelector: {<<: *sel, zone: a}\n',
      ),
      [
        { images: ['docker.io/library/a:1'], nodeSelector: { tier: 'gpu' } },
        { images: ['docker.io/library/b:1'], nodeSelector: { tier: 'gpu', zone: 'a' } },
      ],
    ],
    [
      'a list of merged mappings: the earlier one wins',
      prewarm(
        '  cacheSpec:\n  - images: [a:1]\n    nodeSelector: &x {tier: x, zone: x}\n  - images: [b:1]\n    nodeSelector: &y {tier: y, rack: y}\n  - images: [c:1]\n    nodeSelector: {<<: [*y, *x]}\n',
      ),
      [
        { images: ['docker.io/library/a:1'], nodeSelector: { tier: 'x', zone: 'x' } },
        { images: ['docker.io/library/b:1'], nodeSelector: { tier: 'y', rack: 'y' } },
        { images: ['docker.io/library/c:1'], nodeSelector: { tier: 'y', rack: 'y', zone: 'x' } },
      ],
    ],
    [
      'nodeSelector and imagePullSecrets whose entries are all commented out (null) are empty',
      fledged('  cacheSpec:\n  - images: [a:1]\n    nodeSelector:\n      # tier: gpu\n  imagePullSecrets:\n  # - name: regcred\n'),
      [{ images: ['docker.io/library/a:1'], nodeSelector: {} }],
    ],
    [
      'an explicit null for optional prewarm fields',
      prewarm('  cacheSpec:\n  - images: [a:1]\n    tolerations: ~\n    pool: null\n  gate: ~\n'),
      [{ images: ['docker.io/library/a:1'], nodeSelector: {} }],
    ],
  ])('accepts %s', (_name, text, expected) => {
    const r = read(text);
    expect(r.errors).toEqual([]);
    expect(r.caches[0]?.entries.map((e) => ({ images: e.images.map((i) => i.canonical), nodeSelector: e.nodeSelector }))).toEqual(expected);
    expect(r.caches[0]?.imagePullSecrets).toEqual([]);
  });

  it.each([
    [
      'a merge key whose value is not a mapping',
      fledged('  cacheSpec:\n  - <<: 1\n    images: [a:1]\n'),
      'in.yaml:8:9: error: document 1: spec.cacheSpec[0]: a merge key (<<) takes a mapping or a list of mappings, got the number 1',
    ],
    [
      'a mapping that merges itself',
      fledged('  cacheSpec:\n  - &e {<<: *e, images: [a:1]}\n'),
      'in.yaml:8:9: error: document 1: spec.cacheSpec[0]: a merge key (<<) includes a mapping that includes this one',
    ],
    [
      'a quoted "<<" is a plain key',
      fledged('  cacheSpec:\n  - "<<": {}\n    images: [a:1]\n'),
      'in.yaml:8:5: error: document 1: spec.cacheSpec[0]["<<"]: unknown field "<<" (known fields: "images", "nodeSelector")',
    ],
    ['a null for a required field', fledged('  cacheSpec:\n'), 'in.yaml:7:13: error: document 1: spec.cacheSpec: must be a list, got null'],
    [
      'an undefined alias, at the alias',
      fledged('  cacheSpec:\n  - images:\n    - *nope\n'),
      'in.yaml:9:7: error: document 1: spec.cacheSpec[0].images[0]: undefined alias *nope: no anchor &nope comes before it in this document',
    ],
    [
      'an undefined alias as a key',
      fledged('  cacheSpec:\n  - images: [a:1]\n    *k : x\n'),
      'in.yaml:9:5: error: document 1: spec.cacheSpec[0]: undefined alias *k: no anchor &k comes before it in this document',
    ],
  ])('refuses %s', (_name, text, expected) => {
    expect(read(text).errors).toEqual([expected]);
  });
});

describe('tolerations: exactly what core/v1 ValidateTolerations accepts', () => {
  const entry = (tolerations: string) => prewarm(`  cacheSpec:\n  - images: [redis:7]\n    tolerations: [${tolerations}]\n`);
  const tolerationsOf = (tolerations: string) => {
    const r = parseFiles([{ path: 'in.yaml', text: entry(tolerations) }]);
    expect(r.diagnostics.map(formatDiagnostic)).toEqual([]);
    return r.caches[0]?.entries[0]?.tolerations;
  };

  it.each([
    ['an empty key with Exists: every taint', '{key: "", operator: Exists}', [{ operator: 'Exists' }]],
    ['no key with Exists', '{operator: Exists}', [{ operator: 'Exists' }]],
    [
      'an empty key with Exists and one effect',
      '{key: "", operator: Exists, effect: NoExecute}',
      [{ operator: 'Exists', effect: 'NoExecute' }],
    ],
    ['an empty key with Exists and an empty value', '{key: "", operator: Exists, value: ""}', [{ operator: 'Exists' }]],
    ['a key with Exists and no effect', '{key: a.io/b, operator: Exists}', [{ key: 'a.io/b', operator: 'Exists' }]],
    ['a key alone: Equal with an empty value', '{key: a}', [{ key: 'a', operator: 'Equal' }]],
    ['an empty operator means Equal', '{key: a, operator: "", value: b}', [{ key: 'a', operator: 'Equal', value: 'b' }]],
    [
      'Equal with a value and an effect',
      '{key: a, operator: Equal, value: b, effect: NoSchedule}',
      [{ key: 'a', operator: 'Equal', value: 'b', effect: 'NoSchedule' }],
    ],
    ['an empty effect matches every effect', '{key: a, operator: Exists, effect: ""}', [{ key: 'a', operator: 'Exists' }]],
    [
      'PreferNoSchedule',
      '{key: a, operator: Exists, effect: PreferNoSchedule}',
      [{ key: 'a', operator: 'Exists', effect: 'PreferNoSchedule' }],
    ],
    [
      'tolerationSeconds with NoExecute',
      '{key: a, operator: Exists, effect: NoExecute, tolerationSeconds: 30}',
      [{ key: 'a', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 }],
    ],
    [
      'a negative tolerationSeconds (read as 0 by the apiserver)',
      '{key: a, operator: Exists, effect: NoExecute, tolerationSeconds: -5}',
      [{ key: 'a', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: -5 }],
    ],
    [
      'an empty key with Exists, NoExecute and tolerationSeconds',
      '{key: "", operator: Exists, effect: NoExecute, tolerationSeconds: 0}',
      [{ operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 0 }],
    ],
  ])('accepts %s', (_name, text, expected) => {
    expect(tolerationsOf(text)).toEqual(expected);
  });

  it.each([
    [
      'an empty key with Equal',
      '{key: "", operator: Equal}',
      'spec.cacheSpec[0].tolerations[0].operator: must be "Exists" when key is empty',
    ],
    ['no key and no operator', '{effect: NoSchedule}', 'spec.cacheSpec[0].tolerations[0].operator: must be "Exists" when key is empty'],
    [
      'an empty key with an empty operator',
      '{key: "", operator: ""}',
      'spec.cacheSpec[0].tolerations[0].operator: must be "Exists" when key is empty',
    ],
    [
      'Exists with a value',
      '{key: a, operator: Exists, value: b}',
      'spec.cacheSpec[0].tolerations[0].value: must be empty when operator is "Exists"',
    ],
    [
      'an empty key with Exists and a value',
      '{key: "", operator: Exists, value: b}',
      'spec.cacheSpec[0].tolerations[0].value: must be empty when operator is "Exists"',
    ],
    [
      'tolerationSeconds without NoExecute',
      '{key: a, operator: Exists, effect: NoSchedule, tolerationSeconds: 1}',
      'spec.cacheSpec[0].tolerations[0].tolerationSeconds: is only allowed with effect "NoExecute"',
    ],
    [
      'tolerationSeconds without an effect',
      '{key: a, operator: Exists, tolerationSeconds: 1}',
      'spec.cacheSpec[0].tolerations[0].tolerationSeconds: is only allowed with effect "NoExecute"',
    ],
    [
      'an operator the apiserver does not serve by default',
      '{key: a, operator: Lt, value: "5"}',
      'spec.cacheSpec[0].tolerations[0].operator: value "Lt" is not one of "Exists", "Equal", ""',
    ],
    [
      'an unknown effect',
      '{key: a, operator: Exists, effect: NoScheduleNoAdmit}',
      'spec.cacheSpec[0].tolerations[0].effect: value "NoScheduleNoAdmit" is not one of "NoSchedule", "PreferNoSchedule", "NoExecute", ""',
    ],
    [
      'a key that is not a qualified name',
      '{key: "a b", operator: Exists}',
      'spec.cacheSpec[0].tolerations[0].key: toleration key "a b" name part must consist',
    ],
    [
      'a value that is not a label value',
      '{key: a, value: "b c"}',
      'spec.cacheSpec[0].tolerations[0].value: toleration value "b c" must be empty or consist',
    ],
    [
      'a fractional tolerationSeconds',
      '{key: a, operator: Exists, effect: NoExecute, tolerationSeconds: 1.5}',
      'spec.cacheSpec[0].tolerations[0].tolerationSeconds: must be an integer',
    ],
  ])('refuses %s', (_name, text, expected) => {
    const errors = diagnose(entry(text)).filter((l) => l.includes(': error: '));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(`error: document 1: ${expected}`);
  });
});
