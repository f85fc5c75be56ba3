/**
 * `prewarm pin`, the built CLI (lib/src/cli/bin.js), against real registries: the harness's two
 * docker-registry configurations (plain HTTP; TLS with the harness CA + htpasswd basic auth) on
 * loopback ports, holding images built with umoci and pushed with skopeo. Every digest the test
 * expects is computed independently: sha256 of the manifest bytes `skopeo inspect --raw` reads.
 */
import { createHash } from 'node:crypto';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ExitCode } from '../../../src/cli/exit-codes.js';
import { REGISTRY, REPO_DIR, STATE_DIR } from '../../../harness/cluster/config.js';
import {
  buildOciImage,
  buildOciIndex,
  copyToRegistry,
  DOCKER_MANIFEST_LIST,
  OCI_INDEX,
  rawManifest,
  standInLayers,
  type RegistryTarget,
} from '../../../harness/cluster/images.js';
import { startLoopbackRegistries, type LoopbackRegistries } from '../../../harness/cluster/loopback.js';
import { CA_CRT } from '../../../harness/cluster/pki.js';
import { run } from '../../../harness/cluster/sh.js';
import { buildProject } from '../../../harness/manifests.js';
import { parseLock } from '../../../src/imagecache/sizes.js';

const CLI = join(REPO_DIR, 'lib/src/cli/bin.js');

let regs: LoopbackRegistries;
let work: string;
let plain: RegistryTarget;
let tls: RegistryTarget;
/** The images of the specs, by role. */
let img: { api: string; worker: string; helper: string; model: string; multi: string; untagged: string };
/** reference -> the digest the registry serves for it (sha256 of the raw manifest). */
const served = new Map<string, string>();
/** Platform manifests of the multi-arch image. */
let platformDigests: string[];
/** The multi-arch image as an OCI layout ("oci:dir:img"). */
let multiIndex: string;

const sha256 = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const base64 = (s: string): string => Buffer.from(s).toString('base64');

/** Builds a stand-in image for `repoAndTag`, pushes it and records the digest served for it. */
function push(target: RegistryTarget, repoAndTag: string): string {
  copyToRegistry(buildOciImage(`pin-${repoAndTag}`, standInLayers(`${target.addr}/${repoAndTag}`)), target, repoAndTag);
  const ref = `${target.addr}/${repoAndTag}`;
  served.set(ref, sha256(rawManifest(target, repoAndTag)));
  return ref;
}

/**
 * The spec files, written with `p(ref)` at every place pin must rewrite; everything else is
 * literal, so `files(identity)` is the input and `files(pinned)` the one exact expected output.
 */
function files(p: (ref: string) => string): Record<string, string> {
  const apiDigest = served.get(img.api) as string;
  const workerRepo = img.worker.slice(0, img.worker.lastIndexOf(':'));
  return {
    'team.yaml': `# Team caches: both dialects in one file.
apiVersion: kubefledged.io/v1alpha2
kind: ImageCache
metadata:
  name: legacy            # kube-fledged's own dialect
  namespace: team
spec:
  cacheSpec:
  # block style: plain, double- and single-quoted; one already pinned to a tag that no longer exists
  - images:
    - ${p(img.api)}   # the API
    - "${p(img.worker)}"
    - '${img.api.replace(':v1', ':v0')}@${apiDigest}'
  - images: [${p(img.api)}, "${p(img.model)}" ]   # flow style, a private image
    nodeSelector: {tier: backend}
  imagePullSecrets:
  - name: team-registry
---
# A reference in a comment is never touched: ${img.api}
apiVersion: prewarm.dev/v1alpha1
kind: ImageCache
metadata: {name: modern, namespace: team}
spec:
  cacheSpec:
    - pool: gpu
      nodeSelector:
        node.kubernetes.io/instance-type: g5.2xlarge
      images:
        - ${p(img.multi)}        # multi-arch: pins to the index
        - ${workerRepo}@${served.get(img.worker)}
        -   "${p(img.worker)}"
        - ${p(img.untagged)}   # no tag: pinned as :latest
        - '${p(img.helper)}'   # single-quoted
`,
    'nested/cpu.yaml': `apiVersion: prewarm.dev/v1alpha1
kind: ImageCache
metadata:
  name: cpu
  namespace: batch
spec:
  cacheSpec:
    - pool: cpu
      images: [ ${p(img.multi)},
                '${p(img.api)}' ]
`,
  };
}

const identity = (ref: string): string => ref;
/** The expected pinned form; a reference without a tag keeps the `:latest` it stood for. */
const pinned = (ref: string): string => `${ref}${ref === img.untagged ? ':latest' : ''}@${served.get(ref)}`;

/** A fresh folder holding `files(identity)` (and `extra`), for one test. */
function specDir(name: string, extra: Record<string, string> = {}): string {
  const dir = join(work, name);
  for (const [f, text] of Object.entries({ ...files(identity), ...extra })) {
    mkdirSync(join(dir, f, '..'), { recursive: true });
    writeFileSync(join(dir, f), text);
  }
  return dir;
}

/** Every file under `dir` with its bytes: nothing else may appear, change or vanish. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort()) {
    if (statSync(join(dir, f)).isFile()) out[f] = readFileSync(join(dir, f), 'utf8');
  }
  return out;
}

/** A DOCKER_CONFIG folder with `config` as config.json. */
function dockerConfig(name: string, config: object): string {
  const dir = join(work, `docker-${name}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  return dir;
}
let withLogin: string;
let withoutLogin: string;

/** Runs the built CLI with a controlled environment (no credentials or CAs of this machine). */
function prewarm(args: string[], env: Record<string, string | undefined> = {}) {
  const base: NodeJS.ProcessEnv = { PATH: process.env['PATH'], HOME: work, DOCKER_CONFIG: withLogin, NODE_EXTRA_CA_CERTS: CA_CRT };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) Reflect.deleteProperty(base, k);
    else base[k] = v;
  }
  const r = run([process.execPath, CLI, ...args], { env: base, allowFail: true, timeoutMs: 60_000 });
  return { code: r.code, stdout: r.stdout, stderr: r.stderr };
}
/** Pins without recording sizes: these tests check the specs byte for byte (sizes: their own test). */
const pin = (dir: string, extra: string[] = [], env: Record<string, string | undefined> = {}) =>
  prewarm(['pin', '--plain-http', plain.addr, '--no-sizes', dir, ...extra], env);

/** 1-based line:column where `needle` first starts in `text`. */
function position(text: string, needle: string): string {
  const at = text.indexOf(needle);
  if (at < 0) throw new Error(`${needle} not in text`);
  const before = text.slice(0, at).split('\n');
  return `${before.length}:${(before.at(-1) as string).length + 1}`;
}

beforeAll(async () => {
  buildProject();
  regs = await startLoopbackRegistries('pin', (m) => console.log(`[pin] ${m}`));
  plain = { addr: regs.plain, tls: false };
  tls = { addr: regs.tls, tls: true };
  mkdirSync(STATE_DIR, { recursive: true });
  work = mkdtempSync(join(STATE_DIR, 'pin-test-'));
  img = {
    api: push(plain, 'team/api:v1'),
    worker: push(plain, 'team/worker:2.0'),
    helper: push(plain, 'base/busybox:1.36'),
    model: push(tls, 'private/model:v1'),
    multi: `${plain.addr}/multi/tool:v3`,
    untagged: `${plain.addr}/base/busybox`,
  };
  served.set(img.untagged, served.get(push(plain, 'base/busybox:latest')) as string);
  multiIndex = buildOciIndex(
    'pin-multi',
    ['amd64', 'arm64'].map((architecture) => ({ architecture, layers: standInLayers(`multi-${architecture}`) })),
  );
  copyToRegistry(multiIndex, plain, 'multi/tool:v3');
  const raw = rawManifest(plain, 'multi/tool:v3');
  served.set(img.multi, sha256(raw));
  const parsed = JSON.parse(raw.toString('utf8')) as { mediaType: string; manifests: { digest: string }[] };
  expect(parsed.mediaType).toBe(OCI_INDEX);
  platformDigests = parsed.manifests.map((m) => m.digest);
  expect(platformDigests).toHaveLength(2);
  withLogin = dockerConfig('login', { auths: { [regs.tls]: { auth: base64(`${REGISTRY.user}:${REGISTRY.password}`) } } });
  withoutLogin = dockerConfig('none', { auths: {} });
  // The input itself is valid: what pin must keep valid.
  const v = prewarm(['validate', specDir('input')]);
  expect(v.code, v.stderr).toBe(ExitCode.Success);
}, 300_000);

afterAll(async () => {
  await regs?.stop();
  if (work && process.env['PREWARM_KEEP_CLUSTER'] !== '1') rmSync(work, { recursive: true, force: true });
});

describe('prewarm pin against real registries', () => {
  it('rewrites every tag to tag@<the digest the registry serves> and leaves every other byte alone', () => {
    const dir = specDir('pin');
    const r = pin(dir);
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    const want = files(pinned);
    expect(snapshot(dir)).toEqual(want);
    // One stdout line per rewritten place, file order, with its position.
    const team = files(identity)['team.yaml'] as string;
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(10);
    expect(lines).toContain(`${join(dir, 'team.yaml')}:${position(team, img.api)}: ${img.api} -> ${pinned(img.api)}`);
    expect(r.stderr).toContain('pinned 10 reference(s) of 6 image(s) in 2 file(s)');
  });

  it('records the compressed size of each image at its pinned digest in prewarm.lock, and keeps it on a second run', () => {
    const dir = specDir('sizes');
    const r = prewarm(['pin', '--plain-http', plain.addr, dir]);
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    expect(snapshot(dir)).toMatchObject(files(pinned));
    expect(r.stderr).toContain(`recorded the sizes of`);
    const text = readFileSync(join(dir, 'prewarm.lock'), 'utf8');
    const { lock, diagnostics } = parseLock(text, 'prewarm.lock');
    expect(diagnostics).toEqual([]);
    // Independently: the config and layer sizes of the manifest skopeo reads for the tag.
    const raw = JSON.parse(rawManifest(plain, 'team/api:v1').toString('utf8')) as { config: { size: number }; layers: { size: number }[] };
    const entry = lock?.entries.get(img.api);
    expect(entry?.digest).toBe(served.get(img.api));
    expect(entry?.compressed).toBe(raw.config.size + raw.layers.reduce((n, l) => n + l.size, 0));
    // The private image on the TLS registry is sized through the same login and CA as its digest.
    expect(lock?.entries.get(img.model)?.digest).toBe(served.get(img.model));
    const again = prewarm(['pin', '--plain-http', plain.addr, dir]);
    expect(again.code, again.stderr).toBe(ExitCode.Success);
    expect(readFileSync(join(dir, 'prewarm.lock'), 'utf8')).toBe(text);
  });

  it('pins a multi-arch tag to its image index or Docker manifest list, not to a platform manifest', () => {
    const dir = specDir('multi');
    expect(pin(dir).code).toBe(ExitCode.Success);
    const text = readFileSync(join(dir, 'nested/cpu.yaml'), 'utf8');
    const digest = new RegExp(`${img.multi.replace(/[.:/]/g, '\\$&')}@(sha256:[0-9a-f]{64})`).exec(text)?.[1];
    expect(digest).toBe(served.get(img.multi));
    expect(platformDigests).not.toContain(digest);

    // The same two platforms as a Docker manifest list (skopeo converts the index).
    copyToRegistry(multiIndex, plain, 'multi/docker:v3', 'v2s2');
    const raw = rawManifest(plain, 'multi/docker:v3');
    const list = JSON.parse(raw.toString('utf8')) as { mediaType: string; manifests: { digest: string }[] };
    expect(list.mediaType).toBe(DOCKER_MANIFEST_LIST);
    const ref = `${plain.addr}/multi/docker:v3`;
    const spec = `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: list, namespace: team}\nspec:\n  cacheSpec:\n    - images: [${ref}]\n`;
    const listDir = join(work, 'docker-list');
    mkdirSync(listDir);
    writeFileSync(join(listDir, 'list.yaml'), spec);
    const r = pin(listDir);
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    expect(readFileSync(join(listDir, 'list.yaml'), 'utf8')).toBe(spec.replace(ref, `${ref}@${sha256(raw)}`));
    expect(list.manifests.map((m) => m.digest)).not.toContain(sha256(raw));
  });

  it('reads the private image with the docker config login, and trusts the registry CA through NODE_EXTRA_CA_CERTS', () => {
    const team = files(identity)['team.yaml'] as string;
    const at = `team.yaml:${position(team, `"${img.model}"`)}`;

    const dir = specDir('private');
    const before = snapshot(dir);
    const anonymous = pin(dir, [], { DOCKER_CONFIG: withoutLogin });
    expect(anonymous.code).toBe(ExitCode.Unresolved);
    expect(anonymous.stderr).toContain(
      `${at}: error: document 1: spec.cacheSpec[1].images[1]: cannot pin ${img.model}: ${regs.tls} requires credentials (401) and the docker config ${join(withoutLogin, 'config.json')} has none for it`,
    );
    expect(anonymous.stderr).toContain('1 image(s) could not be resolved; nothing was written');
    expect(anonymous.stdout).toBe('');
    expect(snapshot(dir)).toEqual(before);

    const wrong = dockerConfig('wrong', { auths: { [`https://${regs.tls}`]: { username: REGISTRY.user, password: 'not-the-password' } } });
    const refused = pin(dir, [], { DOCKER_CONFIG: wrong });
    expect(refused.code).toBe(ExitCode.Unresolved);
    expect(refused.stderr).toContain(
      `cannot pin ${img.model}: ${regs.tls} refused the credentials from the docker config ${join(wrong, 'config.json')} (401)`,
    );
    expect(snapshot(dir)).toEqual(before);

    const untrusted = pin(dir, [], { NODE_EXTRA_CA_CERTS: undefined });
    expect(untrusted.code).toBe(ExitCode.Unresolved);
    expect(untrusted.stderr).toMatch(
      new RegExp(`${at}: .*cannot pin ${img.model.replace(/[.:/]/g, '\\$&')}: .*certificate.*set NODE_EXTRA_CA_CERTS`),
    );
    expect(snapshot(dir)).toEqual(before);

    const ok = pin(dir);
    expect(ok.code, ok.stderr).toBe(ExitCode.Success);
    expect(readFileSync(join(dir, 'team.yaml'), 'utf8')).toContain(`"${pinned(img.model)}" ]`);
  });

  it('takes the login from a credential helper (credHelpers, then credsStore), as docker does', () => {
    const bin = join(work, 'helper-bin');
    mkdirSync(bin, { recursive: true });
    // A helper speaking docker's protocol: the server on stdin, a JSON credential on stdout.
    const script = join(bin, 'docker-credential-pintest');
    writeFileSync(
      script,
      `#!/bin/sh\nread server\necho "$server" >> ${join(bin, 'asked')}\nif [ "$server" = "${regs.tls}" ]; then\n` +
        `  printf '{"ServerURL":"%s","Username":"${REGISTRY.user}","Secret":"${REGISTRY.password}"}' "$server"\nelse\n  echo "credentials not found in native keychain"; exit 1\nfi\n`,
    );
    chmodSync(script, 0o755);
    const path = `${bin}:${process.env['PATH']}`;
    for (const [name, config] of [
      ['helpers', { credHelpers: { [regs.tls]: 'pintest' } }],
      ['store', { credsStore: 'pintest', auths: { [regs.tls]: {} } }],
    ] as const) {
      rmSync(join(bin, 'asked'), { force: true });
      const dir = specDir(`helper-${name}`);
      const r = pin(dir, [], { DOCKER_CONFIG: dockerConfig(name, config), PATH: path });
      expect(r.code, r.stderr).toBe(ExitCode.Success);
      expect(snapshot(dir)).toEqual(files(pinned));
      const asked = readFileSync(join(bin, 'asked'), 'utf8').trim().split('\n').sort();
      expect(asked).toEqual(name === 'helpers' ? [regs.tls] : [regs.plain, regs.tls].sort());
    }
    const missing = pin(specDir('helper-missing'), [], {
      DOCKER_CONFIG: dockerConfig('missing', { credHelpers: { [regs.tls]: 'not-installed' } }),
    });
    expect(missing.code).toBe(ExitCode.Usage);
    expect(missing.stderr).toContain(`credential helper for ${regs.tls}: docker-credential-not-installed is not on PATH`);
  });

  it('--dry-run prints the changes and writes nothing', () => {
    const dir = specDir('dry');
    const before = snapshot(dir);
    const r = pin(dir, ['--dry-run']);
    expect(r.code, r.stderr).toBe(ExitCode.Success);
    expect(snapshot(dir)).toEqual(before);
    const cpu = files(identity)['nested/cpu.yaml'] as string;
    expect(r.stdout).toContain(`${join(dir, 'nested/cpu.yaml')}:${position(cpu, img.multi)}: ${img.multi} -> ${pinned(img.multi)}\n`);
    expect(r.stdout).toContain(
      `${join(dir, 'team.yaml')}:${position(files(identity)['team.yaml'] as string, `'${img.helper}`)}: ${img.helper} -> ${pinned(img.helper)}\n`,
    );
    expect(r.stderr).toContain('would pin 10 reference(s) of 6 image(s) in 2 file(s); nothing was written (--dry-run)');

    // HTTPS is the default; a plain-HTTP registry is named in the error with the flag that fixes it.
    const https = prewarm(['pin', dir, '--dry-run']);
    expect(https.code).toBe(ExitCode.Unresolved);
    expect(https.stderr).toContain(`cannot pin ${img.api}: `);
    expect(https.stderr).toContain(`(a plain-HTTP registry: pass --plain-http ${plain.addr})`);
    expect(snapshot(dir)).toEqual(before);
  });

  it('a missing tag or a failed write fails the whole run: the image is named, no file is written', () => {
    const missing = `${plain.addr}/team/api:does-not-exist`;
    const extra = `apiVersion: prewarm.dev/v1alpha1\nkind: ImageCache\nmetadata: {name: late, namespace: team}\nspec:\n  cacheSpec:\n    - pool: late\n      images:\n        - ${missing}\n`;
    const dir = specDir('missing', { 'z-late.yaml': extra });
    const before = snapshot(dir);
    const r = pin(dir);
    expect(r.code).toBe(ExitCode.Unresolved);
    expect(r.stderr).toContain(
      `${join(dir, 'z-late.yaml')}:8:11: error: document 1: spec.cacheSpec[0].images[0]: cannot pin ${missing}: ${plain.addr} has no manifest team/api:does-not-exist (404: no such tag or repository)`,
    );
    expect(snapshot(dir)).toEqual(before);

    // Resolved, but the second file cannot be written (its folder is immutable: not even root can
    // create a file there): the first file, already staged beside its target, is not moved into
    // place either, and its staged copy is removed.
    const unwritable = specDir('unwritable');
    const frozen = snapshot(unwritable);
    run(['chattr', '+i', unwritable]);
    let w: ReturnType<typeof pin>;
    try {
      w = pin(unwritable);
    } finally {
      run(['chattr', '-i', unwritable]);
    }
    expect(w.code).toBe(ExitCode.Internal);
    expect(w.stderr).toContain(
      `prewarm: cannot write ${join(unwritable, 'team.yaml')}: operation not permitted (EPERM); no file was changed\n`,
    );
    expect(snapshot(unwritable)).toEqual(frozen);
    expect(readdirSync(join(unwritable, 'nested'))).toEqual(['cpu.yaml']);
  });

  it('is idempotent, rewrites the target of a symlink and keeps file modes', () => {
    const dir = specDir('again');
    chmodSync(join(dir, 'team.yaml'), 0o640);
    expect(pin(dir).code).toBe(ExitCode.Success);
    const once = snapshot(dir);
    expect(once).toEqual(files(pinned));
    expect(statSync(join(dir, 'team.yaml')).mode & 0o777).toBe(0o640);

    const again = pin(dir);
    expect(again.code, again.stderr).toBe(ExitCode.Success);
    expect(again.stdout).toBe('');
    expect(again.stderr).toContain('nothing to pin: every image reference has a digest');
    expect(snapshot(dir)).toEqual(once);

    // A spec reached through a symlink within the spec root: the file it points to is rewritten
    // (once, though two names reach it), the link stays a link. (A link whose target leaves the
    // roots named on the command line is refused by the loader; test/imagecache covers that.)
    const target = specDir('link-target');
    const link = join(target, 'cpu-link.yaml');
    symlinkSync(join(target, 'nested/cpu.yaml'), link);
    const viaLink = pin(target);
    expect(viaLink.code, viaLink.stderr).toBe(ExitCode.Success);
    expect(readFileSync(join(target, 'nested/cpu.yaml'), 'utf8')).toBe(files(pinned)['nested/cpu.yaml']);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readdirSync(join(target, 'nested'))).toEqual(['cpu.yaml']);

    const empty = join(work, 'empty');
    mkdirSync(empty);
    const none = pin(empty);
    expect(none.code).toBe(ExitCode.InvalidInput);
    expect(none.stderr).toContain(`no ImageCache found in ${empty}; nothing was pinned`);
  });

  it('pinned specs validate, and synth puts the digests into the pull pods', () => {
    const dir = specDir('synth');
    expect(pin(dir).code).toBe(ExitCode.Success);
    const v = prewarm(['validate', dir]);
    expect(v.code, v.stderr).toBe(ExitCode.Success);
    const s = prewarm(['synth', dir, '--stdout']);
    expect(s.code, s.stderr).toBe(ExitCode.Success);
    const images = new Set<string>();
    for (const doc of parseAllDocuments(s.stdout)) {
      const o = doc.toJS() as {
        kind?: string;
        spec?: { template?: { spec?: { containers?: { image: string }[]; initContainers?: { image: string }[] } } };
      };
      if (o?.kind !== 'DaemonSet') continue;
      const pod = o.spec?.template?.spec;
      for (const c of [...(pod?.containers ?? []), ...(pod?.initContainers ?? [])]) images.add(c.image);
    }
    const ours = [...images].filter((i) => i.startsWith(plain.addr) || i.startsWith(tls.addr));
    expect(ours.length).toBeGreaterThan(0);
    for (const i of ours) expect(i).toMatch(/@sha256:[0-9a-f]{64}$/);
    for (const ref of Object.values(img)) expect(images).toContain(pinned(ref));
    expect(s.stdout).toContain(`image: ${pinned(img.multi)}\n`);
  });
});
