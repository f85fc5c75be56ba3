/**
 * The core/v1 objects the sidecar reads, typed as they arrive on the wire (JSON, timestamps as
 * RFC 3339 strings). Pods and their statuses are the contract's (src/contract/pod-status.ts),
 * which status, the timeline and doctor read too. Not @kubernetes/client-node's model classes:
 * importing that package at run time would exceed the sidecar's memory budget.
 */
import type { NodeImage } from '../contract/node-images.js';
import type { Condition, ObjectMeta, Pod } from '../contract/pod-status.js';

/** A pod as the sidecar holds it: the apiserver always sends its metadata. */
export type KPod = Pod & { readonly metadata: ObjectMeta };

/** core/v1 Taint. */
export interface KTaint {
  readonly key: string;
  readonly value?: string;
  readonly effect: string;
  readonly timeAdded?: string;
}

/** core/v1 Node (only what we read). */
export interface KNode {
  readonly metadata: ObjectMeta;
  readonly spec?: { readonly taints?: readonly KTaint[]; readonly unschedulable?: boolean };
  readonly status?: { readonly conditions?: readonly Condition[]; readonly images?: readonly NodeImage[] };
}
