/**
 * How the apiserver applies the sidecar's two node patches, for the fakes that stand in for it
 * (test/reconciler/fake-kube.ts, harness/fake-apiserver.ts): a strategic merge of labels and
 * annotations, and a JSON patch of test-guarded taint removals.
 */
import { isDeepStrictEqual } from 'node:util';
import type { KNode } from '../src/reconciler/kube-types.js';
import { type JsonPatchOp } from '../src/reconciler/ports.js';
import { ApiError } from '../src/http/api-error.js';

type Obj = Record<string, unknown>;

function mergeMap(cur: Obj | undefined, patch: Obj): Obj {
  const out: Obj = { ...(cur ?? {}) };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) Reflect.deleteProperty(out, k);
    else out[k] = v;
  }
  return out;
}

/** `node` after a strategic-merge patch of its labels and annotations (null removes a key). */
export function mergeNodeMetadata(node: KNode, body: unknown): KNode {
  const md = (body as { metadata?: { labels?: Obj; annotations?: Obj } }).metadata ?? {};
  const m = node.metadata as Obj;
  return {
    ...node,
    metadata: {
      ...node.metadata,
      ...(md.labels ? { labels: mergeMap(m.labels as Obj, md.labels) as Record<string, string> } : {}),
      ...(md.annotations ? { annotations: mergeMap(m.annotations as Obj, md.annotations) as Record<string, string> } : {}),
    },
  };
}

/**
 * `node` after a JSON patch of `test`/`remove` ops on `/spec/taints/<i>`, applied in order as
 * RFC 6902 says: a `test` that does not equal (as JSON values, key order aside) or a `remove` of an
 * index past the end fails the whole patch with a 422, as on the apiserver.
 */
export function patchNodeTaints(node: KNode, ops: readonly JsonPatchOp[]): KNode {
  let taints = [...(node.spec?.taints ?? [])];
  for (const op of ops) {
    const m = /^\/spec\/taints\/(\d+)$/.exec(op.path);
    if (!m) throw new ApiError(422, `unsupported path ${op.path}`);
    const i = Number(m[1]);
    if (op.op === 'test' && !isDeepStrictEqual(taints[i], op.value))
      throw new ApiError(422, `testing value ${op.path} failed: test failed`, 'Invalid');
    if (op.op === 'remove') {
      if (i >= taints.length) throw new ApiError(422, `remove operation does not apply: doc is missing path: "${op.path}"`, 'Invalid');
      taints = taints.filter((_, j) => j !== i);
    }
  }
  return { ...node, spec: { ...node.spec, taints } };
}
