/**
 * A read that gave nothing, in a finding's words: why, and what to do about it. A refused read is
 * the user's missing permission; anything else is the apiserver's or the kubelet's failure.
 */
import type { ClusterRead } from './input.js';

/** The one-line reason a read gave nothing, for a finding of level `unknown`. */
export function unread(what: string, r: Exclude<ClusterRead<unknown>, { kind: 'ok' }>): string {
  if (r.kind === 'missing') return `${what} not found; skipped`;
  return r.kind === 'denied' ? `not allowed to read ${what} (${r.message}); skipped` : `could not read ${what}: ${r.message}; skipped`;
}

/** What to do about a failed read that is not the user's permission. */
export const APISERVER_FIX =
  "the apiserver failed to answer (not a permission problem): check its health with `kubectl get --raw='/readyz?verbose'` and run doctor again";

/** What to do about a failed read through a node's proxy: the kubelet did not answer well. */
export const KUBELET_FIX =
  'the kubelet did not answer through the node proxy (not a permission problem): check that the node is Ready and its kubelet runs (`kubectl describe node NAME`), then run doctor again';

/**
 * The advice for a read that gave nothing, matching why: the missing permission (`grant`) for a
 * refusal, `failure` when the apiserver or kubelet failed, none for a 404.
 */
export function fixFor(
  r: Exclude<ClusterRead<unknown>, { kind: 'ok' }>,
  grant: string,
  failure: string = APISERVER_FIX,
): string | undefined {
  if (r.kind === 'missing') return undefined;
  return r.kind === 'denied' ? grant : failure;
}

/** `{fix}` when there is one: a finding has no `fix` field rather than an undefined one. */
export function optionalFix(fix: string | undefined): { fix?: string } {
  return fix === undefined ? {} : { fix };
}
