/**
 * Network namespaces of the test cluster. Only harness-created namespaces get non-loopback
 * addresses; the root netns gets nothing but a 127.0.0.1 forward to the apiserver.
 *
 *   hub netns "pw-hub": bridge pwbr0 10.250.0.1/24, etcd (127.0.0.1), apiserver and registries
 *   node netns "pw-<node>": eth0 10.250.0.(10+i)/24 (veth to pwbr0), cni0 10.244.i.1/24, pods
 *
 * The hub has no route off the machine: a default route of a node points at the hub, which drops
 * anything not for the 10.250.0.0/24 or pod networks, so no packet can leave.
 */
import { existsSync } from 'node:fs';
import { NET } from './config.js';
import { run } from './sh.js';

export function netnsExists(name: string): boolean {
  return existsSync(`/run/netns/${name}`);
}

function ipn(ns: string, ...args: string[]): void {
  run(['ip', '-n', ns, ...args]);
}

function sysctl(ns: string, key: string, value: string): void {
  run(['sysctl', '-q', '-w', `${key}=${value}`], { netns: ns });
}

export function ensureHub(): void {
  const ns = NET.hubNs;
  if (!netnsExists(ns)) run(['ip', 'netns', 'add', ns]);
  ipn(ns, 'link', 'set', 'lo', 'up');
  if (run(['ip', '-n', ns, 'link', 'show', NET.bridge], { allowFail: true }).code !== 0) {
    ipn(ns, 'link', 'add', NET.bridge, 'type', 'bridge');
  }
  const addrs = run(['ip', '-n', ns, '-4', 'addr', 'show', 'dev', NET.bridge]).stdout;
  if (!addrs.includes(`${NET.hubIp}/`)) ipn(ns, 'addr', 'add', `${NET.hubIp}/${NET.nodeMask}`, 'dev', NET.bridge);
  ipn(ns, 'link', 'set', NET.bridge, 'up');
  sysctl(ns, 'net.ipv4.ip_forward', '1');
}

export function deleteNetns(name: string): void {
  if (netnsExists(name)) run(['ip', 'netns', 'del', name], { allowFail: true });
}

export interface NodeNet {
  ns: string;
  ip: string;
  podCidr: string;
  podGateway: string;
  index: number;
}

export function nodeNet(name: string, index: number): NodeNet {
  return {
    ns: `pw-${name}`,
    ip: `${NET.nodePrefix}${NET.firstNodeHost + index}`,
    podCidr: `10.244.${index}.0/24`,
    podGateway: `10.244.${index}.1`,
    index,
  };
}

/** veth names are limited to 15 bytes: derive the hub side from the node index. */
function hubVeth(n: NodeNet): string {
  return `pwv${n.index}`;
}

export function ensureNodeNet(n: NodeNet): void {
  if (!netnsExists(n.ns)) run(['ip', 'netns', 'add', n.ns]);
  ipn(n.ns, 'link', 'set', 'lo', 'up');
  const hv = hubVeth(n);
  if (run(['ip', '-n', n.ns, 'link', 'show', 'eth0'], { allowFail: true }).code !== 0) {
    run(['ip', '-n', NET.hubNs, 'link', 'del', hv], { allowFail: true });
    ipn(NET.hubNs, 'link', 'add', hv, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', n.ns);
    ipn(NET.hubNs, 'link', 'set', hv, 'master', NET.bridge);
    ipn(NET.hubNs, 'link', 'set', hv, 'up');
    ipn(n.ns, 'addr', 'add', `${n.ip}/${NET.nodeMask}`, 'dev', 'eth0');
    ipn(n.ns, 'link', 'set', 'eth0', 'up');
    ipn(n.ns, 'route', 'add', 'default', 'via', NET.hubIp);
  }
  // Return path for pod traffic (pods talk to the apiserver and to each other with pod IPs).
  run(['ip', '-n', NET.hubNs, 'route', 'replace', n.podCidr, 'via', n.ip]);
  sysctl(n.ns, 'net.ipv4.ip_forward', '1');
  sysctl(n.ns, 'net.ipv4.conf.all.route_localnet', '1');
  run(['sysctl', '-q', '-w', 'net.bridge.bridge-nf-call-iptables=1'], { netns: n.ns, allowFail: true });
}

export function deleteNodeNet(n: NodeNet): void {
  run(['ip', '-n', NET.hubNs, 'route', 'del', n.podCidr], { allowFail: true });
  run(['ip', '-n', NET.hubNs, 'link', 'del', hubVeth(n)], { allowFail: true });
  deleteNetns(n.ns);
}
