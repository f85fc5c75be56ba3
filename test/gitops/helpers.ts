/** Shared helpers of the gitops tests. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_DIR } from '../../harness/cluster/config.js';
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
  return readdirSync(join(REPO_DIR, 'dist')).filter((f) => /\.ya?ml$/.test(f)).sort().map((f) => join(REPO_DIR, 'dist', f));
}

/** Every object of dist/'s YAML files. */
export function distDocs(): KubeObject[] {
  return distFiles().flatMap((f) => yamlObjects(readFileSync(f, 'utf8')));
}
