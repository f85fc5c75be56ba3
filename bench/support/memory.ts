/**
 * Memory of what runs on one real harness node, read from the host: per-process RSS/PSS from
 * /proc, and cgroup v1 memory accounting under the node's own kubelet cgroup root
 * (`/prewarm/<node>/kubepods/...`, cgroupfs driver; harness/cluster/node.ts). Containers are named
 * through the node's CRI (crictl), and the containerd shims (one per pod sandbox, outside the pod
 * cgroups) are found by the containerd socket in their command line.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crictl, nodePaths } from '../../harness/cluster/node.js';

const MEMCG = '/sys/fs/cgroup/memory';

/** Memory of one process, KiB. */
export interface ProcMem {
  rss: number;
  pss: number;
  anon: number;
}

/** cgroup v1 memory of a cgroup (hierarchical), KiB. workingSet = usage - inactive file (the kubelet's figure). */
export interface CgroupMem {
  usage: number;
  maxUsage: number;
  workingSet: number;
}

const ZERO: ProcMem = { rss: 0, pss: 0, anon: 0 };

function kib(text: string, key: string): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text);
  return m?.[1] ? Number(m[1]) : 0;
}

/** RSS, PSS (0 unless `withPss`: it walks the mappings) and anonymous RSS of a process; zeros when it is gone. */
export function procMem(pid: number, withPss = true): ProcMem {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const pss = withPss ? kib(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'), 'Pss') : 0;
    return { rss: kib(status, 'VmRSS'), pss, anon: kib(status, 'RssAnon') };
  } catch {
    return ZERO;
  }
}

export function sumMem(ms: readonly ProcMem[]): ProcMem {
  return ms.reduce((a, b) => ({ rss: a.rss + b.rss, pss: a.pss + b.pss, anon: a.anon + b.anon }), ZERO);
}

function readNum(f: string): number {
  try {
    return Number(readFileSync(f, 'utf8').trim());
  } catch {
    return 0;
  }
}

export function cgroupMem(dir: string): CgroupMem {
  let inactiveFile = 0;
  try {
    const m = /^total_inactive_file (\d+)$/m.exec(readFileSync(join(dir, 'memory.stat'), 'utf8'));
    inactiveFile = Number(m?.[1] ?? 0);
  } catch {
    /* gone */
  }
  const usage = readNum(join(dir, 'memory.usage_in_bytes'));
  return { usage: usage / 1024, maxUsage: readNum(join(dir, 'memory.max_usage_in_bytes')) / 1024, workingSet: Math.max(0, usage - inactiveFile) / 1024 };
}

/** Resets a cgroup's recorded peak (memory.max_usage_in_bytes), so it measures from now. */
export function resetPeak(dir: string): void {
  writeFileSync(join(dir, 'memory.max_usage_in_bytes'), '0');
}

function subdirs(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
  } catch {
    return [];
  }
}

/** Every process in a cgroup and its descendants. */
export function cgroupPids(dir: string): number[] {
  const out: number[] = [];
  const walk = (d: string): void => {
    try {
      for (const l of readFileSync(join(d, 'cgroup.procs'), 'utf8').split('\n')) if (l) out.push(Number(l));
    } catch {
      return;
    }
    for (const s of subdirs(d)) walk(join(d, s));
  };
  walk(dir);
  return out;
}

/** The node's `kubepods` memory cgroup (the parent of every pod cgroup on it). */
export function kubepodsDir(node: string): string {
  return join(MEMCG, nodePaths(node).cgroupRoot, 'kubepods');
}

/** Pod cgroups on a node by pod uid (Guaranteed pods sit in kubepods, the others one level down). */
export function podCgroups(node: string): Map<string, string> {
  const base = kubepodsDir(node);
  const out = new Map<string, string>();
  for (const parent of [base, join(base, 'burstable'), join(base, 'besteffort')]) {
    for (const d of subdirs(parent)) if (d.startsWith('pod')) out.set(d.slice(3), join(parent, d));
  }
  return out;
}

/** Pids of the containerd shims of a node (found by its socket in their command line), by sandbox id. */
export function shimPids(node: string): Map<string, number> {
  const sock = nodePaths(node).containerdSock;
  const out = new Map<string, number>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (!(argv[0] ?? '').endsWith('containerd-shim-runc-v2') || !argv.includes(sock)) continue;
    const id = argv[argv.indexOf('-id') + 1] ?? e;
    out.set(id, Number(e));
  }
  return out;
}

/** One container of a pod, with its memory. */
export interface ContainerMem {
  name: string;
  /** `pause` for the pod sandbox. */
  kind: 'sandbox' | 'container';
  procs: ProcMem;
  cgroup: CgroupMem;
}

/** A pod's memory on its node, containers by name, plus the pod cgroup and its shim. */
export interface PodMem {
  containers: ContainerMem[];
  cgroup: CgroupMem;
  shim: ProcMem;
}

interface CriContainer {
  id: string;
  podSandboxId: string;
  metadata: { name: string };
  labels?: Record<string, string>;
}

/** Memory of one pod (by uid) on a real node; undefined when its cgroup is not there. */
export function podMemory(node: string, podUid: string): PodMem | undefined {
  const dir = podCgroups(node).get(podUid);
  if (!dir) return undefined;
  const cri = (JSON.parse(crictl(node, ['ps', '-a', '-o', 'json'])) as { containers: CriContainer[] }).containers.filter((c) => c.labels?.['io.kubernetes.pod.uid'] === podUid);
  const byId = new Map(cri.map((c) => [c.id, c]));
  const sandbox = cri[0]?.podSandboxId;
  const containers: ContainerMem[] = subdirs(dir).map((id) => {
    const c = byId.get(id);
    const cg = join(dir, id);
    return {
      name: c?.metadata.name ?? (id === sandbox || !c ? 'pause' : id),
      kind: c ? 'container' : 'sandbox',
      procs: sumMem(cgroupPids(cg).map((p) => procMem(p))),
      cgroup: cgroupMem(cg),
    };
  });
  const shimPid = sandbox ? shimPids(node).get(sandbox) : undefined;
  return { containers, cgroup: cgroupMem(dir), shim: shimPid ? procMem(shimPid) : ZERO };
}

/** Everything pod-related on a node at one instant: all pod processes, pod cgroups and shims. */
export interface NodeSample {
  at: number;
  pods: number;
  procs: ProcMem;
  shims: number;
  shimProcs: ProcMem;
  kubepods: CgroupMem;
}

/** One sample of the node's pod processes and shims (RSS and PSS). */
export function sampleNode(node: string): NodeSample {
  const shims = [...shimPids(node).values()];
  return {
    at: Date.now(),
    pods: podCgroups(node).size,
    procs: sumMem(cgroupPids(kubepodsDir(node)).map((p) => procMem(p))),
    shims: shims.length,
    shimProcs: sumMem(shims.map((p) => procMem(p))),
    kubepods: cgroupMem(kubepodsDir(node)),
  };
}

/** Peaks of {@link NodeSample} fields over a sampling window (each field's own maximum). */
export interface NodePeak {
  samples: number;
  pods: number;
  shims: number;
  /** Pod processes + shims, RSS, at the same instant. */
  rssWithShims: number;
  /** The same in PSS: shared pages (the shim binary, busybox) counted once across processes. */
  pssWithShims: number;
  procsRss: number;
  shimRss: number;
  workingSet: number;
  /** The kernel's own peak of the kubepods cgroup (memory.max_usage_in_bytes) over the window. */
  cgroupMaxUsage: number;
}

/** Samples a node every `intervalMs` until stop() is called; stop() returns the peaks. */
export function sampleNodePeak(node: string, intervalMs = 150): { stop: () => NodePeak } {
  const peak: NodePeak = { samples: 0, pods: 0, shims: 0, rssWithShims: 0, pssWithShims: 0, procsRss: 0, shimRss: 0, workingSet: 0, cgroupMaxUsage: 0 };
  const dir = kubepodsDir(node);
  if (existsSync(dir)) resetPeak(dir);
  const tick = (): void => {
    if (!existsSync(dir)) return;
    const s = sampleNode(node);
    peak.samples++;
    peak.pods = Math.max(peak.pods, s.pods);
    peak.shims = Math.max(peak.shims, s.shims);
    peak.procsRss = Math.max(peak.procsRss, s.procs.rss);
    peak.shimRss = Math.max(peak.shimRss, s.shimProcs.rss);
    peak.rssWithShims = Math.max(peak.rssWithShims, s.procs.rss + s.shimProcs.rss);
    peak.pssWithShims = Math.max(peak.pssWithShims, s.procs.pss + s.shimProcs.pss);
    peak.workingSet = Math.max(peak.workingSet, s.kubepods.workingSet);
  };
  const timer = setInterval(tick, intervalMs);
  tick();
  return {
    stop: () => {
      clearInterval(timer);
      tick();
      peak.cgroupMaxUsage = cgroupMem(dir).maxUsage;
      return peak;
    },
  };
}
