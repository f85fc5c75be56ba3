/** Holder or puller, decided from labels only: names are never parsed, since a long one is cut and hashed and stops saying what it was. */
import { LABEL_POOL, LABEL_POOL_MEMBER, LABEL_PULLER } from './names.js';

type Labels = Readonly<Record<string, string>> | undefined;

/** The two kinds of pull DaemonSet a pool has, and of their pods. */
export const Role = {
  /** Keeps every image of the pool on every node it selects, and runs the sidecar. */
  Holder: 'holder',
  /** One lane of a pool's images, only on nodes still warming; no sidecar. */
  Puller: 'puller',
} as const;
export type Role = (typeof Role)[keyof typeof Role];

/** `app.kubernetes.io/component` of each role's DaemonSets and pods. */
export const COMPONENT: Readonly<Record<Role, string>> = { holder: 'image-puller', puller: 'burst-puller' };

/** The role of a pool's DaemonSet or pod; undefined for anything that is neither. */
export function roleOf(labels: Labels): Role | undefined {
  if (labels?.[LABEL_POOL] !== undefined) return Role.Holder;
  if (labels?.[LABEL_PULLER] !== undefined) return Role.Puller;
  return undefined;
}

/** The pool id of a holder or puller; undefined for anything that is neither. */
export function poolOf(labels: Labels): string | undefined {
  const role = roleOf(labels);
  return role === Role.Holder ? labels?.[LABEL_POOL] : role === Role.Puller ? labels?.[LABEL_POOL_MEMBER] : undefined;
}

export const isHolder = (labels: Labels): boolean => roleOf(labels) === Role.Holder;
export const isPuller = (labels: Labels): boolean => roleOf(labels) === Role.Puller;

/** Whether these are an early puller's: pullers are on the host network exactly when the pool pulls early. */
export function isEarlyPuller(labels: Labels, podSpec: { readonly hostNetwork?: boolean | null | undefined } | null | undefined): boolean {
  return isPuller(labels) && podSpec?.hostNetwork === true;
}

/** `<id>-<lane>`: unique, as lane keys never contain a dash. */
export function pullerSelectorValue(id: string, lane: string): string {
  return `${id}-${lane}`;
}

/** The lane key of a puller, from its selector value; undefined for a holder or anything else. */
export function laneOf(labels: Labels): string | undefined {
  const value = roleOf(labels) === Role.Puller ? labels?.[LABEL_PULLER] : undefined;
  return value?.slice(value.lastIndexOf('-') + 1);
}

/** The immutable selector of a pool's holder DaemonSet; no other DaemonSet's pods carry it. */
export function holderSelector(id: string): Record<string, string> {
  return { [LABEL_POOL]: id };
}

/** The immutable selector of a pool's puller DaemonSet for lane `lane`. */
export function pullerSelector(id: string, lane: string): Record<string, string> {
  return { [LABEL_PULLER]: pullerSelectorValue(id, lane) };
}

/** Label selector (list and watch query) of every pod of a pool: its holder and its pullers. */
export function poolMembersQuery(id: string): string {
  return `${LABEL_POOL_MEMBER}=${id}`;
}

/** Label selector (list and watch query) of the pullers of a pool, or of every pool without `id`. */
export function pullersQuery(id?: string): string {
  return id === undefined ? LABEL_PULLER : `${poolMembersQuery(id)},${LABEL_PULLER}`;
}
