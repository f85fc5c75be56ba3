/**
 * The early-pull admission policy on a real kube-apiserver (ValidatingAdmissionPolicy and Pod
 * Security admission on): synth's own output for an owned namespace holding an early-pull pool is
 * applied (the Namespace with enforce privileged, the policy and its binding, the ServiceAccounts),
 * then pods are created with dry-run. The pullers and the holder, taken from the synthesized
 * DaemonSets' templates, are admitted; host-network pods of any other shape (another helper
 * image, a command, hook or probe of their own, a sleep not from prewarm's mount), and pods that
 * restricted refuses, are refused by the policy with its message. A ConfigMap named like the
 * sleeper's but holding anything else is refused too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { KubeHttp } from '../../../src/http/client.js';
import { ApiError } from '../../../src/http/api-error.js';
import { ACCESS_NAMES, FAILSAFE_NAME } from '../../../src/contract/access-names.js';
import { isHolder, isPuller } from '../../../src/contract/roles.js';
import { buildBundle } from '../../../src/imagecache/bundle.js';
import { parseFiles } from '../../../src/imagecache/parse.js';
import { synthYaml } from '../../../src/synth/app.js';
import { DEFAULT_HELPER_IMAGE } from '../../../src/synth/pull-daemonset.js';
import { waitFor } from '../../../harness/time.js';
import { adminEndpoint, apply } from '../reconciler/cluster.js';

const NS = 'prewarm-int-early';

const SPEC = `apiVersion: prewarm.dev/v1alpha1
kind: ImageCache
metadata: {name: early, namespace: ${NS}}
spec:
  cacheSpec:
  - pool: int-early
    images: [reg.invalid/a:1, reg.invalid/b:1, reg.invalid/c:1]
    nodeSelector: {tier: gpu, zone: a}
  lanes: 2
  earlyPull: true
`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Manifest = any;

let admin: KubeHttp;
let output: Manifest[];
/** The same spec synthesized with `nodeArch`: its pods run the sleeper from a ConfigMap. */
let sleeperOutput: Manifest[];

/** A pod of the template of the synthesized DaemonSet `pick` finds. */
function podOf(pick: (ds: Manifest) => boolean, name: string): Manifest {
  const ds = output.find((d) => d.kind === 'DaemonSet' && pick(d));
  if (ds === undefined) throw new Error('no such DaemonSet in the output');
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS, labels: structuredClone(ds.spec.template.metadata.labels) },
    spec: structuredClone(ds.spec.template.spec),
  };
}
const puller = (name: string): Manifest => podOf((d) => isPuller(d.spec.template.metadata.labels), name);

/** Creates `pod` with dry-run: what admission says, and nothing stored. */
async function create(pod: Manifest): Promise<{ code: number; message: string }> {
  try {
    await admin.json('POST', `/api/v1/namespaces/${NS}/pods?dryRun=All`, pod);
    return { code: 201, message: '' };
  } catch (e) {
    if (e instanceof ApiError && e.code !== 0) return { code: e.code, message: e.message };
    throw e;
  }
}

beforeAll(async () => {
  admin = new KubeHttp(adminEndpoint());
  const bundle = buildBundle(parseFiles([{ path: 'early.yaml', text: SPEC }]).caches).bundle;
  output = parseAllDocuments(synthYaml(bundle, { reconciler: { image: 'reg.invalid/prewarm:test' }, ownedNamespaces: [NS] })).map((d) =>
    d.toJS(),
  );
  sleeperOutput = parseAllDocuments(
    synthYaml(bundle, { reconciler: { image: 'reg.invalid/prewarm:test' }, ownedNamespaces: [NS], nodeArch: 'amd64' }),
  ).map((d) => d.toJS());
  const applied = output.filter(
    (o) =>
      (o.kind === 'Namespace' && o.metadata.name === NS) ||
      o.metadata.name === ACCESS_NAMES.earlyPullPolicy ||
      o.metadata.name === ACCESS_NAMES.sleeperPolicy ||
      (o.kind === 'ServiceAccount' && o.metadata.namespace === NS && o.metadata.name !== FAILSAFE_NAME),
  );
  expect(applied.map((o) => o.kind).sort()).toEqual([
    'Namespace',
    'ServiceAccount',
    'ValidatingAdmissionPolicy',
    'ValidatingAdmissionPolicy',
    'ValidatingAdmissionPolicyBinding',
    'ValidatingAdmissionPolicyBinding',
  ]);
  for (const o of applied) await apply(admin, o);
  // No controller manager runs here to create a namespace's default ServiceAccount, which the
  // ServiceAccount admission plugin looks up for the pullers (they name none).
  await apply(admin, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: NS } });
  // The policy and its binding reach the admission plugin asynchronously: wait until a pod that
  // only the policy refuses is refused.
  await waitFor(
    'the early-pull policy to be enforced',
    async () => {
      const pod = puller('probe');
      delete pod.metadata.labels['prewarm.dev/puller'];
      return (await create(pod)).code === 403;
    },
    30_000,
    200,
  );
});

afterAll(() => admin?.close());

describe('early-pull admission on a real apiserver', () => {
  it('the namespace enforces privileged, so the policy alone decides', async () => {
    const ns = await admin.json<Manifest>('GET', `/api/v1/namespaces/${NS}`);
    expect(ns.metadata.labels).toMatchObject({
      'pod-security.kubernetes.io/enforce': 'privileged',
      'pod-security.kubernetes.io/warn': 'restricted',
      'pod-security.kubernetes.io/audit': 'restricted',
    });
  });

  it('admits the synthesized early pullers and holder', async () => {
    const pullers = output.filter((d) => d.kind === 'DaemonSet' && isPuller(d.spec.template.metadata.labels));
    // Two lanes of the pool's images and lane 0, the sidecar's image.
    expect(pullers).toHaveLength(3);
    for (const [i, ds] of pullers.entries()) {
      expect(ds.spec.template.spec.hostNetwork).toBe(true);
      expect(await create(podOf((d) => d === ds, `puller-${i}`))).toEqual({ code: 201, message: '' });
    }
    const holder = podOf((d) => isHolder(d.spec.template.metadata.labels), 'holder');
    expect(holder.spec.hostNetwork).toBe(false);
    expect(await create(holder)).toEqual({ code: 201, message: '' });
  });

  it('admits the early pullers that run the sleeper from its ConfigMap, and no other ConfigMap on the host network', async () => {
    const pullers = sleeperOutput.filter((d) => d.kind === 'DaemonSet' && isPuller(d.spec.template.metadata.labels));
    expect(pullers).toHaveLength(3);
    for (const [i, ds] of pullers.entries()) {
      const pod = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `sleeper-puller-${i}`, namespace: NS, labels: ds.spec.template.metadata.labels },
        spec: ds.spec.template.spec,
      };
      expect(pod.spec.volumes.map((v: Manifest) => Object.keys(v).sort())).toEqual([['configMap', 'name']]);
      expect(await create(pod)).toEqual({ code: 201, message: '' });
      const other = structuredClone(pod);
      other.metadata.name = `other-configmap-${i}`;
      other.spec.volumes[0].configMap.name = 'kube-root-ca.crt';
      const r = await create(other);
      expect(r.code).toBe(403);
      expect(r.message).toContain("which have only emptyDir volumes and prewarm's sleeper ConfigMap (no hostPath)");
    }
  });

  const POLICY = `ValidatingAdmissionPolicy '${ACCESS_NAMES.earlyPullPolicy}'`;
  it.each([
    [
      'without the puller label',
      (p: Manifest) => delete p.metadata.labels['prewarm.dev/puller'],
      'the host network is allowed here only for prewarm early pullers, labelled prewarm.dev/puller',
    ],
    [
      'with a port',
      (p: Manifest) => (p.spec.containers[0].ports = [{ containerPort: 8080 }]),
      "which have no ports: on the host network a port is the node's",
    ],
    [
      'running as root',
      (p: Manifest) => {
        p.spec.securityContext = { ...p.spec.securityContext, runAsUser: 0, runAsNonRoot: false };
        for (const c of [...p.spec.containers, ...p.spec.initContainers]) {
          c.securityContext.runAsUser = 0;
          c.securityContext.runAsNonRoot = false;
        }
      },
      'which run as uid 65532 with runAsNonRoot: true',
    ],
    [
      'with a hostPath volume',
      (p: Manifest) => {
        p.spec.volumes.push({ name: 'host', hostPath: { path: '/var/lib/kubelet' } });
        p.spec.containers[0].volumeMounts.push({ name: 'host', mountPath: '/host', readOnly: true });
      },
      "which have only emptyDir volumes and prewarm's sleeper ConfigMap (no hostPath)",
    ],
    [
      'with a service-account token',
      (p: Manifest) => (p.spec.automountServiceAccountToken = true),
      'which mount no service-account token (automountServiceAccountToken: false)',
    ],
    [
      'with a writable root filesystem',
      (p: Manifest) => (p.spec.containers[0].securityContext.readOnlyRootFilesystem = false),
      'which have a read-only root filesystem',
    ],
    [
      'adding a capability',
      (p: Manifest) => (p.spec.containers[0].securityContext.capabilities.add = ['NET_BIND_SERVICE']),
      'which add no capabilities',
    ],
    [
      'whose helper image is not the invocation’s',
      (p: Manifest) => (p.spec.initContainers[0].image = 'ghcr.io/attacker/busybox:1'),
      `whose containers run only prewarm's sleep (from /prewarm) or copy it from the helper image ${DEFAULT_HELPER_IMAGE}`,
    ],
    [
      'whose image container runs its own command',
      (p: Manifest) => (p.spec.containers[0].command = ['/bin/sh', '-c', 'wget -qO- http://169.254.169.254/']),
      "whose containers run only prewarm's sleep",
    ],
    [
      'whose image container adds arguments to the sleep',
      (p: Manifest) => (p.spec.containers[0].args = ['60']),
      "whose containers run only prewarm's sleep",
    ],
    [
      'whose image container runs the sleep from its own image (no mount at /prewarm)',
      (p: Manifest) => (p.spec.containers[0].volumeMounts = []),
      "whose containers run only prewarm's sleep",
    ],
    [
      'with an exec hook',
      (p: Manifest) => (p.spec.containers[0].lifecycle = { postStart: { exec: { command: ['/bin/sh', '-c', 'id'] } } }),
      'with no arguments, hooks or probes',
    ],
    [
      'with an exec probe',
      (p: Manifest) => (p.spec.containers[0].livenessProbe = { exec: { command: ['/bin/sh', '-c', 'id'] } }),
      'with no arguments, hooks or probes',
    ],
    ['in the host PID namespace', (p: Manifest) => (p.spec.hostPID = true), "pods here may not use the node's PID or IPC namespace"],
    [
      'privileged',
      (p: Manifest) => {
        p.spec.containers[0].securityContext.privileged = true;
        p.spec.containers[0].securityContext.allowPrivilegeEscalation = true;
      },
      'privileged containers are not allowed here',
    ],
  ])('refuses a host-network pod %s, with its message', async (_, change, message) => {
    const pod = puller('other-shape');
    change(pod);
    expect(pod.spec.hostNetwork).toBe(true);
    const r = await create(pod);
    expect(r.code).toBe(403);
    expect(r.message).toContain(POLICY);
    expect(r.message).toContain(message);
  });

  it.each([
    [
      'running as root',
      (p: Manifest) => {
        for (const c of [...p.spec.containers, ...p.spec.initContainers]) c.securityContext.runAsUser = 0;
      },
      'every container here must run as non-root',
    ],
    ['with a hostPath volume', (p: Manifest) => p.spec.volumes.push({ name: 'host', hostPath: { path: '/' } }), 'no hostPath'],
    [
      'with a host port',
      (p: Manifest) => (p.spec.containers[0].ports = [{ containerPort: 8080, hostPort: 8080 }]),
      'host ports are not allowed here',
    ],
    [
      'with seccomp Unconfined',
      (p: Manifest) => (p.spec.securityContext.seccompProfile = { type: 'Unconfined' }),
      'every container here must use seccomp RuntimeDefault or Localhost',
    ],
  ])('holds pods off the host network to restricted: refuses one %s', async (_, change, message) => {
    const pod = podOf((d) => isHolder(d.spec.template.metadata.labels), 'restricted-shape');
    change(pod);
    const r = await create(pod);
    expect(r.code).toBe(403);
    expect(r.message).toContain(POLICY);
    expect(r.message).toContain(message);
  });

  it('admits the sleeper ConfigMap synth renders and refuses any other under its name prefix', async () => {
    const sleeper = sleeperOutput.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('prewarm-sleeper-'));
    expect(sleeper).toBeDefined();
    const createMap = async (map: Manifest): Promise<{ code: number; message: string }> => {
      try {
        await admin.json('POST', `/api/v1/namespaces/${NS}/configmaps?dryRun=All`, map);
        return { code: 201, message: '' };
      } catch (e) {
        if (e instanceof ApiError && e.code !== 0) return { code: e.code, message: e.message };
        throw e;
      }
    };
    expect(await createMap(sleeper)).toEqual({ code: 201, message: '' });
    const forged = structuredClone(sleeper);
    forged.binaryData.amd64 = Buffer.from('#!/bin/sh\nid\n').toString('base64');
    const r = await createMap(forged);
    expect(r.code).toBe(403);
    expect(r.message).toContain(`ValidatingAdmissionPolicy '${ACCESS_NAMES.sleeperPolicy}'`);
    const renamed = { ...structuredClone(sleeper), metadata: { name: 'prewarm-sleeper-other', namespace: NS } };
    expect((await createMap(renamed)).code).toBe(403);
  });

  it('admits a restricted pod off the host network that is not prewarm’s, as restricted would', async () => {
    const pod = puller('plain');
    delete pod.metadata.labels['prewarm.dev/puller'];
    pod.spec.hostNetwork = false;
    pod.spec.dnsPolicy = 'ClusterFirst';
    pod.spec.containers[0].ports = [{ containerPort: 8080 }];
    pod.spec.containers[0].securityContext.readOnlyRootFilesystem = false;
    expect(await create(pod)).toEqual({ code: 201, message: '' });
  });
});
