/**
 * Test images, built locally as OCI layouts with umoci and pushed with skopeo to the registries in
 * the hub netns. No image is ever pulled from the internet.
 *
 * Also the hook for other images of the project (e.g. the prewarm reconciler sidecar):
 * `buildImageFromRootfs({ rootfs: dirOrTarball, ref, config })`, or from the CLI:
 * `npm run cluster -- push-image REF --rootfs DIR|TAR [--cmd ...] [--user 65532]`.
 */
import {
  cpSync,
  existsSync,
  readFileSync,
  realpathSync,
  statSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  openSync,
  writeSync,
  closeSync,
} from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { BIN, BUSYBOX_STATIC, IMAGES, NET, REGISTRY, REPO_DIR, STATE_DIR } from './config.js';
import { CA_CRT } from './pki.js';
import { ensureMirrorHost, registryTagDigest } from './registry.js';
import { nsWrap, run, runAsync } from './sh.js';
import { copySidecarImageFiles, SIDECAR_MAIN, sidecarImageFiles } from '../../src/reconciler/image-files.mjs';

const BUILD_DIR = join(STATE_DIR, 'image-build');

export interface ImageRef {
  host: string;
  path: string;
  tag: string;
}

/** Parses an image reference with Docker's normalisation (docker.io, library/, latest). */
export function parseRef(ref: string): ImageRef {
  if (ref.includes('@')) throw new Error(`digest references cannot be mirrored by the harness: ${ref}`);
  let rest = ref;
  let host = 'docker.io';
  const first = rest.split('/')[0] ?? '';
  if (rest.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    host = first;
    rest = rest.slice(first.length + 1);
  }
  let tag = 'latest';
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  if (host === 'docker.io' && !rest.includes('/')) rest = `library/${rest}`;
  if (host === 'index.docker.io') host = 'docker.io';
  return { host, path: rest, tag };
}

/** Docker-normalised form (`host/path:tag`), as containerd names CRI-pulled images. */
export function normalize(ref: string): string {
  const r = parseRef(ref);
  return `${r.host}/${r.path}:${r.tag}`;
}

/**
 * The name containerd's CRI records for a pulled reference: {@link normalize}d, or `repo@digest`
 * for a pinned `repo:tag@digest` (the CRI drops the tag of a reference that has both).
 */
export function containerdName(ref: string): string {
  const at = ref.indexOf('@');
  if (at < 0) return normalize(ref);
  const r = parseRef(ref.slice(0, at));
  return `${r.host}/${r.path}${ref.slice(at)}`;
}

export interface ImageConfig {
  cmd?: string[];
  entrypoint?: string[];
  user?: string;
  env?: string[];
  workdir?: string;
  labels?: Record<string, string>;
  /** GOARCH-style architecture of the image config. @default amd64 */
  architecture?: string;
}
export interface Layer {
  /** File or directory on this machine. */
  src: string;
  /** Where it lands in the image. */
  dest: string;
}

function layoutDir(name: string): string {
  return join(BUILD_DIR, name.replace(/[^a-zA-Z0-9_.-]/g, '_'));
}

/** Builds an OCI layout <dir>:<tag> with one layer per entry. Returns "oci:<dir>:<tag>". */
export function buildOciImage(name: string, layers: readonly Layer[], config: ImageConfig = {}): string {
  mkdirSync(BUILD_DIR, { recursive: true });
  const layout = layoutDir(name);
  rmSync(layout, { recursive: true, force: true });
  run(['umoci', 'init', '--layout', layout]);
  run(['umoci', 'new', '--image', `${layout}:img`]);
  for (const l of layers) run(['umoci', 'insert', '--image', `${layout}:img`, l.src, l.dest]);
  const args = ['umoci', 'config', '--image', `${layout}:img`, '--architecture', config.architecture ?? 'amd64', '--os', 'linux'];
  if (config.entrypoint) args.push(...config.entrypoint.flatMap((e) => ['--config.entrypoint', e]));
  else args.push('--clear=config.entrypoint');
  if (config.cmd) args.push(...config.cmd.flatMap((c) => ['--config.cmd', c]));
  else args.push('--clear=config.cmd');
  if (config.user) args.push('--config.user', config.user);
  if (config.workdir) args.push('--config.workingdir', config.workdir);
  for (const e of config.env ?? []) args.push('--config.env', e);
  for (const [k, v] of Object.entries(config.labels ?? {})) args.push('--config.label', `${k}=${v}`);
  run(args);
  run(['umoci', 'gc', '--layout', layout]);
  return `oci:${layout}:img`;
}

/** Where the harness stores an image reference (mirrored hosts map into the plain registry). */
export function localTarget(ref: string): { target: string; tls: boolean; repo: string; tag: string } {
  const r = parseRef(ref);
  if (r.host === REGISTRY.tls) return { target: `${REGISTRY.tls}/${r.path}:${r.tag}`, tls: true, repo: r.path, tag: r.tag };
  if (r.host === REGISTRY.plain) return { target: `${REGISTRY.plain}/${r.path}:${r.tag}`, tls: false, repo: r.path, tag: r.tag };
  ensureMirrorHost(r.host);
  const repo = `${r.host}/${r.path}`;
  return { target: `${REGISTRY.plain}/${repo}:${r.tag}`, tls: false, repo, tag: r.tag };
}

export function imageInRegistry(ref: string): boolean {
  const t = localTarget(ref);
  return registryTagDigest(t.tls, t.repo, t.tag) !== undefined;
}

/** A registry to copy to or inspect: the TLS one is the harness's TLS + basic-auth configuration. */
export interface RegistryTarget {
  /** host:port */
  readonly addr: string;
  readonly tls: boolean;
  /** Network namespace the registry is reachable in. @default the root netns */
  readonly netns?: string;
}

/** skopeo's TLS and credential flags for `target` (`dest-` for the destination of a copy). */
function skopeoAccess(target: RegistryTarget, prefix: '' | 'dest-'): string[] {
  if (!target.tls) return [`--${prefix}tls-verify=false`];
  const certDir = join(BUILD_DIR, 'certs');
  mkdirSync(certDir, { recursive: true });
  cpSync(CA_CRT, join(certDir, 'ca.crt'));
  return [`--${prefix}cert-dir`, certDir, `--${prefix}creds`, `${REGISTRY.user}:${REGISTRY.password}`];
}

/**
 * Copies an OCI layout ("oci:dir:tag") to `target` as `<addr>/<repoAndTag>`. An image index is
 * copied whole (`--all`), so a multi-arch tag keeps its index digest. `format: 'v2s2'` converts to
 * Docker's media types (an index becomes a manifest list).
 */
export function copyToRegistry(source: string, target: RegistryTarget, repoAndTag: string, format: 'oci' | 'v2s2' = 'oci'): void {
  run(copyArgv(source, target, repoAndTag, format), copyOptions(target));
}

/** {@link copyToRegistry} without blocking the event loop (for pushing many images side by side). */
export async function copyToRegistryAsync(
  source: string,
  target: RegistryTarget,
  repoAndTag: string,
  format: 'oci' | 'v2s2' = 'oci',
): Promise<void> {
  await runAsync(copyArgv(source, target, repoAndTag, format), copyOptions(target));
}

function copyArgv(source: string, target: RegistryTarget, repoAndTag: string, format: 'oci' | 'v2s2'): string[] {
  return [
    'skopeo',
    'copy',
    '--quiet',
    '--all',
    '--format',
    format,
    '--retry-times',
    '2',
    ...skopeoAccess(target, 'dest-'),
    source,
    `docker://${target.addr}/${repoAndTag}`,
  ];
}

function copyOptions(target: RegistryTarget): { netns?: string; timeoutMs: number } {
  return { ...(target.netns !== undefined ? { netns: target.netns } : {}), timeoutMs: 600_000 };
}

/** The manifest (or index) bytes the registry serves for `<addr>/<repoAndTag>`, as skopeo reads them. */
export function rawManifest(target: RegistryTarget, repoAndTag: string): Buffer {
  const argv = nsWrap(target.netns, ['skopeo', 'inspect', '--raw', ...skopeoAccess(target, ''), `docker://${target.addr}/${repoAndTag}`]);
  // spawnSync, not run(): the digest is over the exact bytes, never a decoded string.
  const r = spawnSync(argv[0] as string, argv.slice(1), { timeout: 60_000 });
  if (r.status !== 0) throw new Error(`skopeo inspect --raw ${target.addr}/${repoAndTag} failed (${r.status}): ${String(r.stderr)}`);
  return r.stdout;
}

/** The hub registry that stores `ref`, and the repo:tag it stores it under. */
function hubTarget(ref: string): { target: RegistryTarget; repoAndTag: string } {
  const t = localTarget(ref);
  return { target: { addr: t.tls ? REGISTRY.tls : REGISTRY.plain, tls: t.tls, netns: NET.hubNs }, repoAndTag: `${t.repo}:${t.tag}` };
}

/** Pushes an OCI layout ("oci:dir:tag") to the local registry under `ref` (run inside the hub). */
export function pushImage(source: string, ref: string): void {
  const { target, repoAndTag } = hubTarget(ref);
  copyToRegistry(source, target, repoAndTag);
}

/**
 * Withdraws `ref` from the hub registry, as an outage of that one image would: a copy is kept in a
 * local OCI layout, then its manifest is deleted, so a pull of it answers "not found" while every
 * other image still pulls. Returns the function that pushes the copy back under the same reference
 * (idempotent); a run that dies before it leaves the image absent, which {@link imageInRegistry}
 * reports and the tiers' image preparation pushes again.
 */
export function withdrawImage(ref: string): () => void {
  const { target, repoAndTag } = hubTarget(ref);
  const layout = scratchDir(`withdrawn-${ref.replace(/[^a-zA-Z0-9_.-]/g, '_')}`);
  const remote = `docker://${target.addr}/${repoAndTag}`;
  const opts = { ...(target.netns !== undefined ? { netns: target.netns } : {}), timeoutMs: 120_000 };
  run(
    ['skopeo', 'copy', '--quiet', '--all', '--preserve-digests', ...skopeoAccess(target, '').map(srcFlag), remote, `oci:${layout}:img`],
    opts,
  );
  run(['skopeo', 'delete', ...skopeoAccess(target, ''), remote], opts);
  if (imageInRegistry(ref)) throw new Error(`${ref} is still in the registry after its manifest was deleted`);
  let restored = false;
  return () => {
    if (restored) return;
    run(['skopeo', 'copy', '--quiet', '--all', '--preserve-digests', ...skopeoAccess(target, 'dest-'), `oci:${layout}:img`, remote], opts);
    restored = true;
  };
}

/** skopeo copy names the source's access flags `--src-…`; inspect and delete take them bare. */
const srcFlag = (flag: string): string => flag.replace(/^--/, '--src-');

/** Manifest digest the local registry serves for `ref` now, or undefined when it lacks the tag. */
export function registryDigest(ref: string): string | undefined {
  const t = localTarget(ref);
  return registryTagDigest(t.tls, t.repo, t.tag);
}

/**
 * A multi-arch image: one image per architecture (built like {@link buildOciImage}) under one OCI
 * image index. Returns "oci:<dir>:img", whose tag names the index.
 */
export function buildOciIndex(
  name: string,
  platforms: readonly { architecture: string; layers: readonly Layer[]; config?: ImageConfig }[],
): string {
  const layout = layoutDir(name);
  rmSync(layout, { recursive: true, force: true });
  mkdirSync(join(layout, 'blobs', 'sha256'), { recursive: true });
  const manifests = platforms.map((p) => {
    buildOciImage(`${name}-${p.architecture}`, p.layers, { ...p.config, architecture: p.architecture });
    const src = layoutDir(`${name}-${p.architecture}`);
    cpSync(join(src, 'blobs', 'sha256'), join(layout, 'blobs', 'sha256'), { recursive: true });
    const index = JSON.parse(readFileSync(join(src, 'index.json'), 'utf8')) as {
      manifests: { mediaType: string; digest: string; size: number }[];
    };
    const m = index.manifests[0];
    if (index.manifests.length !== 1 || !m) throw new Error(`${src}: expected one manifest in index.json`);
    return { mediaType: m.mediaType, digest: m.digest, size: m.size, platform: { architecture: p.architecture, os: 'linux' } };
  });
  const blob = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: OCI_INDEX, manifests }));
  const digest = `sha256:${createHash('sha256').update(blob).digest('hex')}`;
  writeFileSync(join(layout, 'blobs', 'sha256', digest.slice('sha256:'.length)), blob);
  writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  const top = { mediaType: OCI_INDEX, digest, size: blob.length, annotations: { 'org.opencontainers.image.ref.name': 'img' } };
  writeFileSync(join(layout, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: [top] }));
  return `oci:${layout}:img`;
}

/** Media type of an OCI image index. */
export const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
/** Media type of a Docker manifest list (what most multi-arch tags on Docker Hub are). */
export const DOCKER_MANIFEST_LIST = 'application/vnd.docker.distribution.manifest.list.v2+json';

export interface RootfsImageOptions {
  /** A directory, or a tarball (tar, tar.gz) of a root filesystem. */
  rootfs: string;
  ref: string;
  config?: ImageConfig;
}

/** Hook for project images: a rootfs dir or tarball plus a config, pushed under `ref`. */
export function buildImageFromRootfs(opts: RootfsImageOptions): void {
  let dir = opts.rootfs;
  let tmp: string | undefined;
  if (!existsSync(dir)) throw new Error(`rootfs ${dir} does not exist`);
  if (!statSync(dir).isDirectory()) {
    mkdirSync(BUILD_DIR, { recursive: true });
    tmp = mkdtempSync(join(BUILD_DIR, 'rootfs-'));
    run(['tar', '-xf', opts.rootfs, '-C', tmp]);
    dir = tmp;
  }
  try {
    const src = buildOciImage(`rootfs-${opts.ref}`, [{ src: dir, dest: '/' }], opts.config ?? {});
    pushImage(src, opts.ref);
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}

function scratchDir(name: string): string {
  const d = join(BUILD_DIR, 'src', name);
  rmSync(d, { recursive: true, force: true });
  mkdirSync(d, { recursive: true });
  return d;
}

/** Static busybox helper: /bin/busybox (+ /bin/sh link), uid 65532 by default. */
export function busyboxLayers(): Layer[] {
  const d = scratchDir('busybox');
  mkdirSync(join(d, 'bin'));
  cpSync(BUSYBOX_STATIC, join(d, 'bin', 'busybox'));
  symlinkSync('busybox', join(d, 'bin', 'sh'));
  return [{ src: join(d, 'bin'), dest: '/bin' }];
}

/** A small image that stands in for a real one: a marker file naming the reference, no shell. */
export function standInLayers(ref: string, extraFile?: { name: string; bytes: number }): Layer[] {
  const d = scratchDir(`standin-${ref}`);
  mkdirSync(join(d, 'etc'));
  writeFileSync(join(d, 'etc', 'prewarm-image'), `${ref}\n${randomBytes(8).toString('hex')}\n`);
  const layers: Layer[] = [{ src: join(d, 'etc'), dest: '/etc' }];
  if (extraFile) {
    const dataDir = join(d, 'data');
    mkdirSync(dataDir);
    writeRandomFile(join(dataDir, extraFile.name), extraFile.bytes);
    layers.push({ src: dataDir, dest: '/data' });
  }
  return layers;
}

function writeRandomFile(path: string, bytes: number): void {
  const fd = openSync(path, 'w');
  try {
    const chunk = 1 << 20;
    for (let done = 0; done < bytes; done += chunk) writeSync(fd, randomBytes(Math.min(chunk, bytes - done)));
  } finally {
    closeSync(fd);
  }
}

export interface EnsureOptions {
  force?: boolean;
}

/** Pushes a stand-in image for `ref` unless the registry already has it. */
export function ensureStandIn(ref: string, opts: EnsureOptions & { sizeBytes?: number } = {}): void {
  if (!opts.force && imageInRegistry(ref)) return;
  pushImage(buildStandIn(ref, opts.sizeBytes), ref);
}

function buildStandIn(ref: string, sizeBytes: number | undefined): string {
  const layers = standInLayers(ref, sizeBytes ? { name: 'blob', bytes: sizeBytes } : undefined);
  return buildOciImage(`standin-${ref}`, layers, { user: '65532', labels: { 'dev.prewarm.test.ref': ref } });
}

/**
 * {@link ensureStandIn} for many references: builds the missing ones, then pushes them a few at a
 * time (a push is mostly skopeo's start-up, so a sequential push of hundreds takes minutes).
 */
export async function ensureStandIns(
  refs: readonly string[],
  opts: EnsureOptions & { sizeBytes?: number; parallel?: number } = {},
): Promise<number> {
  const todo = refs
    .filter((r) => opts.force === true || !imageInRegistry(r))
    .map((ref) => ({ ref, source: buildStandIn(ref, opts.sizeBytes) }));
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < todo.length; i = next++) {
      const { ref, source } = todo[i] as { ref: string; source: string };
      const { target, repoAndTag } = hubTarget(ref);
      await copyToRegistryAsync(source, target, repoAndTag);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.parallel ?? 6) }, () => worker()));
  return todo.length;
}

/** Well-known test images (names exported for tests). */
export const TEST_IMAGES = {
  pause: IMAGES.pause,
  busybox: IMAGES.busybox,
  /** Only a data file; no shell, no binaries. */
  scratch: `${REGISTRY.plain}/prewarm/scratch-data:v1`,
  /** Tens of MB of random (incompressible) data, for timing. */
  big: `${REGISTRY.plain}/prewarm/big:v1`,
  /** Behind basic auth on the TLS registry. */
  private: `${REGISTRY.tls}/prewarm/private:v1`,
  /** Never cached by a pool: used to show image GC removes non-cached images. */
  gcControl: `${REGISTRY.plain}/prewarm/gc-control:v1`,
  /** Never pushed: a pull of it fails. */
  missing: `${REGISTRY.plain}/prewarm/does-not-exist:v1`,
  /** The CNI stand-in's own image (cni-stand-in.ts): busybox and a few MiB, pulled by each node like a CNI's. */
  cniStandIn: `${REGISTRY.plain}/prewarm/cni-stand-in:v1`,
} as const;

/** Size of the CNI stand-in image's data file: a real CNI image is tens of MiB; scaled down like the rest. */
export const CNI_STAND_IN_DATA_BYTES = 4 * 1024 * 1024;

export const BIG_IMAGE_BYTES = Number(process.env['PREWARM_BIG_IMAGE_MB'] ?? 48) * 1024 * 1024;

/** Builds and pushes the harness's standard images (skips those already in the registry). */
export function ensureStandardImages(opts: EnsureOptions = {}): void {
  const need = (ref: string): boolean => opts.force === true || !imageInRegistry(ref);
  if (need(TEST_IMAGES.pause)) {
    if (!existsSync(BIN.pause)) throw new Error(`pause binary missing at ${BIN.pause}: run harness/cluster/build.sh`);
    const d = scratchDir('pause');
    cpSync(BIN.pause, join(d, 'pause'));
    pushImage(
      buildOciImage('pause', [{ src: join(d, 'pause'), dest: '/pause' }], { entrypoint: ['/pause'], user: '65535' }),
      TEST_IMAGES.pause,
    );
  }
  if (need(TEST_IMAGES.busybox)) {
    pushImage(buildOciImage('busybox', busyboxLayers(), { cmd: ['/bin/sh'] }), TEST_IMAGES.busybox);
  }
  if (need(TEST_IMAGES.scratch)) {
    const d = scratchDir('scratch');
    writeFileSync(join(d, 'data.txt'), 'prewarm scratch image: one data file, nothing else\n');
    pushImage(buildOciImage('scratch', [{ src: join(d, 'data.txt'), dest: '/data.txt' }], {}), TEST_IMAGES.scratch);
  }
  if (need(TEST_IMAGES.big)) ensureStandIn(TEST_IMAGES.big, { force: true, sizeBytes: BIG_IMAGE_BYTES });
  if (need(TEST_IMAGES.gcControl)) ensureStandIn(TEST_IMAGES.gcControl, { force: true, sizeBytes: 4 * 1024 * 1024 });
  if (need(TEST_IMAGES.private)) ensureStandIn(TEST_IMAGES.private, { force: true });
  ensureCniStandInImage(opts);
}

/** Builds and pushes the CNI stand-in's image (cni-stand-in.ts) unless the registry has it. */
export function ensureCniStandInImage(opts: EnsureOptions = {}): void {
  if (opts.force !== true && imageInRegistry(TEST_IMAGES.cniStandIn)) return;
  const d = scratchDir('cni-stand-in');
  writeRandomFile(join(d, 'blob'), CNI_STAND_IN_DATA_BYTES);
  pushImage(
    buildOciImage('cni-stand-in', [...busyboxLayers(), { src: join(d, 'blob'), dest: '/data/blob' }], { cmd: ['/bin/sh'] }),
    TEST_IMAGES.cniStandIn,
  );
}

/**
 * The node flags of the shipped image: read from src/reconciler/Dockerfile's exec-form ENTRYPOINT
 * (`[node, ...flags, main.js]`), the one place they are written, so every footprint matches it.
 */
export function reconcilerNodeFlags(): string[] {
  const dockerfile = join(REPO_DIR, 'src', 'reconciler', 'Dockerfile');
  const m = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(readFileSync(dockerfile, 'utf8'));
  const argv = m?.[1] ? (JSON.parse(m[1]) as unknown) : undefined;
  if (!Array.isArray(argv) || argv.length < 2 || !argv.every((a): a is string => typeof a === 'string'))
    throw new Error(`${dockerfile}: no exec-form ENTRYPOINT [node, ...flags, main.js]`);
  return argv.slice(1, -1);
}

/** How the reconciler image's layer is compressed, as the README's step 2 pushes it. */
const RECONCILER_LAYER_COMPRESSION = { format: 'zstd', level: '7' } as const;

/**
 * The prewarm reconciler sidecar image: the compiled files the shipped image holds (the import
 * graph of lib/src/reconciler/main.js, made by `npm run build`, as src/reconciler/image-files.mjs
 * lists it for the Dockerfile and build-image.sh too) plus this machine's node binary and the
 * shared libraries it links (ldd). Rebuilt only when those files or node change. Entry:
 * node /app/lib/src/reconciler/main.js.
 */
export function ensureReconcilerImage(ref: string, repoDir: string, opts: EnsureOptions = {}): void {
  const lib = join(repoDir, 'lib');
  const main = join(lib, SIDECAR_MAIN);
  if (!existsSync(main)) throw new Error(`${main} missing: run \`npm run build\` before building the reconciler image`);
  const entrypoint = ['/usr/local/bin/node', ...reconcilerNodeFlags(), '/app/lib/src/reconciler/main.js'];
  const hash = createHash('sha256');
  const { format, level } = RECONCILER_LAYER_COMPRESSION;
  hash.update(`${process.execPath} ${process.version} ${entrypoint.join(' ')} ${format}-${level} stripped`);
  const files = sidecarImageFiles(lib);
  for (const f of files) hash.update(f).update(readFileSync(join(lib, f)));
  const digest = hash.digest('hex').slice(0, 16);
  mkdirSync(BUILD_DIR, { recursive: true });
  const stamp = join(BUILD_DIR, `reconciler-${ref.replace(/[^a-zA-Z0-9_.-]/g, '_')}.hash`);
  if (!opts.force && imageInRegistry(ref) && existsSync(stamp) && readFileSync(stamp, 'utf8') === digest) return;
  const root = scratchDir('reconciler-rootfs');
  const node = realpathSync(process.execPath);
  mkdirSync(join(root, 'usr/local/bin'), { recursive: true });
  cpSync(node, join(root, 'usr/local/bin/node'));
  // As build-image.sh does: without its symbol and debug sections (a Debian node keeps them),
  // which nothing the sidecar runs reads; 12 MiB less to pull and unpack on every joining node.
  run(['strip', '--strip-all', join(root, 'usr/local/bin/node')]);
  for (const line of run(['ldd', node]).stdout.split('\n')) {
    const m = /(\/\S+) \(0x/.exec(line);
    if (!m?.[1]) continue;
    for (const p of new Set([m[1], realpathSync(m[1])])) {
      mkdirSync(join(root, dirname(p)), { recursive: true });
      cpSync(realpathSync(p), join(root, p));
    }
  }
  copySidecarImageFiles(lib, join(root, 'app/lib'));
  writeFileSync(join(root, 'app/package.json'), JSON.stringify({ type: 'module' }) + '\n');
  mkdirSync(join(root, 'tmp'), { recursive: true });
  const src = buildOciImage(`reconciler-${ref}`, [{ src: root, dest: '/' }], {
    entrypoint,
    user: '65532',
    workdir: '/app',
    labels: { 'dev.prewarm.source-hash': digest },
  });
  // As the README's step 2 pushes it: the layer zstd-compressed at level 7, the encoder's "better" setting.
  const recompressed = `${layoutDir(`reconciler-${ref}`)}-${format}`;
  rmSync(recompressed, { recursive: true, force: true });
  run(['skopeo', 'copy', '--quiet', '--dest-compress-format', format, '--dest-compress-level', level, src, `oci:${recompressed}:img`]);
  pushImage(`oci:${recompressed}:img`, ref);
  writeFileSync(stamp, digest);
}
