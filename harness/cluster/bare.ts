/**
 * Bare runtimes: a netns + containerd with an empty image store and no kubelet, for raw-pull
 * baselines (what a node would take to pull the same images itself).
 */
import { BIN } from './config.js';
import { DEFAULT_IMAGE_GC, destroyNode, loadSpec, nextIndex, nodePaths, saveSpec, startContainerd, type NodeSpec } from './node.js';
import { runAsync } from './sh.js';

export async function startBareRuntime(name: string): Promise<NodeSpec> {
  const existing = loadSpec(name);
  if (existing) await destroyNode(name);
  const spec: NodeSpec = { name, index: nextIndex(), labels: {}, taints: [], imageGc: DEFAULT_IMAGE_GC, verbosity: 1, bare: true };
  saveSpec(spec);
  await startContainerd(spec);
  return spec;
}

export async function stopBareRuntime(name: string): Promise<void> {
  if (loadSpec(name)) await destroyNode(name);
}

/**
 * Pulls refs with crictl (CRI, like the kubelet): all at once, as a kubelet with parallel pulls
 * would, or with `serial` one after another, as a kubelet with `serializeImagePulls` does. Returns
 * the wall time in ms.
 */
export async function rawPull(name: string, refs: readonly string[], opts: { auth?: string; serial?: boolean } = {}): Promise<number> {
  const sock = `unix://${nodePaths(name).containerdSock}`;
  const t0 = Date.now();
  const pull = (ref: string) =>
    runAsync(
      [
        BIN.crictl,
        '--runtime-endpoint',
        sock,
        '--image-endpoint',
        sock,
        '--timeout',
        '300s',
        'pull',
        ...(opts.auth ? ['--creds', opts.auth] : []),
        ref,
      ],
      { timeoutMs: 600_000 },
    );
  if (opts.serial) for (const ref of refs) await pull(ref);
  else await Promise.all(refs.map(pull));
  return Date.now() - t0;
}
