/** Shared helpers of the gitops tests. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, REPO_DIR } from '../../harness/cluster/config.js';
import { run as runCommand, type RunOptions, type RunResult } from '../../harness/cluster/sh.js';
import type { KubeObject } from '../../harness/kube.js';
import { yamlObjects } from '../../harness/manifests.js';

/** The compiled CLI that ships (the gitops setup builds it). */
export const CLI = join(REPO_DIR, 'lib/src/cli/bin.js');

/** Runs a command to completion, from the repository root unless `cwd` says otherwise; a non-zero exit is the caller's to judge. */
export function run(argv: string[], opts: Omit<RunOptions, 'allowFail'> = {}): RunResult {
  return runCommand(argv, { cwd: REPO_DIR, timeoutMs: 120_000, ...opts, allowFail: true });
}

/** "apiVersion/kind/namespace/name" of a manifest. */
export function id(o: KubeObject): string {
  return `${String(o.apiVersion)}/${String(o.kind)}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

/** The YAML files directly in dist/ (what Flux applies), sorted. */
export function distFiles(): string[] {
  return readdirSync(join(REPO_DIR, 'dist'))
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()
    .map((f) => join(REPO_DIR, 'dist', f));
}

/** Every object of dist/'s YAML files. */
export function distDocs(): KubeObject[] {
  return distFiles().flatMap((f) => yamlObjects(readFileSync(f, 'utf8')));
}

/** kubectl against the cluster of `kubeconfig`, with `input` on stdin; a non-zero exit is the caller's to judge. */
export function kubectlOf(kubeconfig: string): (args: string[], input?: string) => RunResult {
  return (args, input) => run([BIN.kubectl, '--kubeconfig', kubeconfig, ...args], input === undefined ? {} : { input });
}

/** The result of a kubectl run that must succeed. */
export function ok(r: RunResult): RunResult {
  if (r.code !== 0) throw new Error(`kubectl exited ${r.code}: ${r.stderr}`);
  return r;
}

/** Lines of stderr that are apiserver warnings (kubectl prints them as "Warning: ..."). */
export function warnings(r: RunResult): string[] {
  return r.stderr.split('\n').filter((l) => /warning/i.test(l));
}

/**
 * Applies the CRDs of `files` server-side and waits until each is Established. It polls instead
 * of `kubectl wait --for=condition=Established`, which fails outright ("status.conditions accessor
 * error") when it reads a CRD whose status the apiserver has not written yet.
 */
export function installCrds(kubectl: (args: string[]) => RunResult, files: string[]): void {
  for (const f of files) ok(kubectl(['apply', '--server-side', '-f', f]));
  const names = files.flatMap((f) =>
    yamlObjects(readFileSync(f, 'utf8'))
      .filter((o) => o.kind === 'CustomResourceDefinition')
      .map((o) => o.metadata.name),
  );
  const deadline = Date.now() + 60_000;
  for (const name of names) {
    for (;;) {
      const r = kubectl(['get', 'crd', name, '-o', 'jsonpath={.status.conditions[?(@.type=="Established")].status}']);
      if (r.code === 0 && r.stdout.trim() === 'True') break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} is not Established after 60 s: ${r.stdout}${r.stderr}`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
}
