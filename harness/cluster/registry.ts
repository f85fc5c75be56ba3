/**
 * Local registries in the hub netns (Debian's docker-registry, i.e. distribution 2.8):
 *  - plain HTTP on 10.250.0.1:5000, holding the harness images and the "mirrored" repositories
 *    (<host>/<path>, e.g. docker.io/library/python) served for well-known registry hosts;
 *  - TLS + htpasswd basic auth on 10.250.0.1:5443 for private-image tests.
 * containerd reads hosts.toml files under CERTS_D (shared by all nodes, read per pull).
 * The same configuration runs on loopback ports for tests that need no netns (harness/cluster/loopback.ts).
 */
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { HARNESS_DIR, MIRRORED_HOSTS, NET, REGISTRY, STATE_DIR } from './config.js';
import { CA_CRT, ensureCert } from './pki.js';
import { LOOPBACK, parseRegistryProfile, type RegistryProfile } from './registry-profile.js';
import { logFile, run, startDaemon, stopDaemon } from './sh.js';
import { waitFor } from '../time.js';

export const REGISTRY_DIR = join(STATE_DIR, 'registry');
export const CERTS_D = join(REGISTRY_DIR, 'certs.d');
const PLAIN_STORAGE = join(REGISTRY_DIR, 'plain-data');
const TLS_STORAGE = join(REGISTRY_DIR, 'tls-data');

/** One docker-registry daemon of the harness. */
export interface RegistryServer {
  /** Daemon name: pid file, log file and config file (`<dir>/<name>.yml`). */
  readonly name: string;
  /** host:port it listens on. */
  readonly addr: string;
  /** Folder holding the config file and, for TLS, the htpasswd file. */
  readonly dir: string;
  /** Blob and manifest storage. */
  readonly storage: string;
  /**
   * TLS with the harness's registry certificate (signed by CA_CRT, valid for the hub address and
   * 127.0.0.1) and htpasswd basic auth for REGISTRY.user / REGISTRY.password.
   */
  readonly tls: boolean;
  /** Network namespace to run in. @default the caller's (root netns) */
  readonly netns?: string;
}

/**
 * The access log is on: one line per request in the daemon's log (see {@link registryRequests}),
 * so tests can tell which requests (a manifest HEAD, a blob GET) a pull or a digest check cost.
 */
function registryConfig(s: RegistryServer): string {
  let extra = '';
  if (s.tls) {
    const cert = ensureCert({ name: 'registry', cn: 'prewarm-registry', ips: [NET.hubIp, '127.0.0.1'], usage: 'server' });
    const htpasswd = join(s.dir, 'htpasswd');
    if (!existsSync(htpasswd)) run(['htpasswd', '-Bbc', htpasswd, REGISTRY.user, REGISTRY.password]);
    extra = `  tls:
    certificate: ${cert.crt}
    key: ${cert.key}
auth:
  htpasswd:
    realm: prewarm
    path: ${htpasswd}
`;
  }
  return `version: 0.1
log:
  level: warn
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: ${s.storage}
  delete:
    enabled: true
http:
  addr: ${s.addr}
${extra}`;
}

/** Starts one registry daemon (unless it already runs). Wait for it with {@link waitRegistry}. */
export function startRegistry(s: RegistryServer): void {
  mkdirSync(s.dir, { recursive: true });
  mkdirSync(s.storage, { recursive: true });
  const cfg = join(s.dir, `${s.name}.yml`);
  writeFileSync(cfg, registryConfig(s));
  startDaemon({ name: s.name, argv: ['docker-registry', 'serve', cfg], ...(s.netns !== undefined ? { netns: s.netns } : {}) });
}

/** Waits until the registry answers `GET /v2/` (200, or 401 behind basic auth). */
export async function waitRegistry(s: RegistryServer): Promise<void> {
  await waitFor(`registry ${s.name} on ${s.addr}`, () => probe(s), 20_000);
}

/** The hub's two registries. */
const HUB_REGISTRIES: readonly RegistryServer[] = [
  { name: 'registry', addr: REGISTRY.plain, dir: REGISTRY_DIR, storage: PLAIN_STORAGE, tls: false, netns: NET.hubNs },
  { name: 'registry-tls', addr: REGISTRY.tls, dir: REGISTRY_DIR, storage: TLS_STORAGE, tls: true, netns: NET.hubNs },
];

function hubRegistry(tls: boolean): RegistryServer {
  const s = HUB_REGISTRIES.find((r) => r.tls === tls);
  if (!s) throw new Error(`no hub registry with tls=${tls}`);
  return s;
}

/** Starts the hub's registries and applies `profile` (the loopback one unless told). */
export async function startRegistries(profile: RegistryProfile = LOOPBACK): Promise<void> {
  for (const s of HUB_REGISTRIES) startRegistry(s);
  for (const s of HUB_REGISTRIES) await waitRegistry(s);
  await setRegistryProfile(profile);
}

/** Probes a registry where it runs (curl-free: a tiny HTTP exchange with socat). */
function probe(s: { readonly addr: string; readonly tls: boolean; readonly netns?: string }): boolean {
  const addr = s.tls ? `OPENSSL:${s.addr},cafile=${CA_CRT}` : `TCP:${s.addr}`;
  const r = run(['socat', '-T', '2', '-', addr], {
    ...(s.netns !== undefined ? { netns: s.netns } : {}),
    input: `GET /v2/ HTTP/1.0\r\nHost: ${s.addr}\r\n\r\n`,
    allowFail: true,
    timeoutMs: 5_000,
  });
  return /^HTTP\/1\.[01] (200|401)/.test(r.stdout);
}

const PROXY_DAEMON = 'registry-throttle';
const PROFILE_FILE = join(REGISTRY_DIR, 'profile');

/** The registry profile the nodes see now (what {@link setRegistryProfile} last applied). */
export function registryProfile(): RegistryProfile {
  return existsSync(PROFILE_FILE) ? parseRegistryProfile(readFileSync(PROFILE_FILE, 'utf8')) : LOOPBACK;
}

function profileText(p: RegistryProfile): string {
  if (p.name === 'loopback') return 'loopback';
  const upstream = p.perUpstreamBps === undefined ? '' : `,upstream=${p.perUpstreamBps}B`;
  return `remote:conn=${p.perConnectionBps}B,node=${p.perNodeBps}B${upstream},rtt=${p.rttMs}ms,connect-rtts=${p.connectRtts}`;
}

/**
 * Makes the nodes pull from the plain registry through `profile`: for remote, (re)starts the
 * throttling proxy in the hub netns and points every hosts.toml at it; for loopback, points them
 * back at the registry and stops the proxy. containerd reads hosts.toml per pull, so running nodes
 * see the change at their next pull; a pull in flight finishes the way it started.
 */
export async function setRegistryProfile(profile: RegistryProfile): Promise<void> {
  mkdirSync(REGISTRY_DIR, { recursive: true });
  if (profile.name === 'remote') {
    await stopDaemon(PROXY_DAEMON);
    startDaemon({
      name: PROXY_DAEMON,
      argv: [
        process.execPath,
        '--import',
        createRequire(import.meta.url).resolve('tsx'),
        join(HARNESS_DIR, 'throttle-proxy.ts'),
        '--listen',
        REGISTRY.proxy,
        '--upstream',
        REGISTRY.plain,
        '--profile',
        profileText(profile),
      ],
      netns: NET.hubNs,
    });
    await waitFor(`registry proxy on ${REGISTRY.proxy}`, () => probe({ addr: REGISTRY.proxy, tls: false, netns: NET.hubNs }), 20_000);
    writeFileSync(PROFILE_FILE, profileText(profile) + '\n');
    writeHostsTomls();
  } else {
    rmSync(PROFILE_FILE, { force: true });
    writeHostsTomls();
    await stopDaemon(PROXY_DAEMON);
  }
}

/** Stops the proxy and forgets the profile (the next start is loopback unless told otherwise). */
export async function resetRegistryProfile(): Promise<void> {
  rmSync(PROFILE_FILE, { force: true });
  await stopDaemon(PROXY_DAEMON);
}

/** host:port the nodes pull the plain registry from under the current profile. */
function plainEndpoint(): string {
  return registryProfile().name === 'remote' ? REGISTRY.proxy : REGISTRY.plain;
}

/** Stops one hub registry (TLS or plain): a registry outage. Its storage stays. */
export async function stopHubRegistry(tls: boolean): Promise<void> {
  await stopDaemon(hubRegistry(tls).name);
}

/** Starts one hub registry again after {@link stopHubRegistry} and waits until it answers. */
export async function startHubRegistry(tls: boolean): Promise<void> {
  const s = hubRegistry(tls);
  startRegistry(s);
  await waitRegistry(s);
}

export async function stopRegistries(): Promise<void> {
  await resetRegistryProfile();
  for (const s of HUB_REGISTRIES) await stopDaemon(s.name);
}

/** Path prefix under which the local registry stores the repositories of a mirrored host. */
export function mirrorRepo(host: string, path: string): string {
  return `${host}/${path}`;
}

/**
 * hosts.toml for every mirrored host: `server` (the fallback) and the only `host` are both the
 * local registry, with the path prefixed by the host name (override_path), so nothing is ever
 * sent to the real registry.
 */
export function writeHostsTomls(extraHosts: readonly string[] = []): void {
  const known = existsSync(CERTS_D) ? readdirSync(CERTS_D).filter((h) => h !== REGISTRY.plain && h !== REGISTRY.tls) : [];
  for (const host of new Set([...MIRRORED_HOSTS, ...known, ...extraHosts])) writeMirrorHost(host);
  const plain = plainEndpoint();
  const plainDir = join(CERTS_D, REGISTRY.plain);
  mkdirSync(plainDir, { recursive: true });
  writeFileSync(
    join(plainDir, 'hosts.toml'),
    `server = "http://${plain}"\n\n[host."http://${plain}"]\n  capabilities = ["pull", "resolve"]\n`,
  );
  const tlsDir = join(CERTS_D, REGISTRY.tls);
  mkdirSync(tlsDir, { recursive: true });
  writeFileSync(
    join(tlsDir, 'hosts.toml'),
    `server = "https://${REGISTRY.tls}"\n\n[host."https://${REGISTRY.tls}"]\n  capabilities = ["pull", "resolve"]\n  ca = "${CA_CRT}"\n`,
  );
}

export function ensureMirrorHost(host: string): void {
  if (!existsSync(join(CERTS_D, host, 'hosts.toml'))) writeMirrorHost(host);
}

function writeMirrorHost(host: string): void {
  const dir = join(CERTS_D, host);
  const file = join(dir, 'hosts.toml');
  mkdirSync(dir, { recursive: true });
  const url = `http://${plainEndpoint()}/v2/${host}`;
  writeFileSync(
    file,
    `# ${host} is served by the prewarm test registry; no request goes to the real host.\n` +
      `server = "${url}"\noverride_path = true\n\n[host."${url}"]\n  capabilities = ["pull", "resolve"]\n  override_path = true\n`,
  );
}

/** One request from a registry's access log (distribution's combined log format). */
export interface RegistryRequest {
  method: string;
  path: string;
  status: number;
  /** Bytes of the response body (0 where the log has none). */
  bytes: number;
  userAgent: string;
}

const ACCESS_LINE = /"([A-Z]+) (\S+) HTTP\/[\d.]+" (\d{3}) (\S+) "[^"]*" "([^"]*)"/;

/** Size in bytes of a registry's log, to read only the requests after this point. */
export function registryLogOffset(tls: boolean): number {
  const f = logFile(hubRegistry(tls).name);
  return existsSync(f) ? statSync(f).size : 0;
}

/** Requests a registry (TLS or plain) served after `offset` (from {@link registryLogOffset}). */
export function registryRequests(tls: boolean, offset = 0): RegistryRequest[] {
  const f = logFile(hubRegistry(tls).name);
  if (!existsSync(f)) return [];
  const fd = openSync(f, 'r');
  let text: string;
  try {
    const buf = Buffer.alloc(Math.max(0, statSync(f).size - offset));
    const n = readSync(fd, buf, 0, buf.length, offset);
    text = buf.subarray(0, n).toString('utf8');
  } finally {
    closeSync(fd);
  }
  const out: RegistryRequest[] = [];
  for (const line of text.split('\n')) {
    const m = ACCESS_LINE.exec(line);
    if (m?.[1] && m[2] && m[3])
      out.push({ method: m[1], path: m[2], status: Number(m[3]), bytes: Number(m[4]) || 0, userAgent: m[5] ?? '' });
  }
  return out;
}

/** Digest the registry's storage holds for repo:tag now (its tag link), or undefined. */
export function registryTagDigest(tls: boolean, repo: string, tag: string): string | undefined {
  const f = join(hubRegistry(tls).storage, 'docker/registry/v2/repositories', repo, '_manifests/tags', tag, 'current/link');
  return existsSync(f) ? readFileSync(f, 'utf8').trim() : undefined;
}
