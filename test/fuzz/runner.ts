/**
 * Runs one fuzz case as a user would: the built CLI (`lib/`) as a child process, in a folder of its
 * own, with its own HOME, TMPDIR, KUBECONFIG and DOCKER_CONFIG, under a hard time limit and GNU
 * time's peak-RSS count. Then checks what must hold whatever the input:
 * - the process ends on its own, without a signal, with an exit code the command documents;
 * - stderr holds no stack trace and no raw control characters, is bounded, ends a failure with a
 *   `prewarm:` line, and never shows any part of a credential;
 * - a failed run changes nothing; a successful one changes only what the command writes (the `-o`
 *   folder, holding exactly the files its marker lists, or the spec files in place); the folder
 *   beside the work folder never changes; no temporary file is left anywhere, and no process is
 *   left behind;
 * - peak RSS stays under the Argo CD sidecar's memory limit.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { startHostileServer, type HostileServer } from '../../harness/hostile-server.js';
import { FUZZ_TOKEN, type FileSpec, type FuzzCase } from './generators.js';

/** The Argo CD sidecar's memory limit (deploy/argocd/repo-server-patch.yaml): no run may need more. */
export const RSS_LIMIT_KIB = 512 * 1024;
/**
 * A run that has not ended by then hangs. Generous: the machine is shared, and a bound is not a
 * benchmark. A network case without --request-timeout may wait out the default deadline (30 s)
 * once per server, so its bound is that plus start-up on a loaded machine.
 */
export const PROCESS_TIMEOUT_MS = { files: 30_000, network: 45_000 } as const;
const STDERR_MAX_BYTES = 256 << 10;
const STDERR_MAX_LINES = 160;
const STDOUT_MAX_BYTES = 64 << 20;
/** Raw characters that would act on a terminal; every value quoted in a message must be escaped. */
// eslint-disable-next-line no-control-regex -- matching raw control characters is the point
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f\u009b\u202a-\u202e\u2066-\u2069]/;
const STACK_TRACE = /^\s+at .+(?::\d+:\d+\)?|\(native\))$|FATAL ERROR|node:internal|^\s*\^\s*$|Error: .*\n\s+at /m;
/** Names of temporary files and folders the CLI makes beside what it writes. */
const TEMP_NAME = /(^|[./-])(tmp|temp)([.-]|$)|\.out\.tmp-|\.prewarm-tmp|~$/i;

/** What a run did, and every invariant it broke. */
export interface CaseResult {
  readonly case: FuzzCase;
  readonly argv: readonly string[];
  readonly code: number | null;
  readonly signal: string | null;
  readonly ms: number;
  readonly rssKiB: number | undefined;
  readonly stderr: string;
  readonly problems: readonly string[];
  /** A copy of the case's folders, kept only when a problem was found. */
  readonly reproducer?: string;
}

/** The built CLI; the fuzz run refuses to start without it, or with one older than src/. */
export function builtCli(root: string): string {
  return join(root, 'lib', 'src', 'cli', 'bin.js');
}

type Entry = { type: 'file'; hash: string } | { type: 'link'; target: string } | { type: 'dir' } | { type: 'other' };

async function snapshot(dir: string, base = dir, out = new Map<string, Entry>()): Promise<Map<string, Entry>> {
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const path = join(dir, name);
    const st = await lstat(path);
    const rel = relative(base, path);
    if (st.isSymbolicLink()) out.set(rel, { type: 'link', target: await readlink(path) });
    else if (st.isDirectory()) {
      out.set(rel, { type: 'dir' });
      await snapshot(path, base, out);
    } else if (st.isFile())
      out.set(rel, {
        type: 'file',
        hash: createHash('sha1')
          .update(await readFile(path))
          .digest('hex'),
      });
    else out.set(rel, { type: 'other' });
  }
  return out;
}

function substitute(text: string, vars: Readonly<Record<string, string>>): string {
  return text.replace(/\{(W|OUTSIDE|HOST)\}/g, (m, k: string) => vars[k] ?? m);
}

async function layOut(w: string, files: readonly FileSpec[], vars: Readonly<Record<string, string>>): Promise<void> {
  for (const f of files) {
    const path = join(w, f.path);
    await mkdir(dirname(path), { recursive: true });
    if ('data' in f) await writeFile(path, typeof f.data === 'string' ? substitute(f.data, vars) : f.data);
    else if ('dir' in f) await mkdir(path, { recursive: true });
    else if ('link' in f) await symlink(substitute(f.link, vars), path);
    else execFileSync('mkfifo', [path]);
  }
}

function kubeconfig(c: FuzzCase, server: HostileServer | undefined): string | undefined {
  const url = c.kubeconfig === 'refused' ? 'http://127.0.0.1:9' : (server?.url ?? 'http://127.0.0.1:9');
  const text = [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: fz, cluster: {server: "${url}", insecure-skip-tls-verify: true}}]`,
    `users: [{name: fz, user: {token: ${FUZZ_TOKEN}}}]`,
    'contexts: [{name: fz, context: {cluster: fz, user: fz, namespace: fz}}]',
    'current-context: fz',
    '',
  ].join('\n');
  // Cut in the middle of the token: a malformed kubeconfig whose error must not quote it.
  return c.kubeconfig === 'truncated' ? text.slice(0, text.indexOf(FUZZ_TOKEN) + 20) : text;
}

/** Every 12-character piece of the secret: none may appear on stderr. */
function leaksSecret(text: string): boolean {
  const b64 = Buffer.from(`u:${FUZZ_TOKEN}`).toString('base64');
  for (const secret of [FUZZ_TOKEN, b64]) {
    for (let i = 0; i + 12 <= secret.length; i += 4) if (text.includes(secret.slice(i, i + 12))) return true;
  }
  return false;
}

/** How the run was set up, shared by every case. */
export interface RunOptions {
  /** The built CLI. */
  readonly cli: string;
  /** Where to keep the folders of failed cases. */
  readonly keepFailuresIn: string;
  /** The commands whose --help lists `--request-timeout`: every other network case passes it. */
  readonly requestTimeout: ReadonlySet<string>;
}

/** The commands of `cli` that take a `--request-timeout` option (as kubectl does). */
export async function commandsWithRequestTimeout(cli: string): Promise<Set<string>> {
  const commands = ['status', 'doctor', 'migrate', 'pin'];
  const helps = await Promise.all(
    commands.map(
      (command) =>
        new Promise<string>((resolve) => {
          const child = spawn(process.execPath, [cli, command, '--help'], { stdio: ['ignore', 'pipe', 'ignore'] });
          let out = '';
          child.stdout.on('data', (b: Buffer) => (out += b.toString()));
          child.on('close', () => resolve(out));
        }),
    ),
  );
  return new Set(commands.filter((_, i) => helps[i]?.includes('--request-timeout')));
}

/** Runs one case and checks it. Never throws for what the CLI does; only for a broken test set-up. */
export async function runCase(c: FuzzCase, o: RunOptions): Promise<CaseResult> {
  const { cli, keepFailuresIn } = o;
  const base = await mkdtemp(join(tmpdir(), 'prewarm-fuzz-'));
  const w = join(base, 'w');
  const outside = join(base, 'outside');
  const home = join(base, 'home');
  const childTmp = join(base, 'tmp');
  for (const d of [w, outside, home, childTmp, join(base, 'kube'), join(home, '.docker')]) await mkdir(d, { recursive: true });
  await writeFile(join(outside, 'secret.yaml'), 'apiVersion: outside-the-work-folder\nkind: ImageCache\n');
  await writeFile(join(outside, 'keep.txt'), 'must survive every run\n');

  const server = c.server === undefined ? undefined : await startHostileServer(c.server);
  const vars = { W: w, OUTSIDE: outside, HOST: server?.host ?? '127.0.0.1:9' };
  const problems: string[] = [];
  let result: Omit<CaseResult, 'problems' | 'reproducer'> | undefined;
  try {
    await layOut(w, c.files, vars);
    const kubePath = join(base, 'kube', 'config');
    if (c.kubeconfig === 'fifo') execFileSync('mkfifo', [kubePath]);
    else if (c.kubeconfig !== 'none') await writeFile(kubePath, kubeconfig(c, server) ?? '');
    const argv = c.argv.map((a) => substitute(a, vars));
    // Half the network cases bound each request themselves; the other half rely on the default deadline.
    const network = c.server !== undefined || c.cluster;
    if (network && c.index % 2 === 0 && o.requestTimeout.has(argv[0] ?? '')) argv.push('--request-timeout', '5s');
    const before = await snapshot(base);
    result = await spawnCli(cli, argv, {
      cwd: w,
      timeoutMs: c.server !== undefined || c.cluster ? PROCESS_TIMEOUT_MS.network : PROCESS_TIMEOUT_MS.files,
      rssFile: join(base, 'rss'),
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        LANG: 'C.UTF-8',
        HOME: home,
        TMPDIR: childTmp,
        DOCKER_CONFIG: join(home, '.docker'),
        ...(c.kubeconfig === 'none' ? { KUBECONFIG: join(base, 'kube', 'absent') } : { KUBECONFIG: kubePath }),
      },
      case: c,
    });
    problems.push(...(await checkRun(c, result, before, await snapshot(base), base)));
  } finally {
    await server?.stop();
  }
  let reproducer: string | undefined;
  if (problems.length > 0) {
    reproducer = join(keepFailuresIn, `case-${c.index}`);
    await rm(reproducer, { recursive: true, force: true });
    await mkdir(keepFailuresIn, { recursive: true });
    // The work folder as the CLI left it, plus what ran: enough to replay it by hand.
    await cp(base, reproducer, {
      recursive: true,
      verbatimSymlinks: true,
      filter: (src) => !src.endsWith('/fifo') && !src.endsWith('.yaml.fifo'),
    }).catch(() => undefined);
    await writeFile(
      join(reproducer, 'case.json'),
      JSON.stringify(
        {
          ...c,
          files: c.files.map((f) => f.path),
          argv: result?.argv,
          code: result?.code,
          signal: result?.signal,
          stderr: result?.stderr,
          problems,
        },
        null,
        2,
      ),
    );
  }
  await rm(base, { recursive: true, force: true });
  return { ...(result as Omit<CaseResult, 'problems'>), problems, ...(reproducer === undefined ? {} : { reproducer }) };
}

interface SpawnOptions {
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  readonly timeoutMs: number;
  readonly rssFile: string;
  readonly case: FuzzCase;
}

async function spawnCli(cli: string, argv: readonly string[], o: SpawnOptions): Promise<Omit<CaseResult, 'problems' | 'reproducer'>> {
  const started = Date.now();
  // GNU time reports the child's peak RSS; its own process group lets a hung run be killed whole.
  const child = spawn('/usr/bin/time', ['-f', '%M', '-o', o.rssFile, process.execPath, cli, ...argv], {
    cwd: o.cwd,
    env: o.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdoutBytes = 0;
  const stderr: Buffer[] = [];
  let stderrBytes = 0;
  child.stdout.on('data', (b: Buffer) => {
    stdoutBytes += b.length;
  });
  child.stderr.on('data', (b: Buffer) => {
    stderrBytes += b.length;
    if (stderrBytes <= STDERR_MAX_BYTES * 2) stderr.push(b);
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child.pid);
  }, o.timeoutMs);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.on('close', (c, s) => resolve([c, s])),
  );
  clearTimeout(timer);
  const ms = Date.now() - started;
  // A process still in the group a moment after the CLI ended was started by it and left behind.
  const left = !timedOut && (await stillAlive(child.pid));
  if (left) killGroup(child.pid);
  const rssText = await readFile(o.rssFile, 'utf8').catch(() => '');
  const signalled = /terminated by signal (\d+)/.exec(rssText);
  const rss = /(\d+)\s*$/.exec(rssText.trim());
  const text = Buffer.concat(stderr).toString('utf8');
  return {
    case: o.case,
    argv,
    code: timedOut ? null : code,
    signal: timedOut ? 'timeout' : signalled !== null ? `signal ${signalled[1]}` : signal,
    ms,
    rssKiB: rss === null ? undefined : Number(rss[1]),
    stderr: `${text}${left ? '\n[fuzz: processes were left running after the CLI exited]' : ''}${stdoutBytes > STDOUT_MAX_BYTES ? `\n[fuzz: ${stdoutBytes} bytes on stdout]` : ''}${stderrBytes > STDERR_MAX_BYTES ? `\n[fuzz: ${stderrBytes} bytes on stderr]` : ''}`,
  };
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

async function stillAlive(pid: number | undefined): Promise<boolean> {
  await new Promise((resolve) => setTimeout(resolve, 200));
  return groupAlive(pid);
}

function groupAlive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function checkRun(
  c: FuzzCase,
  r: Omit<CaseResult, 'problems' | 'reproducer'>,
  before: Map<string, Entry>,
  after: Map<string, Entry>,
  base: string,
): Promise<string[]> {
  const problems: string[] = [];
  const lines = r.stderr.split('\n').filter((l) => l !== '');
  if (r.signal === 'timeout')
    problems.push(
      `did not end within ${c.cluster || c.server !== undefined ? PROCESS_TIMEOUT_MS.network : PROCESS_TIMEOUT_MS.files} ms (hang)`,
    );
  else if (r.signal !== null) problems.push(`ended by ${r.signal}`);
  else if (r.code === 70) {
    const clean = c.cluster && lines.length === 1 && /^prewarm: cannot /.test(lines[0] ?? '') && !/internal error/.test(r.stderr);
    if (!clean)
      problems.push(`exit 70 ${c.cluster ? 'without one clean "prewarm: cannot …" line' : '(internal or I/O error)'}: ${lastLine(lines)}`);
  } else if (r.code === null || !c.exitCodes.includes(r.code))
    problems.push(`exit ${r.code}, expected one of ${c.exitCodes.join(', ')}: ${lastLine(lines)}`);

  if (r.rssKiB !== undefined && r.rssKiB > RSS_LIMIT_KIB)
    problems.push(`peak RSS ${Math.round(r.rssKiB / 1024)} MiB, over ${RSS_LIMIT_KIB / 1024} MiB`);
  if (STACK_TRACE.test(r.stderr))
    problems.push(`stack trace on stderr: ${excerpt(r.stderr.split('\n').find((l) => STACK_TRACE.test(l)) ?? r.stderr)}`);
  if (/\[fuzz: /.test(r.stderr)) problems.push(excerpt(r.stderr.slice(r.stderr.indexOf('[fuzz: '))));
  if (lines.length > STDERR_MAX_LINES) problems.push(`${lines.length} lines on stderr (flood)`);
  const raw = lines.find((l) => RAW_CONTROL.test(l));
  if (raw !== undefined) problems.push(`raw control character on stderr: ${JSON.stringify(raw.slice(0, 160))}`);
  if (leaksSecret(r.stderr)) problems.push('stderr shows part of a credential');
  // Every failure ends in one line that starts with `prewarm:` (a usage error adds the --help hint after it).
  const final = lines[lines.length - 1] === 'run "prewarm --help" for usage' ? lines[lines.length - 2] : lines[lines.length - 1];
  if (r.code !== 0 && r.code !== null && !(final ?? '').startsWith('prewarm: '))
    problems.push(`failure does not end in a "prewarm:" line: ${lastLine(lines)}`);

  // Files: compare the case's folders before and after.
  const changed: string[] = [];
  for (const [path, entry] of after) {
    if (path.startsWith('tmp/') || path === 'tmp' || path === 'rss') continue;
    const old = before.get(path);
    if (old === undefined || JSON.stringify(old) !== JSON.stringify(entry)) changed.push(path);
  }
  const removed = [...before.keys()].filter((p) => !after.has(p));
  const leftTemp = [...after.keys()].filter((p) => p.startsWith('tmp/'));
  if (leftTemp.length > 0) problems.push(`left in TMPDIR: ${leftTemp.slice(0, 5).join(', ')}`);
  const temp = [...after.keys()].filter((p) => !before.has(p) && !p.startsWith('tmp/') && TEMP_NAME.test(p.split('/').pop() ?? ''));
  if (temp.length > 0) problems.push(`temporary files left behind: ${temp.slice(0, 5).join(', ')}`);
  const outsideChanged = [...changed, ...removed].filter((p) => p.startsWith('outside/'));
  if (outsideChanged.length > 0) problems.push(`changed outside the work folder: ${outsideChanged.slice(0, 5).join(', ')}`);
  const inside = [...changed, ...removed].filter((p) => p.startsWith('w/'));
  if (r.code !== 0 && inside.length > 0) problems.push(`failed (exit ${r.code}) but changed ${inside.slice(0, 5).join(', ')}`);
  if (r.code === 0) {
    const allowed = (p: string): boolean => {
      if (c.writes.kind === 'output') return p === `w/${c.writes.dir}` || p.startsWith(`w/${c.writes.dir}/`);
      if (c.writes.kind === 'in-place') return before.get(p)?.type === 'file' && after.get(p)?.type === 'file';
      return false;
    };
    const unexpected = inside.filter((p) => !allowed(p));
    if (unexpected.length > 0) problems.push(`changed what the command does not write: ${unexpected.slice(0, 5).join(', ')}`);
    if (c.writes.kind === 'output' && !r.argv.includes('--help') && !r.argv.includes('--version'))
      problems.push(...(await checkOutput(join(base, 'w', c.writes.dir))));
  }
  for (const path of changed.filter((p) => p.startsWith('w/') && after.get(p)?.type === 'file')) {
    const text = await readFile(join(base, path), 'utf8').catch(() => '');
    if (/evil\.example|@sha256:[0-9a-f]{64}[^0-9a-f\s"',\]}]| #x/.test(text)) problems.push(`${path} holds a digest the registry injected`);
  }
  return problems;
}

/** A written `-o` folder holds its marker and exactly the files it lists. */
async function checkOutput(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => undefined);
  if (names === undefined) return [];
  const marker = await readFile(join(dir, '.prewarm-output'), 'utf8').catch(() => undefined);
  if (marker === undefined) return names.length === 0 ? [] : [`output ${dir} has no marker`];
  const listed = marker.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
  const extra = names.filter((n) => n !== '.prewarm-output' && !listed.includes(n));
  const missing = listed.filter((n) => !names.includes(n));
  return extra.length + missing.length === 0
    ? []
    : [`output half-written: extra ${extra.join(', ') || '-'}, missing ${missing.join(', ') || '-'}`];
}

function lastLine(lines: readonly string[]): string {
  return excerpt(lines[lines.length - 1] ?? '(no stderr)');
}

function excerpt(text: string): string {
  const one = JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
  return one.slice(1, -1);
}
