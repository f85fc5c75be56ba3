/**
 * A joining node's warm-up, read from its own containerd and kubelet logs (millisecond stamps, not
 * the apiserver's whole seconds): per pod, when its volumes were set up, its sandbox asked for and
 * up, and each container's image pulled and container started; times in seconds after `originMs`
 * (the node's Ready as the bench's watch saw it). Bench-only: it reads the harness's log files.
 */
import { existsSync, readFileSync } from 'node:fs';
import { logFile } from '../../harness/cluster/sh.js';
import { containerdDaemon, kubeletDaemon } from '../../harness/cluster/node.js';

interface PodSteps {
  volumesAt?: number;
  sandboxAskedAt?: number;
  sandboxUpAt?: number;
  containers: Map<string, { createdAt?: number; startedAt?: number; id?: string }>;
}

/** One pull: containerd logs the reference, not the pod. */
interface Pull {
  readonly ref: string;
  readonly from: number;
  to?: number;
}

export interface NodeWaterfall {
  readonly pods: ReadonlyMap<string, PodSteps>;
  readonly pulls: readonly Pull[];
}

const CONTAINERD_TIME = /^time="([^"]+)"/;
/** klog's `I1207 06:41:58.240669`: month, day and time of day, in UTC on the harness. */
const KLOG_TIME = /^[IWE](\d\d)(\d\d) (\d\d:\d\d:\d\d\.\d+)/;

function klogMs(line: string, year: number): number | undefined {
  const m = KLOG_TIME.exec(line);
  if (m === null) return undefined;
  return Date.parse(`${year}-${m[1]}-${m[2]}T${m[3]}Z`);
}

/** Parses both logs of `node`; undefined when the harness kept no containerd log for it. */
export function readNodeWaterfall(node: string, year = new Date().getUTCFullYear()): NodeWaterfall | undefined {
  const ctrd = logFile(containerdDaemon(node));
  if (!existsSync(ctrd)) return undefined;
  const pods = new Map<string, PodSteps>();
  const pod = (name: string): PodSteps => {
    const p = pods.get(name) ?? { containers: new Map() };
    pods.set(name, p);
    return p;
  };
  const sandboxes = new Map<string, string>();
  const containers = new Map<string, { pod: string; name: string }>();
  const pulls: Pull[] = [];
  for (const line of readFileSync(ctrd, 'utf8').split('\n')) {
    const t = Date.parse(CONTAINERD_TIME.exec(line)?.[1] ?? '');
    if (Number.isNaN(t)) continue;
    let m: RegExpExecArray | null;
    if ((m = /RunPodSandbox for &PodSandboxMetadata\{Name:([^,]+),.*returns sandbox id \\"([0-9a-f]+)/.exec(line)) !== null) {
      pod(m[1] as string).sandboxUpAt ??= t;
      sandboxes.set(m[2] as string, m[1] as string);
    } else if ((m = /RunPodSandbox for &PodSandboxMetadata\{Name:([^,]+),/.exec(line)) !== null) pod(m[1] as string).sandboxAskedAt ??= t;
    else if (
      (m =
        /CreateContainer within sandbox \\"([0-9a-f]+)\\" for &ContainerMetadata\{Name:([^,]+),.*returns container id \\"([0-9a-f]+)/.exec(
          line,
        )) !== null
    ) {
      const p = sandboxes.get(m[1] as string);
      if (p !== undefined) containers.set(m[3] as string, { pod: p, name: m[2] as string });
    } else if (
      (m = /CreateContainer within sandbox \\"([0-9a-f]+)\\" for container &ContainerMetadata\{Name:([^,]+),/.exec(line)) !== null
    ) {
      const p = sandboxes.get(m[1] as string);
      if (p !== undefined) {
        const c = pod(p).containers.get(m[2] as string) ?? {};
        c.createdAt ??= t;
        pod(p).containers.set(m[2] as string, c);
      }
    } else if ((m = /StartContainer for \\"([0-9a-f]+)\\" returns successfully/.exec(line)) !== null) {
      const c = containers.get(m[1] as string);
      if (c !== undefined) {
        const s = pod(c.pod).containers.get(c.name) ?? {};
        s.startedAt ??= t;
        pod(c.pod).containers.set(c.name, s);
      }
    } else if ((m = /PullImage \\"([^\\]+)\\" returns/.exec(line)) !== null) {
      const open = pulls.find((p) => p.ref === m?.[1] && p.to === undefined);
      if (open !== undefined) open.to = t;
    } else if ((m = /PullImage \\"([^\\]+)\\"/.exec(line)) !== null) pulls.push({ ref: m[1] as string, from: t });
  }
  const kubelet = logFile(kubeletDaemon(node));
  if (existsSync(kubelet))
    for (const line of readFileSync(kubelet, 'utf8').split('\n')) {
      const m = /MountVolume\.SetUp succeeded for volume .* pod \\"([^\\]+)\\"/.exec(line);
      const t = m === null ? undefined : klogMs(line, year);
      if (m !== null && t !== undefined) {
        const p = pod(m[1] as string);
        p.volumesAt = Math.max(p.volumesAt ?? 0, t);
      }
    }
  return { pods, pulls };
}

const at = (t: number | undefined, origin: number): string => (t === undefined ? '—' : ((t - origin) / 1000).toFixed(2));

/** Short image names: the repository's last path part and the tag, without the digest. */
const short = (ref: string): string => (ref.split('/').pop() ?? ref).replace(/@sha256:[0-9a-f]+$/, '');

/**
 * Lines for the console: per pod, volumes set up, sandbox asked → up, and per container its
 * created → started; then every pull, start → end; seconds after `originMs`.
 */
export function renderNodeWaterfall(w: NodeWaterfall, originMs: number, only?: (pod: string) => boolean): string[] {
  const out: string[] = [];
  for (const [name, p] of [...w.pods].sort((a, b) => (a[1].sandboxAskedAt ?? 0) - (b[1].sandboxAskedAt ?? 0))) {
    if (only !== undefined && !only(name)) continue;
    const cs = [...p.containers].map(([c, s]) => `${c} ${at(s.createdAt, originMs)}→${at(s.startedAt, originMs)}`).join(', ');
    out.push(
      `  pod ${name}: volumes ${at(p.volumesAt, originMs)}, sandbox ${at(p.sandboxAskedAt, originMs)}→${at(p.sandboxUpAt, originMs)}; containers ${cs}`,
    );
  }
  for (const p of [...w.pulls].sort((a, b) => a.from - b.from))
    out.push(
      `  pull ${short(p.ref)}: ${at(p.from, originMs)}→${at(p.to, originMs)} (${p.to === undefined ? '—' : ((p.to - p.from) / 1000).toFixed(2)} s)`,
    );
  return out;
}
