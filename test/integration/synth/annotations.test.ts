/**
 * The node annotation budget (src/synth/annotations.ts) against a real kube-apiserver: the largest
 * annotation the sidecar's writer renders, under the longest key a pool can have, written by the
 * sidecar's own patch once for every pool synthesis admits on one node, is accepted; and the count
 * at which the apiserver itself refuses the node is measured, so that the margin between the two
 * is a figure (docs/architecture.md, "States, label and annotation"), not an estimate.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION_MAX_BYTES, ANNOTATION_VERSION, renderAnnotation } from '../../../src/contract/annotation.js';
import { nodeAnnotationKey, nodeLabelKey } from '../../../src/contract/identity.js';
import type { ReconcilerConfig } from '../../../src/contract/sidecar-env.js';
import { ApiError } from '../../../src/http/api-error.js';
import { KubeHttp } from '../../../src/http/client.js';
import type { KNode } from '../../../src/reconciler/kube-types.js';
import { metadataPatch } from '../../../src/reconciler/patches.js';
import { synthYaml } from '../../../src/synth/app.js';
import { NODE_ANNOTATIONS_LIMIT_BYTES, PREWARM_ANNOTATIONS_BUDGET_BYTES } from '../../../src/synth/annotations.js';
import { adminEndpoint, makeNode } from '../reconciler/cluster.js';
import { bundleOfFiles } from '../../helpers.js';
import { poolsOnOneNode } from '../../synth/spec-fixtures.js';

const NODE = 'int-annotations';
/** The longest pool name a spec may give (a DNS label of at most 40 characters), the i-th of them. */
const longPoolId = (i: number): string => `pool-${String(i).padStart(3, '0')}-`.padEnd(40, 'x');
/** How many annotations the probe of the apiserver's own limit writes at most. */
const PROBE_MAX = 100;

let admin: KubeHttp;

/**
 * The largest annotation the writer renders: a partial pool whose failing images overflow the cap,
 * so renderAnnotation itself cuts them, over image and message lengths the sidecar passes it
 * (kubelet messages are cut to 200 characters before). The longest result wins.
 */
function largestAnnotation(): string {
  let best = '';
  for (let imageLen = 30; imageLen <= 120; imageLen += 7)
    for (let messageLen = 100; messageLen <= 200; messageLen++) {
      const failing = Array.from({ length: 12 }, (_, i) => ({
        image: `registry.example.com/team/${'i'.repeat(imageLen)}-${i}:v1`,
        reason: 'ErrImagePull',
        message: 'm'.repeat(messageLen),
      }));
      const text = renderAnnotation({
        v: ANNOTATION_VERSION,
        pod: `prewarm-${longPoolId(0)}-abcde`,
        state: 'partial',
        images: 600,
        present: 588,
        failing,
      });
      if (Buffer.byteLength(text) > Buffer.byteLength(best)) best = text;
    }
  return best;
}

/** The sidecar's own strategic-merge patch of its pool's label and annotation. */
function sidecarPatch(id: string, annotation: string): object {
  // metadataPatch reads only the two keys of the sidecar's configuration.
  const config = { nodeLabelKey: nodeLabelKey(id), nodeAnnotationKey: nodeAnnotationKey(id) } as ReconcilerConfig;
  return metadataPatch(config, { label: 'partial', annotation }) as object;
}

const write = (id: string, annotation: string): Promise<KNode> =>
  admin.json<KNode>('PATCH', `/api/v1/nodes/${NODE}`, sidecarPatch(id, annotation), 'application/strategic-merge-patch+json');

/** Bytes the apiserver counts for a node's annotations: every key and value, as UTF-8. */
const annotationBytes = (n: KNode): number =>
  Object.entries(n.metadata.annotations ?? {}).reduce((s, [k, v]) => s + Buffer.byteLength(k) + Buffer.byteLength(v), 0);

/** Whether synthesis admits `n` pools on one node (memory per node raised: not what is measured). */
function synthAdmits(n: number): boolean {
  try {
    synthYaml(bundleOfFiles(poolsOnOneNode(n)), {
      reconciler: { image: 'ghcr.io/prewarm-dev/reconciler:0.1.0' },
      maxNodeMemoryBytes: 8 * 2 ** 30,
    });
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  admin = new KubeHttp(adminEndpoint());
  await makeNode(admin, NODE, []);
});

afterAll(() => admin?.close());

describe('the node annotation budget on a real apiserver', () => {
  it("accepts the largest annotation of every pool synthesis admits on one node, and refuses the node well past synthesis's bound", async () => {
    const annotation = largestAnnotation();
    const valueBytes = Buffer.byteLength(annotation);
    const keyBytes = Buffer.byteLength(nodeAnnotationKey(longPoolId(0)));
    expect(valueBytes).toBeLessThanOrEqual(ANNOTATION_MAX_BYTES);
    expect(valueBytes, 'the writer fills its cap to within one failing entry').toBeGreaterThan(ANNOTATION_MAX_BYTES - 400);

    // The most pools synthesis admits on one node: it admits that many and refuses one more.
    const admitted = PREWARM_ANNOTATIONS_BUDGET_BYTES / ANNOTATION_MAX_BYTES;
    expect(synthAdmits(admitted)).toBe(true);
    expect(synthAdmits(admitted + 1)).toBe(false);

    const before = annotationBytes(await admin.json<KNode>('GET', `/api/v1/nodes/${NODE}`));
    let node: KNode | undefined;
    for (let i = 0; i < admitted; i++) node = await write(longPoolId(i), annotation);
    const atAdmitted = annotationBytes(node as KNode);
    expect(atAdmitted - before).toBe(admitted * (keyBytes + valueBytes));

    // Past synthesis's bound: more annotations until the apiserver refuses the node (bounded).
    let refusedAt: number | undefined;
    let refusal: ApiError | undefined;
    for (let i = admitted; i < PROBE_MAX && refusedAt === undefined; i++) {
      try {
        node = await write(longPoolId(i), annotation);
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        refusedAt = i + 1;
        refusal = e;
      }
    }
    expect(refusedAt, `the apiserver refused within ${PROBE_MAX} pools`).toBeDefined();
    expect(refusal?.code).toBe(422);
    expect(refusal?.message).toContain(`metadata.annotations: Too long: may not be more than ${NODE_ANNOTATIONS_LIMIT_BYTES} bytes`);
    const accepted = (refusedAt as number) - 1;
    const atAccepted = annotationBytes(node as KNode);
    // The refusal is the apiserver's total: one more annotation is exactly what crosses it.
    expect(atAccepted).toBeLessThanOrEqual(NODE_ANNOTATIONS_LIMIT_BYTES);
    expect(atAccepted + keyBytes + valueBytes).toBeGreaterThan(NODE_ANNOTATIONS_LIMIT_BYTES);
    // Synthesis refuses long before the apiserver would: half the node's annotations stay free for others.
    expect(accepted).toBeGreaterThan(admitted);
    console.log(
      `annotation budget: largest annotation ${valueBytes} B under a ${keyBytes} B key; ` +
        `${admitted} pools (synth's most) = ${atAdmitted - before} B accepted, ${NODE_ANNOTATIONS_LIMIT_BYTES - atAdmitted} B left; ` +
        `the apiserver accepted ${accepted} pools (${atAccepted} B) and refused pool ${refusedAt} (${refusal?.message.slice(0, 160)})`,
    );
  });
});
