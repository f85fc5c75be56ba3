/**
 * What the fuzz run feeds the CLI: real inputs (examples/, kube-fledged's own deploy folder, prewarm's
 * own output) mutated byte by byte and structurally, hostile YAML (alias bombs, doubling merge keys,
 * deep nesting, huge flow lists, bad UTF-8, UTF-16, CRLF, BOM, NULs), odd file-system shapes, odd
 * command lines, and misbehaving apiservers and registries from harness/hostile-server.ts.
 *
 * A case is data only: files to lay out, an argv with placeholders, the server it talks to, and what
 * it may write. The runner (runner.ts) lays it out, runs it and checks the invariants.
 */
import { HOSTILE_BEHAVIOURS, HOSTILE_TEXT, type HostileBehaviour } from '../../harness/hostile-server.js';
import type { Rng } from './rng.js';

/** One input file of the corpus: where it came from, and its text. */
export interface CorpusFile {
  readonly name: string;
  readonly text: string;
}

/** An entry to lay out below the case's work folder. */
export type FileSpec =
  | { readonly path: string; readonly data: string | Buffer }
  | { readonly path: string; readonly dir: true }
  | { readonly path: string; readonly link: string }
  | { readonly path: string; readonly fifo: true };

/** How the case reaches a cluster: through a kubeconfig of one of these shapes. */
export type KubeconfigShape = 'hostile' | 'truncated' | 'refused' | 'fifo' | 'none';

/** What a successful run may change in its work folder. */
export type Writes =
  /** Nothing at all. */
  | { readonly kind: 'none' }
  /** Only the output folder (`synth -o`), relative to the work folder. */
  | { readonly kind: 'output'; readonly dir: string }
  /** Only the content of spec files that existed (`pin`, `migrate --write`). */
  | { readonly kind: 'in-place' };

/** The families of cases; each has its own count in a run. */
export type Family = 'mutate-real' | 'hostile-yaml' | 'fs-shapes' | 'argv' | 'network';

/** One run of the CLI. Placeholders in argv and file text: `{W}` work folder, `{OUTSIDE}` a folder beside it, `{HOST}` the server. */
export interface FuzzCase {
  readonly index: number;
  readonly family: Family;
  /** A short description of what was generated, for the failure report. */
  readonly what: string;
  readonly files: readonly FileSpec[];
  readonly argv: readonly string[];
  readonly server?: HostileBehaviour;
  readonly kubeconfig: KubeconfigShape;
  /** A docker config with credentials for the server, or a broken one. */
  readonly dockerConfig: 'auth' | 'bad-json' | 'none';
  readonly writes: Writes;
  /** Exit codes the command may end with (70 is never among them; see {@link FuzzCase.cluster}). */
  readonly exitCodes: readonly number[];
  /** The command reads a cluster: a cluster that fails it may end in exit 70 with one clean line (the documented code). */
  readonly cluster: boolean;
}

/** The secret in every generated kubeconfig and docker config: no part of it may reach stderr. */
export const FUZZ_TOKEN = 'fuzzsecret-9f3c1d7be2a54f60a8b1c9d0e7f6a5b4';
/** Hostile text as a command line can carry it (an argument cannot hold a NUL). */
const ARGV_TEXT = HOSTILE_TEXT.replaceAll('\u0000', '');

/** A registry that refuses every connection at once: images of generated specs live here. */
export const REFUSED_REGISTRY = '127.0.0.1:9';

const FILE_ONLY = [0, 1, 2] as const;
const PIN = [0, 1, 2, 4] as const;
const STATUS = [0, 1, 2, 3] as const;

// ---- mutations of real inputs ------------------------------------------------------------------

const HOSTILE_CHARS = [':', '-', '[', ']', '{', '}', '&', '*', '!', '|', '>', "'", '"', '#', '%', '@', '`', ',', '?', '\n', '\t', ' '];
const ODD_CHARS = ['\u0000', '\u00ff', '\ufeff', '\u202e', '\u001b', '\r', '\u2028', 'é', '3.12', 'yes', '~', 'null', '<<'];

type Mutation = (rng: Rng, text: string, corpus: readonly CorpusFile[]) => string | Buffer;

const MUTATIONS: Readonly<Record<string, Mutation>> = {
  'flip-chars': (rng, text) => {
    // Code points, not UTF-16 units: a flip never splits a pair by accident (bad-utf8 does that on purpose).
    // eslint-disable-next-line @typescript-eslint/no-misused-spread
    const chars = [...text];
    for (let n = rng.int(1, 8); n > 0 && chars.length > 0; n--) {
      chars[rng.int(0, chars.length - 1)] = rng.chance(0.8) ? rng.pick(HOSTILE_CHARS) : rng.pick(ODD_CHARS);
    }
    return chars.join('');
  },
  'delete-range': (rng, text) => {
    const a = rng.int(0, text.length);
    return text.slice(0, a) + text.slice(Math.min(text.length, a + rng.int(1, 80)));
  },
  'duplicate-range': (rng, text) => {
    const a = rng.int(0, text.length);
    const b = Math.min(text.length, a + rng.int(1, 200));
    return text.slice(0, b) + text.slice(a, b).repeat(rng.int(1, 5)) + text.slice(b);
  },
  splice: (rng, text, corpus) => {
    const other = rng.pick(corpus).text;
    return text.slice(0, rng.int(0, text.length)) + other.slice(rng.int(0, other.length));
  },
  truncate: (rng, text) => text.slice(0, rng.int(0, text.length)),
  'shift-indent': (rng, text) => {
    const lines = text.split('\n');
    for (let n = rng.int(1, 4); n > 0; n--) {
      const i = rng.int(0, lines.length - 1);
      lines[i] = rng.pick(['', ' ', '  ', '\t']) + (lines[i] ?? '').replace(/^ {0,2}/, '');
    }
    return lines.join('\n');
  },
  alias: (rng, text) => {
    // Anchor one scalar value and refer to it from another line: aliases and merge keys in real files.
    const lines = text.split('\n');
    const values = lines.map((l, i) => [l, i] as const).filter(([l]) => /^\s*(- |[\w./-]+: )[^&*{[|>]/.test(l));
    if (values.length < 2) return text;
    const [from, to] = rng.sample(values, 2) as [readonly [string, number], readonly [string, number]];
    lines[from[1]] = from[0].replace(/^(\s*(?:- |[\w./-]+: ))/, '$1&fz ');
    lines[to[1]] = rng.chance(0.5) ? to[0].replace(/^(\s*(?:- |[\w./-]+: )).*$/, '$1*fz') : to[0].replace(/^(\s*)/, '$1<<: *fz\n$1');
    return lines.join('\n');
  },
  crlf: (_rng, text) => text.replace(/\n/g, '\r\n'),
  bom: (_rng, text) => `\ufeff${text}`,
  'bad-utf8': (rng, text) => {
    const bytes = Buffer.from(text, 'utf8');
    const at = rng.int(0, bytes.length);
    const bad = rng.pick([[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe9]]);
    return Buffer.concat([bytes.subarray(0, at), Buffer.from(bad), bytes.subarray(at)]);
  },
  utf16: (_rng, text) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]),
  nul: (rng, text) => {
    const at = rng.int(0, text.length);
    return `${text.slice(0, at)}\u0000${text.slice(at)}`;
  },
  'hostile-text': (rng, text) => {
    const at = rng.int(0, text.length);
    return `${text.slice(0, at)}${HOSTILE_TEXT}${text.slice(at)}`;
  },
};

/** Applies 1 to `max` random mutations; binary ones (bad UTF-8, UTF-16) end the chain. */
function mutate(rng: Rng, text: string, corpus: readonly CorpusFile[], max: number): { data: string | Buffer; applied: string[] } {
  let data: string | Buffer = text;
  const applied: string[] = [];
  for (let n = rng.int(1, max); n > 0 && typeof data === 'string'; n--) {
    const name = rng.pick(Object.keys(MUTATIONS));
    applied.push(name);
    data = (MUTATIONS[name] as Mutation)(rng, data, corpus);
  }
  return { data, applied };
}

// ---- hostile YAML ------------------------------------------------------------------------------

const header = (name: string, dialect: 'prewarm' | 'fledged' = 'prewarm') =>
  `apiVersion: ${dialect === 'prewarm' ? 'prewarm.dev/v1alpha1' : 'kubefledged.io/v1alpha2'}\nkind: ImageCache\nmetadata:\n  name: ${name}\n  namespace: fz\n`;
const img = (i: number) => `${REFUSED_REGISTRY}/team/app-${i}:v1`;

/** Hostile documents, each a function of the random source: name → [description, file text]. */
const HOSTILE: Readonly<Record<string, (rng: Rng) => [string, string | Buffer]>> = {
  'alias-bomb': (rng) => {
    const levels = rng.int(6, 9);
    const width = rng.int(6, 10);
    const lines = [`  a0: &a0 [${Array.from({ length: width }, () => `"${img(0)}"`).join(', ')}]`];
    for (let i = 1; i <= levels; i++) lines.push(`  a${i}: &a${i} [${Array.from({ length: width }, () => `*a${i - 1}`).join(', ')}]`);
    return [
      `${levels} levels of ${width} aliases`,
      `${header('bomb')}  annotations:\n${lines.join('\n')}\nspec:\n  cacheSpec:\n  - images: *a${levels}\n`,
    ];
  },
  'merge-doubling': (rng) => {
    const levels = rng.int(12, 26);
    const lines = ['  m0: &m0 {k0: v}'];
    for (let i = 1; i <= levels; i++) lines.push(`  m${i}: &m${i} {<<: [*m${i - 1}, *m${i - 1}], k${i}: v}`);
    return [
      `${levels} doubling merge keys`,
      `${header('merge')}  labels:\n${lines.join('\n')}\nspec:\n  <<: *m${levels}\n  cacheSpec: [{images: ["${img(0)}"]}]\n`,
    ];
  },
  'many-aliases': (rng) => {
    const n = rng.int(8_000, 32_000);
    return [`${n} aliases of one image`, `${header('aliases')}spec:\n  cacheSpec:\n  - images: [&i "${img(0)}", ${'*i, '.repeat(n)}*i]\n`];
  },
  'deep-flow': (rng) => {
    const depth = rng.int(500, 6_000);
    return [`${depth} nested flow lists`, `${header('deep')}spec:\n  cacheSpec: ${'['.repeat(depth)}${']'.repeat(depth)}\n`];
  },
  'deep-block': (rng) => {
    const depth = rng.int(300, 2_000);
    const lines = Array.from({ length: depth }, (_, i) => `${' '.repeat(2 + i)}- `);
    return [`${depth} nested block lists`, `${header('deep')}spec:\n  cacheSpec:\n${lines.join('\n')}x\n`];
  },
  'deep-map': (rng) => {
    const depth = rng.int(500, 5_000);
    return [`${depth} nested flow maps`, `${header('deep')}spec: ${'{a: '.repeat(depth)}1${'}'.repeat(depth)}\n`];
  },
  'huge-flow-list': (rng) => {
    const bytes = rng.pick([200_000, 800_000, 1_600_000]);
    const items: string[] = [];
    let size = 0;
    for (let i = 0; size < bytes; i++) {
      const item = img(i);
      items.push(item);
      size += item.length + 2;
    }
    return [
      `one flow list of ${items.length} images (${bytes} bytes)`,
      `${header('flow')}spec:\n  cacheSpec:\n  - images: [${items.join(', ')}]\n`,
    ];
  },
  'huge-block-list': (rng) => {
    const bytes = rng.pick([1_000_000, 3_900_000]);
    const lines: string[] = [];
    let size = 0;
    for (let i = 0; size < bytes; i++) {
      const line = `    - ${img(i)}`;
      lines.push(line);
      size += line.length + 1;
    }
    return [
      `one block list of ${lines.length} images (${bytes} bytes)`,
      `${header('block')}spec:\n  cacheSpec:\n  - images:\n${lines.join('\n')}\n`,
    ];
  },
  'many-documents': (rng) => {
    const n = rng.int(2_000, 12_000);
    const docs = Array.from(
      { length: n },
      (_, i) => `${header(`c${i}`, i % 2 === 0 ? 'prewarm' : 'fledged')}spec:\n  cacheSpec: [{images: ["${img(i)}"]}]\n`,
    );
    return [`${n} documents`, docs.join('---\n')];
  },
  'long-scalar': (rng) => {
    const n = rng.pick([300, 100_000, 2_000_000]);
    return [`an image of ${n} characters`, `${header('long')}spec:\n  cacheSpec: [{images: ["${REFUSED_REGISTRY}/${'a'.repeat(n)}:1"]}]\n`];
  },
  'over-limit': () => ['a file one byte over 4 MiB', `${header('big')}#${'x'.repeat((4 << 20) - header('big').length)}\n`],
  'tags-and-directives': (rng) => {
    const body = rng.pick([
      `%YAML 1.1\n---\n${header('t')}spec: {cacheSpec: [{images: !!binary aGVsbG8=}]}\n`,
      `${header('t')}spec: !custom {cacheSpec: [{images: [!!str "${img(0)}"]}]}\n`,
      `${header('t')}spec:\n  ? [complex, key]\n  : value\n  cacheSpec: [{images: ["${img(0)}"]}]\n`,
      `${header('t')}spec: {cacheSpec: !!set {? "${img(0)}"}}\n`,
      `%TAG ! tag:evil.example,2000:\n---\n${header('t')}spec: {cacheSpec: [{images: [!x "${img(0)}"]}]}\n`,
      `${header('t')}spec: {cacheSpec: [{images: ["${img(0)}"], nodeSelector: {a: *undefined}}]}\n`,
      `${header('t')}spec: {cacheSpec: [{images: ["${img(0)}"]}]}\n...\n%YAML 9.9\n---\n[`,
    ]);
    return ['tags, directives and complex keys', body];
  },
  'controls-everywhere': () => [
    'terminal escapes in names, keys and values',
    `${header('x')}  labels: {"${HOSTILE_TEXT}": "${HOSTILE_TEXT}"}\nspec:\n  cacheSpec:\n  - images: ["${HOSTILE_TEXT}", "${REFUSED_REGISTRY}/a:\u001b[31m"]\n    nodeSelector: {"k\u001b]0;x\u0007": v}\n    pool: "\u202epool"\n`,
  ],
  'utf16-spec': () => [
    'a valid spec saved as UTF-16',
    Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(`${header('u')}spec: {cacheSpec: [{images: ["${img(0)}"]}]}\n`, 'utf16le')]),
  ],
};

// ---- command lines -----------------------------------------------------------------------------

interface Command {
  readonly argv: readonly string[];
  readonly writes: Writes;
  readonly exitCodes: readonly number[];
}

/** The commands that read only files, over the spec folder `specs`. */
function fileCommand(rng: Rng, specs: string, pin: boolean): Command {
  const choices: Command[] = [
    { argv: ['validate', specs], writes: { kind: 'none' }, exitCodes: FILE_ONLY },
    { argv: ['synth', specs, '-o', '{W}/out'], writes: { kind: 'output', dir: 'out' }, exitCodes: FILE_ONLY },
    { argv: ['synth', specs, '--stdout', '--own-namespace', 'fz'], writes: { kind: 'none' }, exitCodes: FILE_ONLY },
    { argv: ['specs', specs], writes: { kind: 'none' }, exitCodes: FILE_ONLY },
    { argv: ['migrate', specs], writes: { kind: 'none' }, exitCodes: FILE_ONLY },
    { argv: ['migrate', specs, '--write'], writes: { kind: 'in-place' }, exitCodes: FILE_ONLY },
    // The same hostile folder read as rendered manifests too: discover may refuse, never hang or crash.
    { argv: ['discover', specs, '--specs', specs], writes: { kind: 'none' }, exitCodes: FILE_ONLY },
    { argv: ['discover', specs, '--specs', specs, '--write', '--prune'], writes: { kind: 'in-place' }, exitCodes: FILE_ONLY },
  ];
  // pin only where every image lives on the refusing loopback registry: no run reaches a real host.
  if (pin) {
    choices.push(
      { argv: ['pin', specs, '--dry-run', '--plain-http', REFUSED_REGISTRY], writes: { kind: 'none' }, exitCodes: PIN },
      { argv: ['pin', specs, '--plain-http', REFUSED_REGISTRY], writes: { kind: 'in-place' }, exitCodes: PIN },
    );
  }
  return rng.pick(choices);
}

/** Options with odd values, per command; a case draws a few and mixes them in. */
const ODD_OPTIONS: Readonly<Record<string, readonly (readonly string[])[]>> = {
  common: [
    ['-n', 'Bad NS'],
    ['-n', ''],
    ['-n', 'a'.repeat(64)],
    ['-n', ARGV_TEXT],
    ['--namespace', 'ok', '--namespace', 'twice'],
    ['--help'],
    ['--version'],
    ['--'],
    ['--', '-looks-like-an-option'],
    ['--no-such-option'],
    [`--${ARGV_TEXT}`],
    [''],
    ['-'],
  ],
  synth: [
    ['--reconciler-image', 'UPPER/case:1'],
    ['--reconciler-image', `${REFUSED_REGISTRY}/r@sha256:${'a'.repeat(64)}`],
    ['--reconciler-image', ''],
    ['--no-reconciler'],
    ['--own-namespace', 'kube-system'],
    ['--own-namespace', 'Bad'],
    ['--allow-gate-key', 'node.kubernetes.io/'],
    ['--allow-gate-key', 'not a key'],
    ['--allow-gate-key', 'startup-taint.cluster-autoscaler.kubernetes.io/'],
    ['--pod-monitor'],
    ['-o', '{W}/specs'],
    ['-o', '{W}/specs/out'],
    ['-o', '{W}/file.txt'],
    ['-o', '{W}/busy'],
    ['-o', '{W}/busy', '--force'],
    ['-o', '{W}/link-out'],
    ['-o', '{W}/link-out', '--force'],
    ['-o', '{W}/deep/er/out'],
    ['-o', ''],
    ['--stdout', '-o', '{W}/out'],
    ['--force'],
  ],
  pin: [
    ['--plain-http', 'not a host'],
    ['--plain-http', ''],
    ['--plain-http', REFUSED_REGISTRY, '--plain-http', REFUSED_REGISTRY],
    ['--docker-config', '{W}/docker/config.json'],
    ['--docker-config', '{W}/docker'],
    ['--docker-config', '/proc/self/environ'],
    ['--docker-config', '{W}/fifo'],
    ['--docker-config', '{W}/nothing-here.json'],
    ['--dry-run'],
  ],
  status: [
    ['--watch', '--interval', 'abc'],
    ['--watch', '--interval', '1e12'],
    ['--watch', '--interval', 'Infinity'],
    ['--watch', '--interval', '-1'],
    ['--watch', '--interval', '0'],
    ['--watch', '--timeout', 'abc'],
    ['--watch', '--timeout', '0s'],
    ['--watch', '--timeout', '2s', '--interval', '1'],
    ['--timeout', '1s'],
    ['-o', 'bogus'],
    ['-o', 'svg'],
    ['-o', 'wide'],
    ['-o', 'json'],
    ['--node', ''],
    ['--node', ARGV_TEXT],
    ['--node', 'n1', '-o', 'svg'],
    ['--context', 'no-such-context'],
  ],
  doctor: [
    ['-o', 'bogus'],
    ['-o', 'wide'],
    ['-o', 'json'],
    ['--context', 'no-such-context'],
  ],
  migrate: [['--from-cluster'], ['--from-cluster', '--write'], ['--from-cluster', '{W}/specs'], ['--context', 'x']],
};

/** An odd command line around the copied examples: which command, and a few odd options. */
function oddCommand(rng: Rng): Command & { what: string } {
  const command = rng.pick(['synth', 'validate', 'pin', 'status', 'doctor', 'migrate', 'specs', 'frob', '']);
  const pool = [...(ODD_OPTIONS.common ?? []), ...(ODD_OPTIONS[command === 'validate' ? 'synth' : command] ?? [])];
  const options = rng.sample(pool, rng.int(1, 3)).flat();
  const takesPaths = ['synth', 'validate', 'pin', 'migrate', 'specs'].includes(command);
  const paths =
    takesPaths && !options.includes('--from-cluster')
      ? [rng.pick(['{W}/specs', '{W}/specs/ml', '{W}/empty', '{W}/file.txt', '{W}/nothing'])]
      : [];
  const order = rng.chance(0.5) ? [...paths, ...options] : [...options, ...paths];
  const argv = command === '' ? order : [command, ...order];
  const writes: Writes =
    command === 'synth' && !options.includes('--stdout')
      ? { kind: 'output', dir: outputDir(options) }
      : (command === 'pin' && !options.includes('--dry-run')) || (command === 'migrate' && options.includes('--write'))
        ? { kind: 'in-place' }
        : { kind: 'none' };
  const cluster = ['status', 'doctor'].includes(command) || options.includes('--from-cluster');
  const exitCodes = command === 'pin' ? PIN : cluster ? STATUS : FILE_ONLY;
  return { argv, writes, exitCodes, what: `odd argv for ${command || '(no command)'}` };
}

function outputDir(options: readonly string[]): string {
  const i = options.indexOf('-o');
  const dir = i >= 0 ? (options[i + 1] ?? '') : '{W}/dist';
  return dir.startsWith('{W}/') ? dir.slice('{W}/'.length) : 'dist';
}

/**
 * What pin may end with against a hostile registry: exit 4 (nothing written), except for a registry
 * that sends one well-formed digest with a body that does not hash to it, which only a pin that
 * fetches the body can tell (a HEAD request alone pins it, exit 0).
 */
function pinExits(server: HostileBehaviour): readonly number[] {
  const wellFormed = server.kind === 'digest' && server.values.length === 1 && /^sha256:[0-9a-f]{64}$/.test(server.values[0] ?? '');
  return wellFormed ? [0, 4] : [4];
}

// ---- the cases -----------------------------------------------------------------------------------

/** The layout every odd-argv and file-shape case starts from: examples, a busy folder, links. */
function standardLayout(corpus: readonly CorpusFile[]): FileSpec[] {
  const examples = corpus.filter((f) => f.name.startsWith('examples/'));
  return [
    ...examples.map((f) => ({ path: `specs/${f.name.slice('examples/'.length)}`, data: f.text })),
    { path: 'empty', dir: true },
    { path: 'file.txt', data: 'notes\n' },
    { path: 'busy/README.md', data: 'keep me\n' },
    { path: 'link-out', link: '{OUTSIDE}' },
    {
      path: 'docker/config.json',
      data: JSON.stringify({ auths: { [REFUSED_REGISTRY]: { auth: Buffer.from(`u:${FUZZ_TOKEN}`).toString('base64') } } }),
    },
    { path: 'fifo', fifo: true },
  ];
}

/** The case of index `index` in `family`, drawn from `rng`. */
export function generateCase(family: Family, index: number, rng: Rng, corpus: readonly CorpusFile[]): FuzzCase {
  const base = { index, family, kubeconfig: 'none' as KubeconfigShape, dockerConfig: 'none' as const, cluster: false };
  switch (family) {
    case 'mutate-real': {
      const picked = rng.sample(corpus, rng.int(1, 3));
      const files: FileSpec[] = [];
      const what: string[] = [];
      for (const [i, f] of picked.entries()) {
        const { data, applied } = mutate(rng, f.text, corpus, 4);
        files.push({ path: `specs/${i}-${f.name.replace(/[/]/g, '_')}`, data });
        what.push(`${f.name} [${applied.join(', ')}]`);
      }
      return { ...base, ...fileCommand(rng, '{W}/specs', false), files, what: what.join('; ') };
    }
    case 'hostile-yaml': {
      const names = Object.keys(HOSTILE);
      const name = names[index % names.length] as string;
      const [what, data] = (HOSTILE[name] as (rng: Rng) => [string, string | Buffer])(rng);
      const extra: FileSpec[] = rng.chance(0.3)
        ? [{ path: 'specs/ok.yaml', data: corpus.find((f) => f.name === 'examples/ml/gpu-inference.yaml')?.text ?? '' }]
        : [];
      const pinnable = extra.length === 0;
      return {
        ...base,
        ...fileCommand(rng, '{W}/specs', pinnable),
        files: [{ path: `specs/${name}.yaml`, data }, ...extra],
        what: `${name}: ${what}`,
      };
    }
    case 'fs-shapes': {
      const shapes: [string, FileSpec[]][] = [
        [
          "kube-fledged's deploy folder as it is",
          corpus.filter((f) => f.name.startsWith('kube-fledged-deploy/')).map((f) => ({ path: `specs/${f.name}`, data: f.text })),
        ],
        [
          "prewarm's own output inside the specs",
          [
            ...corpus.filter((f) => f.name.startsWith('examples/')).map((f) => ({ path: `specs/${f.name}`, data: f.text })),
            ...corpus.filter((f) => f.name.startsWith('dist/')).map((f) => ({ path: `specs/out/${f.name.slice(5)}`, data: f.text })),
          ],
        ],
        [
          'links inside, outside and dangling',
          [
            { path: 'specs/a.yaml', data: corpus[0]?.text ?? '' },
            { path: 'specs/in.yaml', link: 'a.yaml' },
            { path: 'specs/out.yaml', link: '{OUTSIDE}/secret.yaml' },
            { path: 'specs/dangling.yaml', link: 'nowhere.yaml' },
            { path: 'specs/loop.yaml', link: 'loop.yaml' },
            { path: 'specs/dir', link: '{OUTSIDE}' },
          ],
        ],
        [
          'a FIFO, an empty file and a folder named like a spec',
          [
            { path: 'specs/fifo.yaml', fifo: true },
            { path: 'specs/empty.yaml', data: '' },
            { path: 'specs/dir.yaml', dir: true },
            { path: 'specs/ok.yaml', data: corpus[0]?.text ?? '' },
          ],
        ],
        [
          '300 small files',
          Array.from({ length: 300 }, (_, i) => ({
            path: `specs/d${i % 7}/f${i}.yaml`,
            data: `${header(`c${i}`)}spec: {cacheSpec: [{images: ["${img(i)}"]}]}\n`,
          })),
        ],
        [
          'a Helm chart beside the specs',
          [
            { path: 'specs/chart/Chart.yaml', data: 'apiVersion: v2\nname: c\nversion: 1.0.0\n' },
            { path: 'specs/chart/templates/ic.yaml', data: `${header('{{ .Values.name }}')}spec: {{ toYaml .Values.spec }}\n` },
            { path: 'specs/ic.yaml', data: corpus[0]?.text ?? '' },
          ],
        ],
      ];
      const [what, files] = shapes[index % shapes.length] as [string, FileSpec[]];
      const outside: FileSpec[] = [
        { path: 'busy/README.md', data: 'keep me\n' },
        { path: 'link-out', link: '{OUTSIDE}' },
      ];
      const odd = ['synth', '{W}/specs', ...rng.pick(ODD_OPTIONS.synth ?? [])];
      const command: Command = rng.chance(0.5)
        ? fileCommand(rng, '{W}/specs', false)
        : {
            argv: odd,
            writes: odd.includes('--stdout') ? { kind: 'none' } : { kind: 'output', dir: outputDir(odd) },
            exitCodes: FILE_ONLY,
          };
      return { ...base, ...command, files: [...files, ...outside], what };
    }
    case 'argv': {
      const command = oddCommand(rng);
      return {
        ...base,
        ...command,
        files: standardLayout(corpus),
        kubeconfig: rng.pick(['refused', 'truncated', 'fifo', 'none'] as const),
        dockerConfig: 'auth',
        cluster: command.exitCodes === STATUS,
      };
    }
    case 'network': {
      const server = rng.pick(HOSTILE_BEHAVIOURS);
      const clusterCommands: (readonly string[])[] = [
        ['status'],
        ['status', '-o', 'json'],
        ['status', '--watch', '--timeout', '3s', '--interval', '1'],
        ['status', '--node', 'n1'],
        ['status', '--node', 'n1', '-o', 'svg'],
        ['doctor'],
        ['doctor', '-o', 'wide'],
        ['migrate', '--from-cluster'],
      ];
      const pinCommands: (readonly string[])[] = [
        ['pin', '{W}/specs', '--plain-http', '{HOST}'],
        ['pin', '{W}/specs', '--plain-http', '{HOST}', '--dry-run'],
        ['pin', '{W}/specs', '--plain-http', '{HOST}', '--docker-config', '{W}/docker/config.json'],
      ];
      const registry = server.kind === 'digest' || server.kind === 'drip-token' || rng.chance(0.4);
      const argv = rng.pick(registry ? pinCommands : clusterCommands);
      const specs: FileSpec[] = [
        {
          path: 'specs/pin.yaml',
          data: `# images on the hostile registry, some through anchors and merge keys\n${header('pin')}spec:\n  cacheSpec:\n  - &e\n    images: [{HOST}/team/app:1, &i "{HOST}/team/other:2"]\n  - <<: *e\n    nodeSelector: {tier: web}\n  - images: [*i, {HOST}/team/third, {HOST}/lib/busybox:1]\n`,
        },
        { path: 'specs/fledged.yaml', data: `${header('kf', 'fledged')}spec:\n  cacheSpec:\n  - images: [{HOST}/team/app:1]\n` },
        {
          path: 'docker/config.json',
          data: JSON.stringify({ auths: { '{HOST}': { auth: Buffer.from(`u:${FUZZ_TOKEN}`).toString('base64') } } }),
        },
      ];
      return {
        ...base,
        argv,
        server,
        files: specs,
        kubeconfig: registry ? 'none' : rng.pick(['hostile', 'hostile', 'hostile', 'truncated'] as const),
        dockerConfig: 'none',
        writes: argv.includes('--dry-run') || argv[0] !== 'pin' ? { kind: 'none' } : { kind: 'in-place' },
        exitCodes: argv[0] === 'pin' ? pinExits(server) : STATUS,
        cluster: argv[0] !== 'pin',
        what: `${server.kind} ${argv[0] === 'pin' ? 'registry' : 'apiserver'}${'values' in server ? ` (${server.values.join(' | ')})` : ''}`,
      };
    }
  }
}
