import { describe, expect, it } from 'vitest';
import { checkDns1123Label, checkQualifiedName } from '../../src/imagecache/k8s-validation.js';
import { parseImageRef, type ImageRef } from '../../src/oci/reference.js';
import { nodeLabelKey, poolId } from '../../src/contract/identity.js';
import { daemonSetName, dnsLabel, imageContainerName } from '../../src/synth/naming.js';

function ref(text: string): ImageRef {
  const r = parseImageRef(text);
  if (!r.ok) throw new Error(r.error);
  return r.ref;
}

describe('naming', () => {
  it('keeps short valid names as they are', () => {
    expect(dnsLabel('prewarm-gpu')).toBe('prewarm-gpu');
  });

  it('cuts long names to 63 characters with a hash of the whole', () => {
    const a = dnsLabel(`prewarm-${'x'.repeat(80)}-a`);
    const b = dnsLabel(`prewarm-${'x'.repeat(80)}-b`);
    expect(a).toHaveLength(63);
    expect(a).not.toBe(b);
    expect(checkDns1123Label(a)).toBeUndefined();
  });

  it('derives pool ids from selector values plus a hash of the full identity', () => {
    const id = poolId({ key: '["ml",[["pool","gpu"]],[]]', nodeSelector: { pool: 'gpu' } });
    expect(id).toMatch(/^gpu-[0-9a-f]{8}$/);
    expect(poolId({ key: 'other', nodeSelector: { pool: 'gpu' } })).not.toBe(id);
    expect(poolId({ key: 'k', nodeSelector: {} })).toMatch(/^all-[0-9a-f]{8}$/);
    expect(poolId({ name: 'gpu-a10g', key: 'k', nodeSelector: { a: 'b' } })).toBe('gpu-a10g');
  });

  it('keeps every derived name valid however long the selector', () => {
    const id = poolId({ key: 'k', nodeSelector: { a: 'v'.repeat(63), b: 'w'.repeat(63) } });
    expect(id.length).toBeLessThanOrEqual(40);
    expect(checkDns1123Label(daemonSetName(id))).toBeUndefined();
    expect(checkQualifiedName(nodeLabelKey(id))).toBeUndefined();
  });

  it('names image containers readably, uniquely and stably', () => {
    const a = imageContainerName(ref('nvcr.io/nvidia/pytorch:24.05-py3'));
    expect(a).toMatch(/^pytorch-24-05-py3-[0-9a-f]{8}$/);
    expect(imageContainerName(ref('docker.io/other/pytorch:24.05-py3'))).not.toBe(a);
    expect(imageContainerName(ref('nvcr.io/nvidia/pytorch:24.05-py3'))).toBe(a);
    const long = imageContainerName(ref(`ghcr.io/a/${'b'.repeat(120)}:${'t'.repeat(100)}`));
    expect(checkDns1123Label(long)).toBeUndefined();
    expect(imageContainerName(ref(`redis@sha256:${'a'.repeat(64)}`))).toMatch(/^redis-digest-[0-9a-f]{8}$/);
  });
});

describe('the access names in the contract', () => {
  it('follow the naming prefix of every other object synth emits', async () => {
    const { SERVICE_ACCOUNT, ACCESS_NAMES } = await import('../../src/contract/access-names.js');
    const { NAME_PREFIX } = await import('../../src/synth/naming.js');
    expect(SERVICE_ACCOUNT).toBe(`${NAME_PREFIX}-reconciler`);
    expect(ACCESS_NAMES.roleBinding).toBe(SERVICE_ACCOUNT);
  });
});
