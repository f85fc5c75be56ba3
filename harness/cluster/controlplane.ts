/**
 * Control plane: etcd 3.6, kube-apiserver, kube-controller-manager, kube-scheduler.
 * For the cluster they run in the hub netns; for integration tests (etcd + apiserver only) they
 * run on loopback of the root netns.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { BIN, NET } from './config.js';
import { CA_CRT, ensureCert, ensureServiceAccountKeys, type CertFiles, writeKubeconfig } from './pki.js';
import { Kube } from '../kube.js';
import { startDaemon, stopDaemon, tailLog } from './sh.js';
import { waitFor } from '../time.js';

export interface ControlPlaneOptions {
  /** Daemon name prefix ("cp" for the cluster, "int" for integration). */
  prefix: string;
  dataDir: string;
  netns?: string;
  etcdClientPort: number;
  etcdPeerPort: number;
  apiserverBind: string;
  apiserverPort: number;
  advertiseAddress: string;
  /** Endpoint reconciler: "lease" keeps the kubernetes Service endpoint; "none" for loopback-only. */
  endpointReconciler: 'lease' | 'none';
  extraApiserverArgs?: string[];
  /**
   * Write an audit log here (JSON lines, Metadata level, every request once at ResponseComplete;
   * watches also at ResponseStarted). Off by default: it costs a file write per request.
   */
  auditLogPath?: string;
  /** Appended to kube-controller-manager's flags, e.g. `--feature-gates=...` for an experiment. */
  extraControllerManagerArgs?: string[];
  /**
   * kube-controller-manager `--controllers`; every controller by default. A flag, not an extra
   * argument: the flag is a string slice, and a second `--controllers` appends to the first.
   */
  controllers?: readonly string[];
  /** Appended to kube-scheduler's flags. */
  extraSchedulerArgs?: string[];
}

/**
 * Metadata level for every request; RequestReceived omitted so a request is one line (a watch is
 * two: ResponseStarted when it opens, ResponseComplete when it closes).
 */
const AUDIT_POLICY = JSON.stringify({ apiVersion: 'audit.k8s.io/v1', kind: 'Policy', omitStages: ['RequestReceived'], omitManagedFields: true, rules: [{ level: 'Metadata' }] });

function auditArgs(logPath: string): string[] {
  const policy = join(dirname(logPath), 'audit-policy.json');
  mkdirSync(dirname(logPath), { recursive: true });
  writeFileSync(policy, AUDIT_POLICY);
  // Blocking mode (the default): a full buffer in batch mode drops events, and the counts must be exact.
  return [`--audit-policy-file=${policy}`, `--audit-log-path=${logPath}`, '--audit-log-format=json', '--audit-log-mode=blocking', '--audit-log-maxsize=0'];
}

export function clusterControlPlane(dataDir: string): ControlPlaneOptions {
  return {
    prefix: 'cp',
    dataDir,
    netns: NET.hubNs,
    etcdClientPort: 2379,
    etcdPeerPort: 2380,
    apiserverBind: NET.hubIp,
    apiserverPort: NET.apiserverPort,
    advertiseAddress: NET.hubIp,
    endpointReconciler: 'lease',
  };
}

export async function startEtcd(o: ControlPlaneOptions): Promise<void> {
  const dir = join(o.dataDir, 'etcd');
  mkdirSync(dir, { recursive: true });
  const client = `http://127.0.0.1:${o.etcdClientPort}`;
  const peer = `http://127.0.0.1:${o.etcdPeerPort}`;
  const argv = [
    BIN.etcd,
    `--name=${o.prefix}-etcd`,
    `--data-dir=${dir}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=${o.prefix}-etcd=${peer}`,
    '--listen-metrics-urls=',
    '--quota-backend-bytes=4294967296',
    '--snapshot-count=10000',
    '--log-level=warn',
    // Test data: durability is not needed, speed is.
    '--unsafe-no-fsync',
  ];
  startDaemon({ name: `${o.prefix}-etcd`, argv, ...(o.netns ? { netns: o.netns } : {}) });
}

export function apiserverCert(o: ControlPlaneOptions): CertFiles {
  return ensureCert({
    name: `${o.prefix}-apiserver`,
    cn: 'kube-apiserver',
    dns: ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local', 'localhost'],
    ips: [...new Set([o.apiserverBind, o.advertiseAddress, '127.0.0.1', NET.kubernetesServiceIp])],
    usage: 'server',
  });
}

export async function startApiserver(o: ControlPlaneOptions): Promise<void> {
  const tls = apiserverCert(o);
  const kc = ensureCert({ name: 'apiserver-kubelet-client', cn: 'kube-apiserver-kubelet-client', orgs: ['system:masters'], usage: 'client' });
  const sa = ensureServiceAccountKeys();
  const argv = [
    BIN.kubeApiserver,
    `--etcd-servers=http://127.0.0.1:${o.etcdClientPort}`,
    `--bind-address=${o.apiserverBind}`,
    `--secure-port=${o.apiserverPort}`,
    `--advertise-address=${o.advertiseAddress}`,
    `--endpoint-reconciler-type=${o.endpointReconciler}`,
    `--tls-cert-file=${tls.crt}`,
    `--tls-private-key-file=${tls.key}`,
    `--client-ca-file=${CA_CRT}`,
    `--kubelet-client-certificate=${kc.crt}`,
    `--kubelet-client-key=${kc.key}`,
    '--kubelet-preferred-address-types=InternalIP',
    '--authorization-mode=Node,RBAC',
    '--enable-admission-plugins=NodeRestriction,PodSecurity,ServiceAccount,ValidatingAdmissionPolicy',
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${sa.pub}`,
    `--service-account-signing-key-file=${sa.key}`,
    `--service-cluster-ip-range=${NET.serviceCidr}`,
    '--allow-privileged=true',
    '--profiling=false',
    '--watch-cache=true',
    '--event-ttl=30m',
    '--v=1',
    ...(o.auditLogPath ? auditArgs(o.auditLogPath) : []),
    ...(o.extraApiserverArgs ?? []),
  ];
  startDaemon({ name: `${o.prefix}-apiserver`, argv, ...(o.netns ? { netns: o.netns } : {}) });
}

/** Waits until /readyz answers ok through the given URL with the admin cert. */
export async function waitApiserverReady(o: ControlPlaneOptions, url: string, timeoutMs = 90_000): Promise<void> {
  const kube = new Kube({ server: url });
  try {
    await waitFor('kube-apiserver /readyz', async () => (await kube.raw('GET', '/readyz', undefined, undefined, 5_000)).status === 200, timeoutMs, 500);
  } catch (e) {
    throw new Error(`${(e as Error).message}\n--- apiserver log:\n${tailLog(`${o.prefix}-apiserver`)}\n--- etcd log:\n${tailLog(`${o.prefix}-etcd`)}`);
  } finally {
    kube.close();
  }
}

export function startControllerManager(o: ControlPlaneOptions): void {
  const cert = ensureCert({ name: 'controller-manager', cn: 'system:kube-controller-manager', usage: 'client' });
  const kubeconfig = join(o.dataDir, 'controller-manager.kubeconfig');
  writeKubeconfig(kubeconfig, `https://${o.apiserverBind}:${o.apiserverPort}`, cert, 'system:kube-controller-manager');
  const sa = ensureServiceAccountKeys();
  const argv = [
    BIN.kubeControllerManager,
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    `--service-account-private-key-file=${sa.key}`,
    `--root-ca-file=${CA_CRT}`,
    '--use-service-account-credentials=true',
    '--leader-elect=false',
    '--bind-address=127.0.0.1',
    '--secure-port=10257',
    `--cluster-cidr=${NET.clusterCidr}`,
    `--service-cluster-ip-range=${NET.serviceCidr}`,
    '--allocate-node-cidrs=false',
    `--controllers=${(o.controllers ?? ['*']).join(',')}`,
    '--concurrent-daemonset-syncs=4',
    '--node-monitor-grace-period=40s',
    '--v=1',
    ...(o.extraControllerManagerArgs ?? []),
  ];
  startDaemon({ name: `${o.prefix}-controller-manager`, argv, ...(o.netns ? { netns: o.netns } : {}) });
}

export function startScheduler(o: ControlPlaneOptions): void {
  const cert = ensureCert({ name: 'scheduler', cn: 'system:kube-scheduler', usage: 'client' });
  const kubeconfig = join(o.dataDir, 'scheduler.kubeconfig');
  writeKubeconfig(kubeconfig, `https://${o.apiserverBind}:${o.apiserverPort}`, cert, 'system:kube-scheduler');
  const argv = [
    BIN.kubeScheduler,
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    '--leader-elect=false',
    '--bind-address=127.0.0.1',
    '--secure-port=10259',
    '--v=1',
    ...(o.extraSchedulerArgs ?? []),
  ];
  startDaemon({ name: `${o.prefix}-scheduler`, argv, ...(o.netns ? { netns: o.netns } : {}) });
}

export async function stopControlPlane(prefix: string): Promise<void> {
  await stopDaemon(`${prefix}-scheduler`);
  await stopDaemon(`${prefix}-controller-manager`);
  await stopDaemon(`${prefix}-apiserver`, 15_000);
  await stopDaemon(`${prefix}-etcd`);
}
