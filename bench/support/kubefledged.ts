/**
 * The kube-fledged side of the benchmarks: its busybox helper image, its CRD and namespace, and the
 * model (bench/kubefledged/model.ts) run as a child process whose JSON-line events are folded here.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_DIR, STATE_DIR } from '../../harness/cluster/config.js';
import { buildOciImage, imageInRegistry, pushImage } from '../../harness/cluster/images.js';
import { run } from '../../harness/cluster/sh.js';
import type { Kube, KubeObject } from '../../harness/kube.js';
import { applyAll, yamlObjects } from '../../harness/manifests.js';
import { pollUntil, sleep, waitFor } from '../../harness/time.js';
import { imageCache } from '../../harness/specs.js';
import { API_VERSIONS } from '../../src/index.js';
import { BENCH_DIR, log } from './stats.js';

/** kube-fledged's default busybox image; its Jobs run `cp /bin/echo /tmp/bin` from it. */
export const KF_BUSYBOX = 'docker.io/senthilrch/busybox:1.35.0';
export const KF_NS = 'bench-kube-fledged';
export const KF_IMAGECACHES = `/apis/kubefledged.io/v1alpha2/namespaces/${KF_NS}/imagecaches`;
/** The user agent of the model's API client (its requests carry it in the audit log). */
export const MODEL_USER_AGENT = 'kubefledged-model';

/** Pushes a stand-in for {@link KF_BUSYBOX}: a static busybox with /bin/cp, /bin/echo, /bin/sh. */
export function ensureKfBusybox(): void {
  if (imageInRegistry(KF_BUSYBOX)) return;
  const dir = join(STATE_DIR, 'image-build', 'src', 'kf-busybox');
  mkdirSync(join(dir, 'bin'), { recursive: true });
  run(['cp', '/bin/busybox', join(dir, 'bin', 'busybox')]);
  for (const l of ['cp', 'echo', 'sh']) run(['ln', '-sf', 'busybox', join(dir, 'bin', l)]);
  pushImage(buildOciImage('kf-busybox', [{ src: join(dir, 'bin'), dest: '/bin' }], { cmd: ['/bin/sh'] }), KF_BUSYBOX);
}

/** Creates the model's namespace and the ImageCache CRD (kubefledged.io/v1alpha2); waits until it is served. */
export async function installKubeFledged(kube: Kube): Promise<void> {
  await applyAll(kube, [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: KF_NS } },
    ...yamlObjects(readFileSync(join(BENCH_DIR, 'kubefledged/crd.yaml'), 'utf8')),
  ]);
  await waitFor(
    'the kubefledged.io ImageCache CRD to be served',
    async () => (await kube.raw('GET', KF_IMAGECACHES)).status === 200,
    30_000,
    500,
  );
}

/** A kubefledged.io/v1alpha2 ImageCache with one cacheSpec entry. */
export function kfImageCache(name: string, images: readonly string[], nodeSelector: Record<string, string>): KubeObject {
  return imageCache(KF_NS, name, [{ images, nodeSelector }], {}, API_VERSIONS.kubeFledged);
}

/** A running model and what its JSON lines said so far. */
export interface Model {
  readonly child: ChildProcess;
  /** Refresh ticks (ms). */
  readonly ticks: number[];
  /** Creation time (ms) of every pull Job. */
  readonly jobsAt: number[];
  /** Jobs whose pod it saw finish. */
  jobsDone: number;
  /** ImageCache status writes, in order. */
  readonly statuses: { at: number; cache: string; status: string }[];
  /** Its own request counts by "VERB resource", reported on exit. */
  apiRequests?: Record<string, number>;
  readonly done: Promise<void>;
}

export interface ModelOptions {
  /** `--image-cache-refresh-frequency`, e.g. "15m" or "0s" (periodic refresh off). */
  readonly refresh: string;
  /** `--max-runtime`: the model stops itself after this long. @default 40m */
  readonly maxRuntime?: string;
}

/** Starts the model in {@link KF_NS} with kube-fledged's flags. */
export function startModel(o: ModelOptions): Model {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(BENCH_DIR, 'kubefledged/model.ts'),
      '--image-cache-refresh-frequency',
      o.refresh,
      '--busybox-image',
      KF_BUSYBOX,
      '--max-runtime',
      o.maxRuntime ?? '40m',
      '--namespace',
      KF_NS,
    ],
    { cwd: REPO_DIR, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const m: Model = { child, ticks: [], jobsAt: [], jobsDone: 0, statuses: [], done: new Promise((r) => child.on('exit', () => r())) };
  let buf = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d: string) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        const ev = JSON.parse(line) as { event: string; at: number; cache?: string; status?: string; apiRequests?: Record<string, number> };
        if (ev.event === 'refresh') m.ticks.push(ev.at);
        if (ev.event === 'job-created') m.jobsAt.push(ev.at);
        if (ev.event === 'job-done') m.jobsDone++;
        if (ev.event === 'status') m.statuses.push({ at: ev.at, cache: ev.cache ?? '', status: ev.status ?? '' });
        if (ev.event === 'stopped' && ev.apiRequests) m.apiRequests = ev.apiRequests;
        if (ev.event.endsWith('error')) log(`kube-fledged model: ${line}`);
      } catch {
        /* not ours */
      }
    }
  });
  return m;
}

export async function stopModel(m: Model): Promise<void> {
  m.child.kill('SIGTERM');
  await Promise.race([m.done, sleep(10_000)]);
}

/** Waits until the model writes `status` for `cache` after `afterMs`; the time, or undefined at `deadline`. */
export async function waitModelStatus(
  m: Model,
  cache: string,
  status: string,
  afterMs: number,
  deadline: number,
): Promise<number | undefined> {
  return pollUntil(() => m.statuses.find((x) => x.cache === cache && x.status === status && x.at > afterMs)?.at, deadline, 200);
}
