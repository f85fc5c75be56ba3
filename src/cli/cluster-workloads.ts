/**
 * `discover --from-cluster`: the cluster's workloads, read-only, through the kubeconfig with the
 * bounds of every other read (src/cli/kube.ts). Each list is turned back into manifest text and read
 * by the same reader as rendered manifests, so a workload means the same from a file or a cluster
 * and the same limits hold. Objects a controller owns (a Deployment's ReplicaSets, their Pods, a
 * CronJob's Jobs) are counted, not read: their owner is.
 */
import { readWorkloads, type ManifestResult } from '../discover/manifests.js';
import { CliError, ExitCode } from './exit-codes.js';
import { apiFailure } from './api-failure.js';
import { kubeClient, type KubeClientOptions } from './kube.js';

interface Listed {
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly ownerReferences?: readonly { readonly controller?: boolean; readonly kind?: string }[];
  };
  readonly spec?: unknown;
}

/** Lists every workload kind in every namespace, and reads them as manifests. */
export async function readClusterWorkloads(o: KubeClientOptions): Promise<ManifestResult> {
  const { k8s, api } = await kubeClient(o);
  const apps = api(k8s.AppsV1Api);
  const batch = api(k8s.BatchV1Api);
  const core = api(k8s.CoreV1Api);
  const lists: [string, string, () => Promise<{ items: Listed[] }>][] = [
    ['Deployment', 'apps/v1', () => apps.listDeploymentForAllNamespaces()],
    ['StatefulSet', 'apps/v1', () => apps.listStatefulSetForAllNamespaces()],
    ['DaemonSet', 'apps/v1', () => apps.listDaemonSetForAllNamespaces()],
    ['ReplicaSet', 'apps/v1', () => apps.listReplicaSetForAllNamespaces()],
    ['CronJob', 'batch/v1', () => batch.listCronJobForAllNamespaces()],
    ['Job', 'batch/v1', () => batch.listJobForAllNamespaces()],
    ['ReplicationController', 'v1', () => core.listReplicationControllerForAllNamespaces()],
    ['Pod', 'v1', () => core.listPodForAllNamespaces()],
  ];
  let answers: { items: Listed[] }[];
  try {
    answers = await Promise.all(lists.map(([, , list]) => list()));
  } catch (err) {
    throw new CliError(`cannot read the cluster: ${apiFailure(err).message}`, ExitCode.Internal);
  }
  const owned: Record<string, number> = {};
  const files = lists.map(([kind, apiVersion], i) => {
    const items = (answers[i]?.items ?? []).filter((item) => {
      const owner = item.metadata?.ownerReferences?.find((r) => r.controller === true);
      if (owner === undefined) return true;
      const key = `${kind} owned by a ${owner.kind ?? 'controller'}`;
      owned[key] = (owned[key] ?? 0) + 1;
      return false;
    });
    const text = JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: items.map((item) => ({
        kind,
        apiVersion,
        metadata: { name: item.metadata?.name, namespace: item.metadata?.namespace },
        spec: item.spec,
      })),
    });
    return { path: `cluster:${kind}`, text };
  });
  const read = readWorkloads(files);
  const errors = read.diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) throw new CliError(`the cluster's workloads cannot be read: ${errors[0]?.message ?? ''}`, ExitCode.Internal);
  return { ...read, others: { ...read.others, ...owned } };
}
