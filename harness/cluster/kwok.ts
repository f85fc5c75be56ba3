/**
 * Fake nodes with kwok: it manages only nodes annotated kwok.x-k8s.io/node=fake, so it never
 * touches the real kubelets' nodes. Fake nodes become Ready; their pods become Running; nothing
 * is pulled. Taint fake nodes (default) so workloads land there only when they tolerate it.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, CACHE_DIR, STATE_DIR, VERSIONS } from './config.js';
import { run, startDaemon, stopDaemon } from './sh.js';

export const KWOK_ANNOTATION = 'kwok.x-k8s.io/node';
export const KWOK_TAINT_KEY = 'kwok.x-k8s.io/node';

/**
 * kwok's own default stages, the set kwokctl writes into its config when none is given: node
 * initialize + heartbeat with lease, pod ready/complete/delete ("fast"). The kwok binary itself
 * has no defaults (v0.8.0 exits "no stages found"), so they are read from the module source that
 * harness/cluster/build.sh built it from (its GOMODCACHE), never copied into this repository.
 */
const KWOK_DEFAULT_STAGES = [
  'node/fast/node-initialize.yaml',
  'node/heartbeat-with-lease/node-heartbeat-with-lease.yaml',
  'pod/fast/pod-ready.yaml',
  'pod/fast/pod-complete.yaml',
  'pod/fast/pod-delete.yaml',
];

function writeKwokConfig(): string {
  const dir = join(CACHE_DIR, 'go', 'mod', 'sigs.k8s.io', `kwok@${VERSIONS.kwok}`, 'kustomize', 'stage');
  const files = KWOK_DEFAULT_STAGES.map((f) => join(dir, f));
  const missing = files.filter((f) => !existsSync(f));
  if (missing.length) throw new Error(`kwok's stage files are missing (${missing.join(', ')}): rebuild kwok with harness/cluster/build.sh kwok`);
  const config = join(STATE_DIR, 'kwok', 'kwok.yaml');
  mkdirSync(join(STATE_DIR, 'kwok'), { recursive: true });
  writeFileSync(config, files.map((f) => readFileSync(f, 'utf8').trim()).join('\n---\n') + '\n');
  return config;
}

export function startKwok(kubeconfig: string): void {
  startDaemon({
    name: 'kwok',
    argv: [
      BIN.kwok,
      `--config=${writeKwokConfig()}`,
      `--kubeconfig=${kubeconfig}`,
      '--manage-all-nodes=false',
      `--manage-nodes-with-annotation-selector=${KWOK_ANNOTATION}=fake`,
      '--cidr=10.245.0.0/16',
      '--node-ip=10.250.1.1',
      '--server-address=127.0.0.1:10247',
      '--node-lease-duration-seconds=40',
    ],
  });
}

export async function stopKwok(): Promise<void> {
  await stopDaemon('kwok');
}

export interface FakeNodeOptions {
  prefix?: string;
  labels?: Record<string, string>;
  /** Add the kwok NoSchedule taint (default true). */
  taint?: boolean;
  /** Taints besides kwok's, e.g. a startup taint the node registers with. */
  extraTaints?: readonly { key: string; value?: string; effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute' }[];
  capacity?: { cpu: string; memory: string; pods: string };
}

/** One fake node object, named `<prefix>-<index>`; create it with POST or SSA. */
export function fakeNode(index: number, opts: FakeNodeOptions = {}): Record<string, unknown> {
  const name = `${opts.prefix ?? 'fake'}-${index}`;
  const cap = opts.capacity ?? { cpu: '32', memory: '256Gi', pods: '110' };
  const taints = [...(opts.taint === false ? [] : [{ key: KWOK_TAINT_KEY, value: 'fake', effect: 'NoSchedule' }]), ...(opts.extraTaints ?? [])];
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { [KWOK_ANNOTATION]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', type: 'kwok', ...(opts.labels ?? {}) },
    },
    spec: taints.length ? { taints } : {},
    status: { allocatable: cap, capacity: cap },
  };
}

/** Manifests for `count` fake nodes; apply with kubectl/SSA. */
export function fakeNodeManifests(count: number, opts: FakeNodeOptions = {}, startIndex = 0): string {
  return Array.from({ length: count }, (_, i) => JSON.stringify(fakeNode(startIndex + i, opts))).join('\n---\n') + '\n';
}

/** Creates `count` fake nodes (bounded: at most 5000). */
export function createFakeNodes(kubeconfig: string, count: number, opts: FakeNodeOptions = {}): void {
  if (!Number.isInteger(count) || count < 1 || count > 5000) throw new Error(`fake node count ${count} out of range 1..5000`);
  const batch = 200;
  for (let start = 0; start < count; start += batch) {
    run([BIN.kubectl, `--kubeconfig=${kubeconfig}`, 'apply', '--server-side', '--field-manager=prewarm-harness', '-f', '-'], {
      input: fakeNodeManifests(Math.min(batch, count - start), opts, start),
      timeoutMs: 600_000,
    });
  }
}

export function deleteFakeNodes(kubeconfig: string, prefix = 'fake'): void {
  const names = run([BIN.kubectl, `--kubeconfig=${kubeconfig}`, 'get', 'nodes', '-l', 'type=kwok', '-o', 'name'], { allowFail: true })
    .stdout.split('\n')
    .filter((n) => n.startsWith(`node/${prefix}-`));
  for (let i = 0; i < names.length; i += 200) {
    run([BIN.kubectl, `--kubeconfig=${kubeconfig}`, 'delete', '--wait=false', ...names.slice(i, i + 200)], { allowFail: true });
  }
}

export const KWOK_LOG = join(STATE_DIR, 'logs', 'kwok.log');
