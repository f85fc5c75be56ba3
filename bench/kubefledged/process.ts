/**
 * The kube-fledged model (model.ts) as a child process of a benchmark: started with its flags,
 * its JSON-line events folded into counters, stopped with SIGTERM (bounded wait).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_DIR } from '../../test/cluster/config.js';
import type { Kube } from '../support/kube.js';
import { applyAll, yamlObjects } from '../support/manifests.js';
import { BENCH_DIR, log, sleep } from '../support/stats.js';

/** The user agent of the model's API client (its requests carry it in the audit log). */
export const MODEL_USER_AGENT = 'kubefledged-model';

/** A running model and what it has reported so far. */
export interface Model {
  readonly child: ChildProcess;
  /** Times of its refresh ticks. */
  readonly ticks: number[];
  /** Times of its Job creations. */
  readonly jobsCreatedAt: number[];
  /** Jobs whose pod it saw finish. */
  jobsDone: number;
  /** Its own request counts by "VERB resource", reported on exit. */
  apiRequests?: Record<string, number>;
  readonly done: Promise<void>;
}

/** Model flags: `--image-cache-refresh-frequency` etc. without the dashes, as in model.ts. */
export interface ModelOptions {
  readonly refresh: string;
  readonly namespace: string;
  readonly busyboxImage: string;
  readonly maxRuntime: string;
}

export function startModel(o: ModelOptions): Model {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(BENCH_DIR, 'kubefledged/model.ts'), '--image-cache-refresh-frequency', o.refresh, '--busybox-image', o.busyboxImage, '--max-runtime', o.maxRuntime, '--namespace', o.namespace],
    { cwd: REPO_DIR, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const m: Model = { child, ticks: [], jobsCreatedAt: [], jobsDone: 0, done: new Promise((r) => child.on('exit', () => r())) };
  let buf = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (d: string) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        const ev = JSON.parse(line) as { event: string; at: number; apiRequests?: Record<string, number> };
        if (ev.event === 'refresh') m.ticks.push(ev.at);
        if (ev.event === 'job-created') m.jobsCreatedAt.push(ev.at);
        if (ev.event === 'job-done') m.jobsDone++;
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

/** Creates the model's namespace and kube-fledged's ImageCache CRD, and waits until it is served. */
export async function installKubeFledgedCrd(kube: Kube, namespace: string): Promise<void> {
  await applyAll(kube, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }, ...yamlObjects(readFileSync(join(BENCH_DIR, 'kubefledged/crd.yaml'), 'utf8'))]);
  for (let i = 0; i < 60; i++) {
    if ((await kube.raw('GET', `/apis/kubefledged.io/v1alpha2/namespaces/${namespace}/imagecaches`)).status === 200) return;
    await sleep(500);
  }
  throw new Error('the kubefledged.io ImageCache CRD was not served within 30 s');
}
