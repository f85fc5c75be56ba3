/**
 * What Flux's kustomize-controller does with dist/ (and what Argo CD does with the plugin's output):
 * kustomize build, then server-side apply, against a real kube-apiserver with Pod Security
 * admission. Also checks deploy/flux and deploy/argocd against the controllers' real CRDs and
 * install manifests.
 */
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BIN, REPO_DIR } from '../../harness/cluster/config.js';
import type { RunResult } from '../../harness/cluster/sh.js';
import { yamlObjects } from '../../harness/manifests.js';
import { distDocs, distFiles, id, installCrds, kubectlOf, ok, run, warnings } from './helpers.js';

const kubeconfig = inject('kubeconfig');
const kubectl = kubectlOf(kubeconfig);
const crdDir = inject('crdDir');
let work: string;

function ssa(file: string, extra: string[] = []): RunResult {
  return kubectl(['apply', '--server-side', '--field-manager=kustomize-controller', '-f', file, ...extra]);
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'prewarm-flux-'));
  ok(kubectl(['version']));
});
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('dist/ as Flux reads it', () => {
  const files = distFiles();

  it('holds manifests only: every document has apiVersion, kind and a name', () => {
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const ds = yamlObjects(readFileSync(f, 'utf8'));
      expect(ds.length, f).toBeGreaterThan(0);
      for (const d of ds) {
        expect(typeof d['apiVersion'], `${f}: ${JSON.stringify(d).slice(0, 200)}`).toBe('string');
        expect(typeof d['kind'], f).toBe('string');
        expect(typeof (d['metadata'] as { name?: unknown } | undefined)?.name, f).toBe('string');
      }
    }
  });

  it('never contains ${ (Flux postBuild substitution would rewrite it)', () => {
    for (const f of readdirSync(join(REPO_DIR, 'dist'), { recursive: true, withFileTypes: true })) {
      if (!f.isFile()) continue;
      const full = join(f.parentPath, f.name);
      expect(readFileSync(full, 'utf8').includes('${'), full).toBe(false);
    }
  });

  it('builds with kustomize as kustomize-controller generates it for a path without kustomization.yaml', () => {
    const dir = join(work, 'kustomize');
    cpSync(join(REPO_DIR, 'dist'), dir, { recursive: true });
    writeFileSync(
      join(dir, 'kustomization.yaml'),
      `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n${files.map((f) => `  - ${basename(f)}\n`).join('')}`,
    );
    const r = ok(run([BIN.kubectl, 'kustomize', dir]));
    expect(yamlObjects(r.stdout).map(id).sort()).toEqual(distDocs().map(id).sort());
  });

  it("deploy/flux/kustomization.yaml health-checks exactly the pools' DaemonSets of dist/ (holders, not the transient burst pullers)", () => {
    const [k] = yamlObjects(readFileSync(join(REPO_DIR, 'deploy/flux/kustomization.yaml'), 'utf8')) as unknown as [
      { spec: { path: string; prune: boolean; timeout: string; healthChecks: Record<string, string>[] } },
    ];
    expect(k.spec.path).toBe('./dist');
    expect(k.spec.prune).toBe(true);
    expect(k.spec.timeout).toMatch(/^\d+m$/);
    const checks = k.spec.healthChecks.map((h) => `${h['apiVersion']}/${h['kind']}/${h['namespace']}/${h['name']}`).sort();
    const daemonSets = distDocs()
      .filter(
        (d) =>
          d['kind'] === 'DaemonSet' && (d['metadata'] as { labels?: Record<string, string> }).labels?.['prewarm.dev/pool'] !== undefined,
      )
      .map(id)
      .sort();
    expect(daemonSets.length).toBeGreaterThan(0);
    expect(checks).toEqual(daemonSets);
  });
});

describe('server-side apply of dist/ against kube-apiserver', () => {
  it('Pod Security warnings reach kubectl here (control: a privileged DaemonSet in a restricted namespace)', () => {
    ok(ssa(join(REPO_DIR, 'dist/prewarm-cluster.k8s.yaml')));
    const bad = `apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: control, namespace: prewarm}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      containers: [{name: c, image: busybox:1.36.1, securityContext: {privileged: true}}]\n`;
    const r = kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], bad);
    expect(r.code).toBe(0);
    expect(warnings(r).join('\n')).toMatch(/would violate PodSecurity "restricted:latest"/);
  });

  it('applies every file for real with zero warnings, in file order (namespaces first)', () => {
    for (const f of distFiles()) {
      const r = ok(ssa(f));
      expect(warnings(r), f).toEqual([]);
      expect(r.stdout, f).toMatch(/serverside-applied/);
    }
    const ds = JSON.parse(ok(kubectl(['get', 'daemonsets', '-A', '-o', 'json'])).stdout) as {
      items: { metadata: { namespace: string; name: string } }[];
    };
    expect(ds.items.map((d) => `${d.metadata.namespace}/${d.metadata.name}`).sort()).toEqual(
      distDocs()
        .filter((d) => d['kind'] === 'DaemonSet')
        .map((d) => {
          const m = d['metadata'] as { namespace: string; name: string };
          return `${m.namespace}/${m.name}`;
        })
        .sort(),
    );
  });

  it('a second apply (dry-run=server, then for real) is clean: no warnings, no conflicts', () => {
    for (const f of distFiles()) {
      const dry = ok(ssa(f, ['--dry-run=server']));
      expect(warnings(dry), f).toEqual([]);
      const again = ok(ssa(f));
      expect(warnings(again), f).toEqual([]);
    }
  });
});

describe("deploy/ against the controllers' real CRDs", () => {
  beforeAll(() => {
    installCrds(
      kubectl,
      [
        'kustomize.toolkit.fluxcd.io_kustomizations.yaml',
        'source.toolkit.fluxcd.io_gitrepositories.yaml',
        'source.toolkit.fluxcd.io_ocirepositories.yaml',
        'argocd-application-crd.yaml',
      ].map((f) => join(crdDir, f)),
    );
    for (const ns of ['flux-system', 'argocd']) kubectl(['create', 'namespace', ns]);
  });

  it('deploy/flux/*.yaml validate against Flux v1 CRD schemas', () => {
    for (const f of ['gitrepository.yaml', 'ocirepository.yaml', 'kustomization.yaml']) {
      const r = ok(kubectl(['apply', '--server-side', '--dry-run=server', '-f', join(REPO_DIR, 'deploy/flux', f)]));
      expect(warnings(r), f).toEqual([]);
    }
    // The schema is enforced: a typo in a field is refused, so the check above can fail.
    const bad = readFileSync(join(REPO_DIR, 'deploy/flux/kustomization.yaml'), 'utf8').replace('prune: true', 'prune: yes-please');
    expect(kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], bad).code).not.toBe(0);
  });

  it("deploy/argocd/application.yaml validates against Argo CD's Application CRD", () => {
    const r = ok(kubectl(['apply', '--server-side', '--dry-run=server', '-f', join(REPO_DIR, 'deploy/argocd/application.yaml')]));
    expect(warnings(r)).toEqual([]);
  });

  it("deploy/argocd kustomization puts the sidecar into Argo CD's real argocd-repo-server and applies", () => {
    const dir = join(work, 'argocd');
    cpSync(join(REPO_DIR, 'deploy/argocd'), dir, { recursive: true });
    cpSync(join(crdDir, 'install.yaml'), join(dir, 'install.yaml'));
    const k = readFileSync(join(dir, 'kustomization.yaml'), 'utf8');
    const remote = /^\s+- (https:\/\/\S+\/manifests\/install\.yaml)$/m.exec(k);
    expect(remote?.[1]).toContain('/v3.5.7/'); // the same release as the cmp-server under test
    writeFileSync(join(dir, 'kustomization.yaml'), k.replace(remote![1]!, 'install.yaml'));
    const out = yamlObjects(ok(run([BIN.kubectl, 'kustomize', dir])).stdout);
    const cm = out.find((o) => o['kind'] === 'ConfigMap' && (o['metadata'] as { name: string }).name.startsWith('prewarm-cmp-plugin-'));
    expect(cm, 'generated ConfigMap').toBeDefined();
    expect((cm!['data'] as Record<string, string>)['plugin.yaml']).toBe(readFileSync(join(REPO_DIR, 'deploy/argocd/plugin.yaml'), 'utf8'));
    const deploy = out.find((o) => o['kind'] === 'Deployment' && (o['metadata'] as { name: string }).name === 'argocd-repo-server') as {
      spec: {
        template: {
          spec: {
            containers: {
              name: string;
              command?: string[];
              securityContext?: { runAsUser?: number };
              volumeMounts?: { name: string; mountPath: string; subPath?: string }[];
            }[];
            volumes: { name: string; configMap?: { name: string }; emptyDir?: object }[];
          };
        };
      };
    };
    const pod = deploy.spec.template.spec;
    expect(pod.containers.map((c) => c.name).sort()).toEqual(['argocd-repo-server', 'prewarm']);
    expect(
      (deploy as unknown as { spec: { template: { metadata: { annotations: Record<string, string> } } } }).spec.template.metadata
        .annotations['kubectl.kubernetes.io/default-container'],
    ).toBe('argocd-repo-server');
    const side = pod.containers.find((c) => c.name === 'prewarm')!;
    expect(side.command).toEqual(['/var/run/argocd/argocd-cmp-server']);
    expect(side.securityContext?.runAsUser).toBe(999);
    expect(side.volumeMounts?.map((m) => `${m.name}:${m.mountPath}${m.subPath ? `:${m.subPath}` : ''}`)).toEqual([
      'var-files:/var/run/argocd',
      'plugins:/home/argocd/cmp-server/plugins',
      'prewarm-cmp-plugin:/home/argocd/cmp-server/config/plugin.yaml:plugin.yaml',
      'prewarm-cmp-tmp:/tmp',
    ]);
    const vols = new Map(pod.volumes.map((v) => [v.name, v]));
    for (const v of ['var-files', 'plugins']) expect(vols.has(v), `upstream volume ${v}`).toBe(true);
    expect(vols.get('prewarm-cmp-plugin')?.configMap?.name).toBe((cm!['metadata'] as { name: string }).name);
    expect(vols.get('prewarm-cmp-tmp')?.emptyDir).toBeDefined();
    // The whole rendered install applies (CRDs included) to the apiserver.
    const file = join(work, 'argocd-rendered.yaml');
    writeFileSync(file, ok(run([BIN.kubectl, 'kustomize', dir])).stdout);
    ok(kubectl(['apply', '--server-side', '--force-conflicts', '-f', file]));
    const live = JSON.parse(ok(kubectl(['-n', 'argocd', 'get', 'deployment', 'argocd-repo-server', '-o', 'json'])).stdout) as typeof deploy;
    expect(live.spec.template.spec.containers.map((c) => c.name)).toContain('prewarm');
  });
});
