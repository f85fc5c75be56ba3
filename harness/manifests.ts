/**
 * Manifests for tests and benchmarks: `prewarm synth` (in-process, or the compiled CLI that ships),
 * YAML streams, the pull pods' images, and applying objects in order.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ExitCode } from '../src/cli/exit-codes.js';
import { run as runCli } from '../src/cli/main.js';
import { NET, REGISTRY, REPO_DIR } from './cluster/config.js';
import { LOCK_FILE } from '../src/index.js';
import {
  busyboxLayers,
  buildOciImage,
  ensureReconcilerImage,
  ensureStandIn,
  imageInRegistry,
  normalize,
  pushImage,
} from './cluster/images.js';
import { run, runAsync } from './cluster/sh.js';
import type { Kube, KubeObject } from './kube.js';
import { isHolder, poolOf } from '../src/contract/roles.js';
import { SIDECAR_CONTAINER } from '../src/contract/names.js';

/** The objects of a multi-document YAML stream (empty documents dropped); a YAML error throws. */
export function yamlObjects(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((d) => {
      if (d.errors.length > 0) throw new Error(`invalid YAML: ${d.errors.map((e) => e.message).join('; ')}`);
      return d.toJS() as KubeObject | null;
    })
    .filter((o): o is KubeObject => o !== null && typeof o === 'object');
}

/**
 * The helper image the harness synthesizes with: a tag, which {@link prepareImages} pushes to the
 * local registry with a static busybox (synth's default is pinned to a digest of the real one).
 */
export const HARNESS_HELPER_IMAGE = 'docker.io/library/busybox:1.36.1-musl';

/** `args` with the harness's helper image, unless they name one. */
function withHelper(args: readonly string[]): string[] {
  return args.includes('--helper-image') ? [...args] : [...args, '--helper-image', HARNESS_HELPER_IMAGE];
}

/** `prewarm synth <specDir> --stdout <args>` through the CLI's own entry point; throws on a non-zero exit. */
export async function synthObjects(specDir: string, args: readonly string[] = []): Promise<KubeObject[]> {
  let out = '';
  let err = '';
  const code = await runCli(['synth', specDir, '--stdout', ...withHelper(args)], { stdout: (t) => (out += t), stderr: (t) => (err += t) });
  if (code !== ExitCode.Success) throw new Error(`prewarm synth ${specDir} exited ${code}: ${err}`);
  return yamlObjects(out);
}

/**
 * `prewarm pin <specDir> --plain-http <the plain registry>` of the compiled CLI (build it first:
 * {@link buildProject}), run in the hub's network namespace (the only place the harness's
 * registries listen): digests into the spec files and sizes into the folder's lock file, as a
 * user's repository would hold them. Does not block the event loop (a benchmark's node watch runs
 * meanwhile). Throws unless it exits 0 and wrote the lock file.
 */
export async function pinSpecs(specDir: string): Promise<void> {
  const r = await runAsync([process.execPath, cliBin(), 'pin', specDir, '--plain-http', REGISTRY.plain], {
    cwd: REPO_DIR,
    netns: NET.hubNs,
    allowFail: true,
    timeoutMs: 120_000,
  });
  if (r.code !== 0 || !existsSync(join(specDir, LOCK_FILE))) throw new Error(`prewarm pin ${specDir} exited ${r.code}: ${r.stderr}`);
}

/** Server-side applies the objects in order, Namespaces first (their contents need them). */
export async function applyAll(kube: Kube, objs: readonly KubeObject[]): Promise<void> {
  for (const o of [...objs.filter((x) => x.kind === 'Namespace'), ...objs.filter((x) => x.kind !== 'Namespace')]) await kube.apply(o);
}

let built = false;
/** Compiles the project once per process (the e2e tests and the sidecar image use what ships: lib/). */
export function buildProject(): void {
  if (built) return;
  run(['npm', 'run', 'build', '--silent'], { cwd: REPO_DIR, timeoutMs: 600_000 });
  built = true;
}

function cliBin(): string {
  for (const p of ['lib/src/cli/bin.js', 'lib/cli/bin.js']) if (existsSync(join(REPO_DIR, p))) return join(REPO_DIR, p);
  throw new Error('prewarm CLI not built (lib/src/cli/bin.js missing after npm run build)');
}

/** `prewarm synth PATH... --stdout [ARGS...]` of the compiled CLI: one YAML stream. */
export function synth(paths: string[], args: readonly string[] = []): { yaml: string; stderr: string } {
  buildProject();
  const r = run(['node', cliBin(), 'synth', ...paths, '--stdout', ...withHelper(args)], { cwd: REPO_DIR });
  return { yaml: r.stdout, stderr: r.stderr };
}

interface ContainerLike {
  name: string;
  image: string;
  restartPolicy?: string;
}
/** The parts of a pod spec the tests read. */
export interface PodSpecLike {
  containers: ContainerLike[];
  initContainers?: ContainerLike[];
  imagePullSecrets?: { name: string }[];
}

/** The pod template's spec of a workload object, if it has one. */
export function podSpecOf(o: KubeObject): PodSpecLike | undefined {
  return (o.spec as { template?: { spec?: PodSpecLike } } | undefined)?.template?.spec;
}

/** One pull DaemonSet and the images its pod needs. */
export interface PoolImages {
  namespace: string;
  daemonSet: string;
  pool: string;
  /** Images of the pool's image containers (not the helper, not the sidecar). */
  images: string[];
  helper: string[];
  sidecar: string[];
  /** Every image the pull pod needs. */
  all: string[];
}

/** The pools' holder DaemonSets among synthesized objects (burst pullers carry no pool label). */
export function poolsOf(objects: KubeObject[]): PoolImages[] {
  return objects
    .filter((o) => o.kind === 'DaemonSet' && isHolder(o.metadata.labels))
    .map((o) => {
      const s = podSpecOf(o);
      if (!s) throw new Error(`DaemonSet ${o.metadata.name} has no pod template`);
      // The sidecar is a native sidecar: the first init container, ahead of the helper.
      const all = [...(s.initContainers ?? []), ...s.containers];
      const images = s.containers.filter((c) => c.name !== SIDECAR_CONTAINER).map((c) => c.image);
      const sidecar = all.filter((c) => c.name === SIDECAR_CONTAINER).map((c) => c.image);
      const helper = (s.initContainers ?? []).filter((c) => c.name !== SIDECAR_CONTAINER).map((c) => c.image);
      return {
        namespace: o.metadata.namespace ?? 'default',
        daemonSet: o.metadata.name,
        pool: poolOf(o.metadata.labels) ?? '',
        images,
        helper,
        sidecar,
        all: [...new Set([...helper, ...images, ...sidecar])],
      };
    });
}

/** Sizes of stand-ins for the heavy images of the examples (realistic ones are GBs). */
const STAND_IN_BYTES: Record<string, number> = {
  'nvcr.io/nvidia/pytorch:24.05-py3': 40 << 20,
  'nvcr.io/nvidia/tritonserver:24.05-py3': 24 << 20,
  'docker.io/vllm/vllm-openai:v0.5.0': 16 << 20,
  'quay.io/jupyter/pytorch-notebook:cuda12-python-3.11': 8 << 20,
};

/**
 * Makes every image the manifests reference pullable from the local registry under its own
 * name: helper images get the static busybox, the sidecar image is built from lib/ (what
 * ships), every other image is a small stand-in. References listed in `skip` are left absent.
 */
export function prepareImages(objects: KubeObject[], skip: readonly string[] = []): void {
  const pools = poolsOf(objects);
  const helpers = new Set(pools.flatMap((p) => p.helper));
  const sidecars = new Set(pools.flatMap((p) => p.sidecar));
  const others = new Set(pools.flatMap((p) => p.images));
  for (const ref of helpers) {
    if (!skip.includes(ref) && !imageInRegistry(ref)) pushImage(buildOciImage(`helper-${ref}`, busyboxLayers(), { cmd: ['/bin/sh'] }), ref);
  }
  const builtHere = [...sidecars].filter((ref) => !skip.includes(ref));
  if (builtHere.length > 0) buildProject();
  for (const ref of builtHere) ensureReconcilerImage(ref, REPO_DIR);
  for (const ref of others) {
    if (skip.includes(ref) || helpers.has(ref) || sidecars.has(ref)) continue;
    const size = STAND_IN_BYTES[normalize(ref)];
    ensureStandIn(ref, size ? { sizeBytes: size } : {});
  }
}
