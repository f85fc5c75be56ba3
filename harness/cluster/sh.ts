/** Process helpers: run commands, start/stop daemons by pid file. */
import { spawn, spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sleep } from '../time.js';
import { RUN_DIR, STATE_DIR } from './config.js';

export interface RunOptions {
  input?: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Network namespace to run in (via nsenter --net; the mount namespace stays shared). */
  netns?: string;
  allowFail?: boolean;
  timeoutMs?: number;
}
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function nsWrap(netns: string | undefined, argv: readonly string[]): string[] {
  return netns ? ['nsenter', `--net=/run/netns/${netns}`, '--', ...argv] : [...argv];
}

/** Runs a command synchronously; throws with its output unless allowFail. */
export function run(argv: readonly string[], opts: RunOptions = {}): RunResult {
  const full = nsWrap(opts.netns, argv);
  const so: SpawnSyncOptions = {
    encoding: 'utf8',
    env: opts.env ?? process.env,
    maxBuffer: 256 * 1024 * 1024,
    timeout: opts.timeoutMs ?? 300_000,
  };
  if (opts.input !== undefined) so.input = opts.input;
  if (opts.cwd !== undefined) so.cwd = opts.cwd;
  const r = spawnSync(full[0] as string, full.slice(1), so);
  const res: RunResult = {
    code: r.status ?? (r.error ? 127 : 128),
    stdout: String(r.stdout ?? ''),
    stderr: String(r.stderr ?? '') + (r.error ? `\n${r.error.message}` : ''),
  };
  if (res.code !== 0 && !opts.allowFail) {
    throw new Error(`command failed (${res.code}): ${full.join(' ')}\n${res.stderr}\n${res.stdout}`.trim());
  }
  return res;
}

/** The commands of `names` that are not on PATH. */
export function missingTools(names: readonly string[]): string[] {
  return names.filter((t) => run(['sh', '-c', `command -v ${t}`], { allowFail: true }).code !== 0);
}

/** Runs a command asynchronously (for timings / parallel pulls); throws unless allowFail. */
export function runAsync(argv: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  const full = nsWrap(opts.netns, argv);
  return new Promise((resolvePromise, reject) => {
    const child = spawn(full[0] as string, full.slice(1), {
      env: opts.env ?? process.env,
      cwd: opts.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 600_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      const res = { code: code ?? 128, stdout, stderr };
      if (res.code !== 0 && !opts.allowFail) {
        reject(new Error(`command failed (${res.code}): ${full.join(' ')}\n${stderr}\n${stdout}`.trim()));
      } else resolvePromise(res);
    });
    if (opts.input !== undefined) child.stdin.end(opts.input);
    else child.stdin.end();
  });
}

export const PID_DIR = join(RUN_DIR, 'pids');
export const LOG_DIR = join(STATE_DIR, 'logs');

export interface DaemonSpec {
  /** Unique name: pid file and log file are named after it. */
  name: string;
  argv: string[];
  netns?: string;
  env?: NodeJS.ProcessEnv;
  /**
   * The argv[0] the process runs as once every wrapper in `argv` has exec'd (the pid file's check
   * that the pid is still ours). @default argv[0]
   */
  execs?: string;
}

function pidFile(name: string): string {
  return join(PID_DIR, `${name}.pid`);
}
export function logFile(name: string): string {
  return join(LOG_DIR, `${name}.log`);
}

/** Pid of a running daemon started by the harness, or undefined. Checks the pid is still ours. */
export function daemonPid(name: string): number | undefined {
  return livePid(pidFile(name));
}

/** Names of the daemons whose pid files in `pidDir` (another run dir's too) name a live process. */
export function liveDaemons(pidDir: string = PID_DIR): string[] {
  if (!existsSync(pidDir)) return [];
  return readdirSync(pidDir)
    .filter((f) => f.endsWith('.pid') && livePid(join(pidDir, f)) !== undefined)
    .map((f) => f.slice(0, -'.pid'.length));
}

/** The pid in a harness pid file (pid, then the command it was started as), if that process lives. */
function livePid(f: string): number | undefined {
  if (!existsSync(f)) return undefined;
  const [pidText, marker] = readFileSync(f, 'utf8').split('\n');
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
    if (marker && cmdline !== marker) return undefined;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (/\) Z /.test(stat)) return undefined;
    return pid;
  } catch {
    return undefined;
  }
}

/** Starts a daemon detached from this process (it outlives the CLI), logging to LOG_DIR. */
export function startDaemon(spec: DaemonSpec): number {
  const existing = daemonPid(spec.name);
  if (existing) return existing;
  mkdirSync(PID_DIR, { recursive: true });
  mkdirSync(LOG_DIR, { recursive: true });
  const full = nsWrap(spec.netns, spec.argv);
  const fd = openSync(logFile(spec.name), 'a');
  writeFileSync(fd, `\n=== ${new Date().toISOString()} ${full.join(' ')}\n`);
  const child = spawn(full[0] as string, full.slice(1), {
    detached: true,
    stdio: ['ignore', fd, fd],
    env: spec.env ?? process.env,
  });
  closeSync(fd);
  if (!child.pid) throw new Error(`could not start ${spec.name}: ${full.join(' ')}`);
  child.unref();
  // nsenter execs the target, so the pid is the daemon's; the marker is its argv[0] after exec.
  writeFileSync(pidFile(spec.name), `${child.pid}\n${spec.execs ?? spec.argv[0]}\n`);
  return child.pid;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/\) Z /.test(stat);
  } catch {
    return false;
  }
}

/** Stops a harness daemon by its pid: SIGTERM, then SIGKILL after graceMs. */
export async function stopDaemon(name: string, graceMs = 10_000): Promise<void> {
  const pid = daemonPid(name);
  if (pid) await killPid(pid, graceMs);
  rmSync(pidFile(name), { force: true });
}

/** Kills a harness daemon at once (SIGKILL, no SIGTERM first): a crash, not a shutdown. */
export async function killDaemon(name: string): Promise<void> {
  const pid = daemonPid(name);
  if (pid) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    const hard = Date.now() + 5_000;
    while (Date.now() < hard && alive(pid)) await sleep(50);
  }
  rmSync(pidFile(name), { force: true });
}

export async function killPid(pid: number, graceMs = 10_000): Promise<void> {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!alive(pid)) return;
    await sleep(100);
  }
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* gone */
  }
  const hard = Date.now() + 5_000;
  while (Date.now() < hard && alive(pid)) await sleep(50);
}

export function tailLog(name: string, lines = 30): string {
  const f = logFile(name);
  if (!existsSync(f)) return '(no log)';
  return readFileSync(f, 'utf8').split('\n').slice(-lines).join('\n');
}
