/** The memory pull pods request of a node, which the kubelet reserves whether or not it is used. */
import type { Diagnostic } from '../../imagecache/errors.js';
import type { Pool } from '../../imagecache/model.js';
import { parseQuantity } from '../../contract/quantity.js';
import { listed, poolLocation, poolName } from './diagnostics.js';
import { size } from './limits.js';

/** A container as far as its memory request is read, and for an init container its kind. */
export interface RequestingContainer {
  readonly name: string;
  readonly resources?: { readonly requests?: Readonly<Record<string, string>> };
  /** `Always` on an init container makes it a native sidecar. */
  readonly restartPolicy?: string;
}

/** A pod spec as far as its memory request is read. */
export interface RequestingPod {
  readonly initContainers?: readonly RequestingContainer[];
  readonly containers?: readonly RequestingContainer[];
}

/** One pull DaemonSet of a pool (its holder or a burst puller) and what its pod requests. */
export interface PoolMember {
  readonly pool: Pool;
  /** Memory its pod requests, in bytes: {@link podMemoryRequest}. */
  readonly bytes: number;
}

/** A pod's memory request as the scheduler counts it (KEP-753, native sidecars included). */
export function podMemoryRequest(pod: RequestingPod): number {
  let sidecars = 0;
  let init = 0;
  for (const c of pod.initContainers ?? []) {
    if (c.restartPolicy === 'Always') {
      sidecars += memoryRequest(c);
      init = Math.max(init, sidecars);
    } else {
      init = Math.max(init, sidecars + memoryRequest(c));
    }
  }
  const containers = (pod.containers ?? []).reduce((n, c) => n + memoryRequest(c), 0);
  return Math.max(init, sidecars + containers);
}

/** A container's memory request in bytes; 0 without one. */
function memoryRequest(c: RequestingContainer): number {
  const q = c.resources?.requests?.['memory'];
  if (q === undefined) return 0;
  const bytes = parseQuantity(q);
  if (bytes === undefined) throw new Error(`unexpected memory quantity "${q}" on container ${c.name}`);
  return bytes;
}

/**
 * The memory the pull pods request on the node that gets the most while it warms (holder and every
 * burst puller), an error over `boundBytes` (`--max-node-memory`).
 */
export function checkNodeMemory(members: readonly PoolMember[], boundBytes: number): Diagnostic[] {
  const worst = worstNode(members);
  if (worst === undefined || worst.bytes <= boundBytes) return [];
  const labels = Object.entries(worst.node.nodeSelector).map(([k, v]) => `${k}=${v}`);
  return [
    {
      ...poolLocation(worst.node),
      severity: 'error',
      message:
        `${labels.length === 0 ? 'every node' : `a node labelled ${labels.join(',')}`} runs the pull pods of ${listed(worst.pools.map(poolName))}, ` +
        `which request ${size(worst.bytes, false)} of memory there while it warms (holders and burst pullers), over ${size(boundBytes, false)}, ` +
        `the most this invocation allows on one node (--max-node-memory): every image reserves 4 MiB on each node its pools select, ` +
        `and 4 MiB more in its puller during the warm-up (fewer images per node, pools with narrower selectors, or fewer lanes reserve less)`,
    },
  ];
}

/** The node whose pull pods request the most, among nodes labelled exactly like one pool (an upper bound). */
function worstNode(members: readonly PoolMember[]): { node: Pool; pools: Pool[]; bytes: number } | undefined {
  const requests = new Map<Pool, number>();
  for (const { pool, bytes } of members) requests.set(pool, (requests.get(pool) ?? 0) + bytes);
  const selectors = [...requests.keys()].map((p) => [p, Object.entries(p.nodeSelector)] as const);
  let worst: { node: Pool; pools: Pool[]; bytes: number } | undefined;
  for (const node of requests.keys()) {
    const on = selectors.filter(([, sel]) => sel.every(([k, v]) => node.nodeSelector[k] === v)).map(([p]) => p);
    const bytes = on.reduce((n, p) => n + (requests.get(p) ?? 0), 0);
    if (worst === undefined || bytes > worst.bytes) worst = { node, pools: on, bytes };
  }
  return worst;
}
