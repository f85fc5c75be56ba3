/**
 * Registry credentials found as `docker pull` finds them: config.json `auths`, `credHelpers`, then
 * `credsStore`. It holds secrets and its errors reach CI logs, so they never quote its content; it
 * is read as spec files are, bounded and never blocking.
 */
import { execFile } from 'node:child_process';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { readNamedFile } from '../files/read.js';
import { DOCKER_HUB, DOCKER_HUB_API, DOCKER_HUB_SERVER, Keyring, type Credential } from './keyring.js';

/** A docker config that was named but cannot be read, or a credential helper that failed. */
export class DockerConfigError extends Error {
  override readonly name = 'DockerConfigError';
}

/** Credentials for the registries a command talks to, and where they came from (for messages). */
export interface RegistryCredentials {
  readonly keyring: Keyring;
  readonly file: string;
  readonly found: boolean;
  /** Runs `host`'s credential helper once, bounded, into {@link keyring}. Rejects with a {@link DockerConfigError}. */
  prepare(host: string, signal?: AbortSignal): Promise<void>;
}

interface DockerConfig {
  readonly auths?: Record<string, unknown>;
  readonly credHelpers?: Record<string, string>;
  readonly credsStore?: string;
}

/** Helper answers longer than this are not a credential: a helper waiting on a prompt or a network. */
export const HELPER_TIMEOUT_MS = 10_000;

/** All of a run's credential helpers together: the spec chooses the hosts, so one stall must not multiply. */
export const HELPERS_TOTAL_MS = 30_000;

/**
 * Loads `auths` at once and helpers lazily per host; a helper wins over `auths`, as in docker. No
 * default file means anonymous; a named file missing or not JSON rejects with a {@link DockerConfigError}.
 */
export async function loadRegistryCredentials(
  explicit: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<RegistryCredentials> {
  const file = explicit ?? join(env['DOCKER_CONFIG'] ?? join(homedir(), '.docker'), 'config.json');
  const keyring = new Keyring();
  const read = await readNamedFile(file, 'docker config');
  if (typeof read !== 'string') {
    if (read.missing && explicit === undefined) return { keyring, file, found: false, prepare: () => Promise.resolve() };
    throw new DockerConfigError(`cannot read docker config ${file}: it ${read.problem.replace(/^cannot read: /, 'cannot be read: ')}`);
  }
  // docker reads an empty file as no configuration.
  const text = read.replace(/^\uFEFF/, '').trim() === '' ? '{}' : read.replace(/^\uFEFF/, '');
  let config: DockerConfig;
  try {
    config = JSON.parse(text) as DockerConfig;
  } catch {
    // JSON.parse's message quotes the text around the error: an `auth` value, a password.
    const at = jsonSyntaxError(text);
    throw new DockerConfigError(`docker config ${file}:${at.line}:${at.column}: not valid JSON: ${at.problem}`);
  }
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new DockerConfigError(`docker config ${file}:1:1: not a docker config: expected a JSON object`);
  }
  keyring.add(text);
  return { keyring, file, found: true, prepare: helpers(config, keyring, env) };
}

/** {@link RegistryCredentials.prepare} for `config`: each host's helper once, all within {@link HELPERS_TOTAL_MS}. */
function helpers(config: DockerConfig, keyring: Keyring, env: NodeJS.ProcessEnv): RegistryCredentials['prepare'] {
  const runs = new Map<string, Promise<void>>();
  let spentMs = 0;
  const prepare = async (registry: string, signal?: AbortSignal): Promise<void> => {
    const helper = helperFor(config, registry);
    if (helper === undefined) return;
    const server = registry === DOCKER_HUB ? DOCKER_HUB_SERVER : registry;
    const left = HELPERS_TOTAL_MS - spentMs;
    if (left <= 0)
      throw new DockerConfigError(
        `credential helper for ${server}: not run: the credential helpers of this run took ${HELPERS_TOTAL_MS / 1000}s in all, the most they may`,
      );
    const started = Date.now();
    try {
      const cred = await runHelper(helper, server, env, Math.min(HELPER_TIMEOUT_MS, left), signal);
      // First: a helper's credential wins a tie with the `auths` entry of its host.
      if (cred !== undefined) keyring.addCredential(registry, cred, true);
    } finally {
      spentMs += Date.now() - started;
    }
  };
  return (registry, signal) => {
    let run = runs.get(registry);
    if (run === undefined) {
      run = prepare(registry, signal);
      runs.set(registry, run);
    }
    return run;
  };
}

function helperFor(config: DockerConfig, registry: string): string | undefined {
  const aliases = registry === DOCKER_HUB ? [DOCKER_HUB, 'index.docker.io', DOCKER_HUB_SERVER, DOCKER_HUB_API] : [registry];
  for (const a of aliases) {
    const h = config.credHelpers?.[a];
    if (typeof h === 'string' && h !== '') return h;
  }
  return typeof config.credsStore === 'string' && config.credsStore !== '' ? config.credsStore : undefined;
}

/**
 * `docker-credential-<helper> get`; "credentials not found" means anonymous. Identity tokens are
 * skipped: only docker's own token exchange uses them.
 */
function runHelper(
  helper: string,
  server: string,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<Credential | undefined> {
  const bin = `docker-credential-${helper}`;
  return new Promise((resolve, reject) => {
    const options = { env, timeout: timeoutMs, maxBuffer: 1 << 20, killSignal: 'SIGKILL' as const, ...(signal ? { signal } : {}) };
    const child = execFile(bin, ['get'], options, (err, stdout) => {
      if (err) {
        if (/credentials not found/i.test(stdout)) return resolve(undefined);
        const code = (err as NodeJS.ErrnoException).code;
        const why =
          code === 'ENOENT'
            ? `${bin} is not on PATH`
            : code === 'ABORT_ERR'
              ? `${bin} get was stopped at the run's deadline`
              : err.killed
                ? `${bin} get did not answer within ${Math.ceil(timeoutMs / 1000)}s`
                : `${bin} get failed: ${stdout.trim() || err.message}`;
        return reject(new DockerConfigError(`credential helper for ${server}: ${why}`));
      }
      try {
        const out = JSON.parse(stdout) as { Username?: unknown; Secret?: unknown };
        if (typeof out.Username !== 'string' || typeof out.Secret !== 'string') throw new Error('no Username/Secret');
        resolve(out.Username === '<token>' ? undefined : { username: out.Username, password: out.Secret });
      } catch (e) {
        reject(new DockerConfigError(`credential helper for ${server}: ${bin} get printed no credential (${(e as Error).message})`));
      }
    });
    child.stdin?.end(server);
  });
}

/** Where and why `text` (which JSON.parse refused) is not JSON, in words that never quote it. */
export function jsonSyntaxError(text: string): { line: number; column: number; problem: string } {
  const scanner = new JsonScanner(text);
  let problem = 'not valid JSON';
  try {
    scanner.document();
  } catch (err) {
    problem = (err as Error).message;
  }
  const before = text.slice(0, scanner.offset).split('\n');
  return { line: before.length, column: (before.at(-1)?.length ?? 0) + 1, problem };
}

/** Reads one JSON document and throws at its first error; `offset` is then where it stopped. */
class JsonScanner {
  offset = 0;
  private depth = 0;
  private readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  /** A value and nothing after it but white space. */
  document(): void {
    this.value();
    this.space();
    if (this.offset < this.text.length) this.fail('more text after the JSON value');
  }

  private fail(problem: string): never {
    throw Object.assign(new Error(problem), { offset: this.offset });
  }

  private space(): void {
    while (this.offset < this.text.length && ' \t\n\r'.includes(this.text.charAt(this.offset))) this.offset++;
  }

  private string(): void {
    const { text } = this;
    this.offset++;
    while (this.offset < text.length) {
      const c = text.charAt(this.offset);
      if (c === '"') {
        this.offset++;
        return;
      }
      if (c === '\\') {
        const next = text.charAt(this.offset + 1);
        if ('"\\/bfnrt'.includes(next) && next !== '') this.offset += 2;
        else if (next === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(this.offset + 2, this.offset + 6))) this.offset += 6;
        else this.fail('invalid escape sequence in a string');
      } else if (c < ' ') this.fail('a control character (a line break?) inside a string');
      else this.offset++;
    }
    this.fail('a string is not closed');
  }

  private sequence(close: string, item: () => void, what: string): void {
    if (++this.depth > 512) this.fail('nested too deeply');
    this.offset++;
    this.space();
    if (this.text.charAt(this.offset) === close) {
      this.offset++;
      this.depth--;
      return;
    }
    for (;;) {
      item();
      this.space();
      const c = this.text.charAt(this.offset);
      if (c === ',') this.offset++;
      else if (c === close) {
        this.offset++;
        this.depth--;
        return;
      } else
        this.fail(
          this.offset >= this.text.length
            ? `the file ends inside ${what}`
            : `expected ',' or '${close}' after ${what === 'an object' ? 'a field' : 'an item'}`,
        );
    }
  }

  private field(): void {
    this.space();
    if (this.text.charAt(this.offset) !== '"')
      this.fail(this.offset >= this.text.length ? 'the file ends inside an object' : 'expected a field name in double quotes');
    this.string();
    this.space();
    if (this.text.charAt(this.offset) !== ':') this.fail("expected ':' after a field name");
    this.offset++;
    this.value();
  }

  private value(): void {
    this.space();
    const c = this.text.charAt(this.offset);
    if (c === '{') return this.sequence('}', () => this.field(), 'an object');
    if (c === '[') return this.sequence(']', () => this.value(), 'a list');
    if (c === '"') return this.string();
    const literal = /-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?|true|false|null/y;
    literal.lastIndex = this.offset;
    if (literal.test(this.text)) return void (this.offset = literal.lastIndex);
    this.fail(
      this.offset >= this.text.length
        ? 'the file ends where a value should be'
        : 'expected a value (a string in double quotes, a number, an object or a list)',
    );
  }
}
