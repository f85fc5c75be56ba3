/**
 * What a harness cluster can leave behind on the machine after its daemons are stopped, and the
 * sweep that `down` ends with: processes (containerd shims and the containers under them, daemons
 * started in a harness netns), mounts under the cluster's folders, and harness network namespaces.
 * A process is the cluster's when it runs in a harness netns or in a node's cgroup tree, or is a
 * containerd shim of a node (its `-address` is a node's socket). Not a shell that has a log of the
 * cluster open, and not the loopback control planes of the integration and gitops tiers, which run
 * the same binaries in the root netns (their daemons stop them by pid).
 */
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { RUN_DIR, STATE_DIR } from './config.js';
import { removeHostVarRun } from './kruise.js';
import { killPid, run } from './sh.js';

/** The prefix of every harness network namespace (hub and nodes; net.ts). */
const NETNS_PREFIX = 'pw-';
/** The parent of every node's cgroup root (node.ts nodePaths().cgroupRoot). */
const CGROUP_MARK = ':/prewarm/';
const NETNS_DIR = '/run/netns';

export interface Leftovers {
  /** `pid command` of each harness process still alive. */
  processes: string[];
  /** Mount points under the cluster's folders or its network namespaces. */
  mounts: string[];
  /** Harness network namespaces still in /run/netns. */
  netns: string[];
}

function harnessNetns(): string[] {
  return existsSync(NETNS_DIR)
    ? readdirSync(NETNS_DIR)
        .filter((n) => n.startsWith(NETNS_PREFIX))
        .sort()
    : [];
}

function read(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function harnessPids(): { pid: number; cmd: string }[] {
  const nsInodes = new Set<string>();
  for (const n of harnessNetns()) {
    try {
      nsInodes.add(`net:[${statSync(`${NETNS_DIR}/${n}`).ino}]`);
    } catch {
      /* deleted meanwhile */
    }
  }
  const out: { pid: number; cmd: string }[] = [];
  for (const d of readdirSync('/proc')) {
    const pid = Number(d);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const cmd = (read(`/proc/${pid}/cmdline`) ?? '').split('\0').join(' ').trim();
    if (cmd === '') continue; // kernel threads and processes gone meanwhile
    let netns = '';
    try {
      netns = readlinkSync(`/proc/${pid}/ns/net`);
    } catch {
      /* gone */
    }
    const shim = /containerd-shim/.test(cmd.split(' ')[0] ?? '') && cmd.includes(`${RUN_DIR}/`);
    const ours = shim || nsInodes.has(netns) || (read(`/proc/${pid}/cgroup`) ?? '').includes(CGROUP_MARK);
    if (ours) out.push({ pid, cmd });
  }
  return out;
}

function harnessMounts(): string[] {
  const roots = [`${RUN_DIR}/`, `${STATE_DIR}/`, `${NETNS_DIR}/${NETNS_PREFIX}`];
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => roots.some((r) => m.startsWith(r)))
    .sort((a, b) => b.length - a.length);
}

/** What of a harness cluster is still on the machine (empty after a clean `down`). */
export function leftovers(): Leftovers {
  return {
    processes: harnessPids().map((p) => `${p.pid} ${p.cmd}`),
    mounts: harnessMounts().filter((m) => !m.startsWith(`${NETNS_DIR}/`)),
    netns: harnessNetns(),
  };
}

/**
 * Ends every harness process (TERM, then KILL after a grace), unmounts what is mounted under the
 * cluster's folders, deletes the harness network namespaces. Returns what it found.
 */
export async function sweep(graceMs = 3_000): Promise<Leftovers> {
  const found = leftovers();
  await Promise.all(harnessPids().map((p) => killPid(p.pid, graceMs)));
  for (const m of harnessMounts().filter((x) => !x.startsWith(`${NETNS_DIR}/`))) run(['umount', '-l', m], { allowFail: true });
  for (const n of harnessNetns()) run(['ip', 'netns', 'del', n], { allowFail: true });
  removeHostVarRun();
  return found;
}
