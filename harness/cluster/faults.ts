/**
 * Faults the harness injects into its own cluster, for the chaos tier: every process killed or
 * restarted here is one the harness started (a daemon with a pid file, or a container of one of
 * its nodes' containerd), so nothing outside the test cluster is touched. Each function returns
 * once the fault is in place (or, for a start, once the component answers again).
 */
import { apiserverUrl } from './config.js';
import { CP_DIR, kubectl } from './cluster.js';
import { clusterControlPlane, startApiserver, startEtcd, waitApiserverReady } from './controlplane.js';
import { crictl, kubeletDaemon, loadSpec, startKubelet } from './node.js';
import { startHubRegistry, stopHubRegistry } from './registry.js';
import { withdrawImage } from './images.js';
import { daemonPid, killDaemon, stopDaemon } from './sh.js';

const APISERVER = 'cp-apiserver';
const ETCD = 'cp-etcd';

function controlPlane(): ReturnType<typeof clusterControlPlane> {
  return clusterControlPlane(CP_DIR);
}

/** SIGKILLs kube-apiserver (no graceful shutdown). Start it again with {@link startApiserverAgain}. */
export async function killApiserver(): Promise<void> {
  if (!daemonPid(APISERVER)) throw new Error('kube-apiserver is not running');
  await killDaemon(APISERVER);
}

/**
 * Starts kube-apiserver again with the flags `up` gave it (without an audit log: a cluster brought
 * up with one loses it here) and waits for /readyz.
 */
export async function startApiserverAgain(): Promise<void> {
  const cp = controlPlane();
  await startApiserver(cp);
  await waitApiserverReady(cp, apiserverUrl());
}

/** Restarts etcd (SIGTERM, then start on the same data) and waits until the apiserver is ready again. */
export async function restartEtcd(): Promise<void> {
  if (!daemonPid(ETCD)) throw new Error('etcd is not running');
  const cp = controlPlane();
  await stopDaemon(ETCD);
  await startEtcd(cp);
  await waitApiserverReady(cp, apiserverUrl());
}

/** Stops a real node's kubelet (SIGTERM); its containers keep running under containerd. */
export async function stopKubelet(node: string): Promise<void> {
  if (!daemonPid(kubeletDaemon(node))) throw new Error(`the kubelet of ${node} is not running`);
  await stopDaemon(kubeletDaemon(node), 15_000);
}

/** Starts a real node's kubelet again, with the configuration it joined with. */
export async function startKubeletAgain(node: string): Promise<void> {
  const spec = loadSpec(node);
  if (!spec) throw new Error(`no such real node ${node}`);
  await startKubelet(spec);
}

/** Stops the hub registry (TLS or plain) that serves some images: a registry outage. */
export const stopRegistry = stopHubRegistry;
/** Starts it again and waits until it answers. */
export const startRegistry = startHubRegistry;
/** Withdraws one image from the hub registry, the others still served; returns its restore (see {@link withdrawImage}). */
export const withdrawRegistryImage = withdrawImage;

/**
 * SIGKILLs the main process of the running container `container` of pod `pod` on a real node
 * (found through that node's containerd), as an OOM kill or a crash would: the kubelet restarts
 * the container. Returns the pid killed.
 */
export function killContainer(node: string, pod: string, container: string): number {
  const ids = crictl(node, ['ps', '-q', '--name', `^${container}$`, '--label', `io.kubernetes.pod.name=${pod}`, '--state', 'Running'])
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (ids.length !== 1) throw new Error(`want one running container ${container} of ${pod} on ${node}, found ${ids.length}`);
  const info = JSON.parse(crictl(node, ['inspect', ids[0] as string])) as { info?: { pid?: number } };
  const pid = info.info?.pid;
  if (!pid) throw new Error(`crictl inspect gave no pid for ${container} of ${pod} on ${node}`);
  // SIGKILL alone: a SIGTERM first would let the sidecar start its cleanup (a shutdown, not a crash).
  process.kill(pid, 'SIGKILL');
  return pid;
}

/**
 * Reports the node NotReady through the status subresource, as a node lifecycle hiccup would. The
 * kubelet (status every 5 s in the harness) reports Ready again at its next update, so the node
 * flaps NotReady → Ready and its Ready lastTransitionTime moves.
 */
export function reportNotReady(node: string): void {
  const now = new Date().toISOString();
  const patch = {
    status: {
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'ChaosNotReady',
          message: 'reported NotReady by the chaos tier',
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        },
      ],
    },
  };
  kubectl(['patch', 'node', node, '--subresource=status', '--type=strategic', '-p', JSON.stringify(patch)]);
}
