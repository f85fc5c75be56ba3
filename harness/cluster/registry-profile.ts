/**
 * Registry profiles of the harness: how the plain registry behaves as the nodes see it.
 *
 *   loopback  the registry as it is, on the same machine (the default)
 *   remote    a registry across a network: every connection capped (object-store and CDN backends
 *             limit each stream), every node's link capped, optionally the upstream link all nodes
 *             share (a cluster's egress or a mirror's uplink), and a round-trip time per request and
 *             per new connection. Served by the throttling proxy (throttle-proxy.ts) in the hub
 *             netns; containerd reaches it through hosts.toml, which is read per pull.
 *
 * The pure parts live here: parsing a profile (`remote`, or `remote:conn=24MiB,node=96MiB,rtt=50ms`,
 * `upstream=96MiB` to add the shared link)
 * and the link arithmetic that decides when a piece of a response may leave the proxy.
 */

/** What the remote registry looks like from a node. */
export interface RemoteShape {
  /** Cap of one TCP connection, bytes per second. */
  readonly perConnectionBps: number;
  /** Cap of one node's link to the registry (all its connections together), bytes per second. */
  readonly perNodeBps: number;
  /** Cap of the link every node shares (all nodes together), bytes per second; absent: none. */
  readonly perUpstreamBps?: number;
  /** Round-trip time, ms: one per request, `connectRtts` more for a new connection. */
  readonly rttMs: number;
  /** Round trips a new connection costs before its first request (TCP, TLS 1.3: 2). */
  readonly connectRtts: number;
}

export type RegistryProfile = { readonly name: 'loopback' } | ({ readonly name: 'remote' } & RemoteShape);

const MIB = 1 << 20;

/**
 * The remote profile's values. Per stream: about 25 MB/s per layer from ECR (containerd#8160);
 * per node: about 4 streams, a 2-vCPU instance's baseline of under 1 Gbps; RTT: object-store
 * first-byte latency is 100–200 ms (S3 docs), a registry in the same region answers in tens of ms.
 * See docs/benchmarks.md for the sources and the scale.
 */
export const REMOTE_DEFAULTS: RemoteShape = {
  perConnectionBps: 24 * MIB,
  perNodeBps: 96 * MIB,
  rttMs: 50,
  connectRtts: 2,
};

export const PROFILE_NAMES = ['loopback', 'remote'] as const;
export type ProfileName = (typeof PROFILE_NAMES)[number];

export const LOOPBACK: RegistryProfile = { name: 'loopback' };

const SIZE = /^(\d+(?:\.\d+)?)(B|KiB|MiB|GiB|KB|MB|GB)?$/;
const UNITS: Record<string, number> = { B: 1, KiB: 1 << 10, MiB: MIB, GiB: 1 << 30, KB: 1e3, MB: 1e6, GB: 1e9 };
const DURATION = /^(\d+(?:\.\d+)?)(ms|s)$/;

/** Bytes per second from `24MiB` (per second implied); throws on anything else. */
export function parseRate(s: string, field: string): number {
  const m = SIZE.exec(s.trim());
  if (!m?.[1]) throw new Error(`registry profile: ${field}=${s}: want a rate such as 24MiB (per second), 200MB or 1048576`);
  const v = Number(m[1]) * (UNITS[m[2] ?? 'B'] as number);
  if (!(v > 0)) throw new Error(`registry profile: ${field}=${s}: must be above 0`);
  return v;
}

function parseMs(s: string, field: string): number {
  const m = DURATION.exec(s.trim());
  if (!m?.[1]) throw new Error(`registry profile: ${field}=${s}: want a duration such as 50ms or 0.1s`);
  return Number(m[1]) * (m[2] === 's' ? 1000 : 1);
}

/**
 * Parses `loopback`, `remote` or `remote:key=value,...` (keys conn, node, upstream, rtt, connect-rtts) into
 * a profile; throws with the offending part on anything else.
 */
export function parseRegistryProfile(text: string): RegistryProfile {
  const [name, rest] = text.trim().split(/:(.*)/s, 2) as [string, string | undefined];
  if (name === 'loopback') {
    if (rest !== undefined && rest !== '') throw new Error(`registry profile: loopback takes no settings (got ${rest})`);
    return LOOPBACK;
  }
  if (name !== 'remote') throw new Error(`registry profile: unknown profile ${JSON.stringify(name)}; known: ${PROFILE_NAMES.join(', ')}`);
  const shape = { ...REMOTE_DEFAULTS };
  for (const part of (rest ?? '').split(',').filter((p) => p.trim() !== '')) {
    const [k, v] = part.split('=', 2).map((x) => x.trim());
    if (!k || v === undefined || v === '') throw new Error(`registry profile: ${part}: want key=value`);
    if (k === 'conn') shape.perConnectionBps = parseRate(v, k);
    else if (k === 'node') shape.perNodeBps = parseRate(v, k);
    else if (k === 'upstream') shape.perUpstreamBps = parseRate(v, k);
    else if (k === 'rtt') shape.rttMs = parseMs(v, k);
    else if (k === 'connect-rtts') {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0) throw new Error(`registry profile: connect-rtts=${v}: want a whole number ≥ 0`);
      shape.connectRtts = n;
    } else throw new Error(`registry profile: unknown setting ${k}; known: conn, node, upstream, rtt, connect-rtts`);
  }
  return { name: 'remote', ...shape };
}

/** One line such as `remote (24 MiB/s per connection, 96 MiB/s per node, RTT 50 ms)`. */
export function describeProfile(p: RegistryProfile): string {
  if (p.name === 'loopback') return 'loopback (the registry on this machine, unshaped)';
  const mib = (b: number) => `${+(b / MIB).toFixed(2)} MiB/s`;
  const upstream = p.perUpstreamBps === undefined ? '' : `, ${mib(p.perUpstreamBps)} upstream shared by all nodes`;
  return `remote (${mib(p.perConnectionBps)} per connection, ${mib(p.perNodeBps)} per node${upstream}, RTT ${p.rttMs} ms, ${p.connectRtts} RTT per new connection)`;
}

/**
 * How many bytes each connection of one node may send in one tick: connection i wants up to
 * `wants[i]` (what it has queued, at most its own cap for the tick), all of them together at most
 * `total` (the node's cap for the tick). Max-min fair: the link is shared equally, and what a
 * connection cannot use goes to the others.
 */
export function waterFill(total: number, wants: readonly number[]): number[] {
  const out = wants.map(() => 0);
  const order = wants.map((w, i) => [w, i] as const).sort((a, b) => a[0] - b[0]);
  let left = Math.max(0, total);
  let k = order.length;
  for (const [want, i] of order) {
    const give = Math.min(Math.max(0, want), left / k);
    out[i] = give;
    left -= give;
    k--;
  }
  return out;
}

/**
 * How many bytes each connection may send in one tick, for every node: `wants[n][i]` is what
 * connection i of node n wants (at most its own cap for the tick). Each node together gets at most
 * `nodeCap`, all nodes together at most `upstreamCap` (Infinity: no shared link); both links are
 * shared max-min fairly ({@link waterFill}), the upstream among nodes, then each node's among its
 * connections.
 */
export function shareLinks(nodeCap: number, upstreamCap: number, wants: readonly (readonly number[])[]): number[][] {
  const nodeWants = wants.map((ws) =>
    Math.min(
      nodeCap,
      ws.reduce((a, w) => a + Math.max(0, w), 0),
    ),
  );
  const nodeGrants = waterFill(upstreamCap, nodeWants);
  return wants.map((ws, n) => waterFill(nodeGrants[n] ?? 0, ws));
}

/**
 * The least time a transfer of `bytes` over `connections` parallel connections of one node can take
 * through the profile (transfer only; RTTs not counted): each stream is held to its own cap, all
 * of them together to the node's. For a check that the shaping is real.
 */
export function leastTransferMs(p: RemoteShape, streams: readonly number[]): number {
  const perStream = Math.max(0, ...streams.map((b) => (b * 1000) / p.perConnectionBps));
  const node = (streams.reduce((a, b) => a + b, 0) * 1000) / p.perNodeBps;
  return Math.max(perStream, node);
}
