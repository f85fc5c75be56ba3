/** Names of the objects that grant the sidecar and the fail-safe their access: synth renders them, doctor checks them. */
import { GROUP } from './names.js';

/** ServiceAccount of the pull pods (and so of the sidecar). */
export const SERVICE_ACCOUNT = 'prewarm-reconciler';
/** Cluster-scoped RBAC and admission objects. */
export const CLUSTER_ROLE = `${GROUP}:reconciler`;

/** Names of the objects the sidecar's access is made of; stable, explicit, in one place. */
export const ACCESS_NAMES = {
  /** ClusterRole + ClusterRoleBinding for nodes. */
  nodesRole: CLUSTER_ROLE,
  /** ClusterRole bound per pool namespace (RoleBinding) for the sidecar's own pod. */
  podsRole: `${CLUSTER_ROLE}-pods`,
  /** RoleBinding in each pool namespace. */
  roleBinding: SERVICE_ACCOUNT,
  /** ClusterRole bound where pools refresh moved tags: `patch` on pods, for a sidecar's own image digest. */
  refreshRole: `${CLUSTER_ROLE}-refresh`,
  /** ValidatingAdmissionPolicy and its binding that narrow that `patch` to one image change. */
  refreshPolicy: `reconciler-refresh.${GROUP}`,
  /** ClusterRole for Events, bound only in the Events namespace. */
  eventsRole: `${CLUSTER_ROLE}-events`,
  /** RoleBinding in the Events namespace. */
  eventsBinding: `${SERVICE_ACCOUNT}-events`,
  /** ValidatingAdmissionPolicy and its binding (DNS subdomain names). */
  policy: `reconciler.${GROUP}`,
  /** ValidatingAdmissionPolicy and its binding that admit only restricted or early-puller pods in early-pull namespaces. */
  earlyPullPolicy: `early-pullers.${GROUP}`,
  /** ValidatingAdmissionPolicy and its binding that admit a ConfigMap named like the sleeper's only as synth renders it. */
  sleeperPolicy: `sleeper.${GROUP}`,
} as const;

/** ServiceAccount and Deployment of the cluster's fail-safe (src/reconciler/failsafe.ts). */
export const FAILSAFE_NAME = 'prewarm-failsafe';

/** Names of the objects the fail-safe's access is made of. */
export const FAILSAFE_ACCESS_NAMES = {
  /** ClusterRole + ClusterRoleBinding: list and patch nodes. */
  nodesRole: `${GROUP}:failsafe`,
  /** ClusterRole bound per pool namespace (RoleBinding): list the holder pods on a node. */
  podsRole: `${GROUP}:failsafe-pods`,
  /** ClusterRole for Events, bound only in the Events namespace. */
  eventsRole: `${GROUP}:failsafe-events`,
  /** RoleBinding in each pool namespace. */
  roleBinding: FAILSAFE_NAME,
  /** RoleBinding in the Events namespace. */
  eventsBinding: `${FAILSAFE_NAME}-events`,
} as const;
