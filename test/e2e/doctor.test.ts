/**
 * E2E: `prewarm doctor` on real kubelets. Two nodes join one pool with `lanes: 2`:
 * doc-serial's kubelet pulls one image at a time (`serializeImagePulls: true`) and registers with
 * the gating taint; doc-parallel's pulls in parallel (`maxParallelImagePulls` 5) and registers
 * without it. The pool names a pull secret that does not exist. Once both nodes are warm, the
 * compiled CLI, run as a user would with the admin kubeconfig, must read both kubelets'
 * configurations through the apiserver's node proxy and tell the nodes apart; then, as a
 * ServiceAccount that may list nodes, pods and DaemonSets but not read nodes/proxy, secrets or
 * admission policies, it must say so for each of those and go on. Last, a second pool whose image
 * is absent from the registry: its rollout must be reported stuck, with the kubelet's reason.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addNode, CA_CRT, kubectl, removeNode } from '../../harness/cluster/cluster.js';
import { imageInRegistry } from '../../harness/cluster/images.js';
import { apiserverUrl, REPO_DIR, STATE_DIR, VERSIONS } from '../../harness/cluster/config.js';
import { PARALLEL_IMAGE_PULLS, type Taint } from '../../harness/cluster/node.js';
import { run, type RunResult } from '../../harness/cluster/sh.js';
import { buildProject, prepareImages, synth, yamlObjects } from '../../harness/manifests.js';
import { waitFor } from '../../harness/time.js';
import { DEFAULT_GATE_TAINT_KEY } from '../../src/contract/names.js';
import type { DoctorReport, Finding } from '../../src/doctor/report.js';
import { nodeLabelKey } from '../../src/contract/identity.js';
import { applyServerSide, imageCache, kubeconfigPath, specDir } from './helpers.js';

const NS = 'e2e-doctor';
const SEL = 'e2e.prewarm.dev/doctor';
const POOL = 'doctor';
const SERIAL = 'doc-serial';
const PARALLEL = 'doc-parallel';
const SECRET = 'doctor-absent-secret';
const GATE: Taint = { key: DEFAULT_GATE_TAINT_KEY, effect: 'NoSchedule' };
const IMAGES = ['docker.io/e2e/doctor-a:1.0', 'docker.io/e2e/doctor-b:1.0', 'docker.io/e2e/doctor-c:1.0'];
const VIEWER = 'doctor-viewer';
const BROKEN = 'doctor-broken';
/** Never pushed: every pull of it fails with ErrImagePull / ImagePullBackOff. */
const ABSENT = 'docker.io/e2e/doctor-absent:1.0';

/** `prewarm doctor ARGS` of the compiled CLI with `kubeconfig`. */
function doctor(kubeconfig: string, args: string[]): RunResult {
  return run(['node', join(REPO_DIR, 'lib/src/cli/bin.js'), 'doctor', ...args], {
    cwd: REPO_DIR,
    env: { ...process.env, KUBECONFIG: kubeconfig },
    allowFail: true,
    timeoutMs: 120_000,
  });
}

function report(r: RunResult): DoctorReport {
  try {
    return JSON.parse(r.stdout) as DoctorReport;
  } catch {
    throw new Error(`doctor printed no JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
}

function one(r: DoctorReport, scope: string, check: string): Finding {
  const found = r.findings.filter((f) => f.scope === scope && f.check === check);
  expect(found.length, `one ${check} finding for ${scope} in ${JSON.stringify(r.findings, null, 2)}`).toBe(1);
  return found[0] as Finding;
}

describe('prewarm doctor on real kubelets', () => {
  beforeAll(async () => {
    kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
    kubectl(['delete', 'clusterrole,clusterrolebinding', VIEWER, '--ignore-not-found']);
    const dir = specDir('doctor', [
      imageCache(NS, 'doctor', [{ pool: POOL, nodeSelector: { [SEL]: 'yes' }, images: IMAGES }], {
        lanes: 2,
        imagePullSecrets: [{ name: SECRET }],
      }),
    ]);
    const { yaml } = synth([dir]);
    prepareImages(yamlObjects(yaml));
    const applied = applyServerSide(yaml);
    expect(applied.warnings, applied.stderr).toEqual([]);
    buildProject();
    await Promise.all([
      addNode(SERIAL, { labels: { [SEL]: 'yes' }, taints: [GATE], serializeImagePulls: true }),
      addNode(PARALLEL, { labels: { [SEL]: 'yes' }, serializeImagePulls: false }),
    ]);
    const label = nodeLabelKey(POOL);
    for (const node of [SERIAL, PARALLEL]) {
      await waitFor(
        `${node} warm for pool ${POOL}`,
        () =>
          kubectl(['get', 'node', node, '-o', `jsonpath={.metadata.labels.${label.replace(/\./g, '\\.')}}`], { allowFail: true }) ===
          'warm',
        300_000,
        500,
      ).catch((e: unknown) => {
        throw new Error(`${(e as Error).message}\n${kubectl(['-n', NS, 'get', 'pods', '-o', 'wide'], { allowFail: true })}`);
      });
    }
    // The rollout is complete once the pullers are gone and every holder is available.
    await waitFor(
      'pool DaemonSets rolled out',
      () => {
        const ds = JSON.parse(kubectl(['-n', NS, 'get', 'daemonsets', '-l', `prewarm.dev/pool-member=${POOL}`, '-o', 'json'])) as {
          items: { status: { desiredNumberScheduled: number; numberAvailable?: number; updatedNumberScheduled?: number } }[];
        };
        return ds.items.every(
          (d) =>
            (d.status.numberAvailable ?? 0) === d.status.desiredNumberScheduled &&
            (d.status.updatedNumberScheduled ?? 0) === d.status.desiredNumberScheduled,
        );
      },
      120_000,
      500,
    );
  });

  afterAll(async () => {
    for (const n of [SERIAL, PARALLEL]) await removeNode(n).catch(() => undefined);
    kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false'], { allowFail: true });
    kubectl(['delete', 'clusterrole,clusterrolebinding', VIEWER, '--ignore-not-found'], { allowFail: true });
  });

  it('as admin: tells the serial kubelet from the parallel one, and exits 3 for the missing pull secret', () => {
    const r = doctor(kubeconfigPath(), ['-o', 'json']);
    const rep = report(r);
    console.log(rep.findings.map((f) => `${f.level.padEnd(8)} ${f.scope} ${f.check}: ${f.message}`).join('\n'));
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain('prewarm: doctor found');

    expect(one(rep, 'cluster', 'apiserver-version')).toMatchObject({ level: 'ok', message: `Kubernetes ${VERSIONS.kubernetes}` });
    const policy = rep.findings.filter((f) => f.check === 'admission-policy');
    expect(policy.map((f) => f.level)).toEqual(['ok', 'ok']);
    expect(one(rep, `pool ${NS}/${POOL}`, 'pull-secret')).toMatchObject({ level: 'error' });
    expect(one(rep, `pool ${NS}/${POOL}`, 'pull-secret').message).toContain(`pull secret ${SECRET} does not exist in namespace ${NS}`);
    expect(rep.errors, 'the missing secret is the only error').toBe(1);

    // Read through /api/v1/nodes/NAME/proxy/configz of each real kubelet.
    const serial = one(rep, `node ${SERIAL}`, 'image-pulls');
    expect(serial.level).toBe('warning');
    expect(serial.message).toBe(
      `serializeImagePulls: true (one pull at a time): pool ${POOL} has 2 lanes, which here overlap container starts with pulls but never pull in parallel`,
    );
    const parallel = one(rep, `node ${PARALLEL}`, 'image-pulls');
    expect(parallel).toMatchObject({
      level: 'ok',
      message: `parallel pulls (maxParallelImagePulls: ${PARALLEL_IMAGE_PULLS}); 2 lanes pull in parallel here`,
    });
    expect(one(rep, `node ${SERIAL}`, 'register-taint').level).toBe('ok');
    expect(one(rep, `node ${PARALLEL}`, 'register-taint')).toMatchObject({ level: 'warning' });
    expect(one(rep, `node ${PARALLEL}`, 'register-taint').message).toContain(`without the gating taint ${GATE.key}`);
    for (const node of [SERIAL, PARALLEL]) {
      expect(one(rep, `node ${node}`, 'reconciler-image').level).toBe('ok');
      expect(one(rep, `node ${node}`, 'pod-slots').message).toMatch(
        /^\d+ of 110 pod slots used; room for the 2 burst pullers of a warm-up$/,
      );
      expect(one(rep, `node ${node}`, 'image-gc').message).toMatch(/^image GC from 85% down to 80% of the image disk/);
    }
    // The gate was lifted on the serial node: no gate-taint finding is left for it.
    expect(rep.findings.filter((f) => f.check === 'gate-taint' && f.scope === `node ${SERIAL}`)).toEqual([]);
    // The holder and its two puller DaemonSets (lanes: 2; no pods once the nodes are warm) are all rolled out.
    expect(
      rep.findings.filter((f) => f.check === 'rollout' && f.scope.startsWith(`daemonset ${NS}/`)).map((f) => `${f.scope} ${f.level}`),
    ).toEqual([
      `daemonset ${NS}/prewarm-${POOL} ok`,
      `daemonset ${NS}/prewarm-${POOL}-puller-1 ok`,
      `daemonset ${NS}/prewarm-${POOL}-puller-2 ok`,
    ]);

    // The table says the same, with the fixes.
    const table = doctor(kubeconfigPath(), []);
    expect(table.code).toBe(3);
    expect(table.stdout).toMatch(new RegExp(`warning\\s+node ${SERIAL}\\s+image-pulls\\s+serializeImagePulls: true`));
    expect(table.stdout).toContain(`To fix:\n`);
    expect(table.stdout).toContain(`node ${SERIAL} image-pulls: set serializeImagePulls: false`);
  });

  it('as a user who may not read nodes/proxy, secrets or admission policies: says so for each, and goes on', () => {
    kubectl(['-n', NS, 'create', 'serviceaccount', VIEWER]);
    kubectl(['create', 'clusterrole', VIEWER, '--verb=get,list', '--resource=nodes,pods,daemonsets.apps']);
    kubectl(['create', 'clusterrolebinding', VIEWER, `--clusterrole=${VIEWER}`, `--serviceaccount=${NS}:${VIEWER}`]);
    const token = kubectl(['-n', NS, 'create', 'token', VIEWER, '--duration=10m']).trim();
    const kubeconfig = join(STATE_DIR, 'doctor-viewer.kubeconfig');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: apiserverUrl(), 'certificate-authority': CA_CRT } }],
        users: [{ name: VIEWER, user: { token } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: VIEWER } }],
        'current-context': 'c',
      }),
    );
    const r = doctor(kubeconfig, ['-o', 'json']);
    const rep = report(r);
    // No error, but checks that could not run are never a pass: exit 3, and stderr says so.
    expect(r.code, `${r.stderr}\n${r.stdout}`).toBe(3);
    expect(r.stderr).toMatch(/^prewarm: doctor could not run \d+ checks; the others found no error\n$/);
    expect(rep.errors).toBe(0);
    expect(rep.unchecked).toBe(rep.findings.filter((f) => f.level === 'unknown').length);
    const configz = one(rep, `node ${SERIAL}`, 'kubelet-config');
    expect(configz.level).toBe('unknown');
    expect(configz.message).toMatch(
      /^not allowed to read the kubelet configuration \(\/configz\) \(HTTP 403: .*nodes\/proxy.*\); skipped$/,
    );
    expect(one(rep, `pool ${NS}/${POOL}`, 'pull-secret')).toMatchObject({ level: 'unknown' });
    expect(one(rep, `pool ${NS}/${POOL}`, 'pull-secret').message).toMatch(
      /^not allowed to read secret e2e-doctor\/doctor-absent-secret \(HTTP 403: /,
    );
    expect(rep.findings.filter((f) => f.check === 'admission-policy').map((f) => f.level)).toEqual(['unknown', 'unknown']);
    // What it may read is still checked.
    expect(one(rep, `node ${PARALLEL}`, 'reconciler-image').level).toBe('ok');
    expect(one(rep, 'cluster', 'apiserver-version').level).toBe('ok');
  });

  it('a pool whose image cannot be pulled: its rollout is stuck, with the pod, node and kubelet reason', async () => {
    const dir = specDir('doctor-broken', [imageCache(NS, BROKEN, [{ pool: BROKEN, nodeSelector: { [SEL]: 'yes' }, images: [ABSENT] }])]);
    const { yaml } = synth([dir]);
    prepareImages(yamlObjects(yaml), [ABSENT]);
    expect(imageInRegistry(ABSENT), `${ABSENT} must be absent from the registry`).toBe(false);
    applyServerSide(yaml);
    await waitFor(
      `a ${BROKEN} pod failing to pull ${ABSENT}`,
      () =>
        /ErrImagePull|ImagePullBackOff/.test(
          kubectl(
            [
              '-n',
              NS,
              'get',
              'pods',
              '-l',
              `prewarm.dev/pool=${BROKEN}`,
              '-o',
              'jsonpath={.items[*].status.containerStatuses[*].state.waiting.reason}',
            ],
            {
              allowFail: true,
            },
          ),
        ),
      180_000,
      1000,
    );
    const r = doctor(kubeconfigPath(), ['-o', 'json']);
    const rep = report(r);
    expect(r.code, r.stderr).toBe(3);
    const stuck = one(rep, `daemonset ${NS}/prewarm-${BROKEN}`, 'rollout');
    console.log(`${stuck.level} ${stuck.scope}: ${stuck.message}`);
    expect(stuck.level).toBe('error');
    expect(stuck.message).toMatch(/^rollout stuck: \d\/2 updated, 0\/2 available; pods that will not become ready by themselves/);
    expect(stuck.message).toMatch(
      new RegExp(`prewarm-${BROKEN}-\\w+ on doc-(serial|parallel) \\([a-z0-9-]+: (ErrImagePull|ImagePullBackOff)\\)`),
    );
    expect(stuck.fix).toContain(`kubectl -n ${NS} describe pod prewarm-${BROKEN}-`);
    // The healthy pool is still rolled out, and its sidecars still run.
    expect(one(rep, `daemonset ${NS}/prewarm-${POOL}`, 'rollout').level).toBe('ok');
    // One finding per holder on the node: both pools' sidecars run.
    expect(rep.findings.filter((f) => f.scope === `node ${SERIAL}` && f.check === 'reconciler-image').map((f) => f.level)).toEqual([
      'ok',
      'ok',
    ]);
  });
});
