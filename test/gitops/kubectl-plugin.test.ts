/**
 * Real kubectl finds the shipped `kubectl-prewarm` bin on the PATH, as it does after `npm install
 * -g prewarm` or a krew install, and `kubectl prewarm status` runs against the gitops tier's
 * apiserver with the kubeconfig kubectl hands its plugins through the environment.
 */
import { chmodSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BIN, REPO_DIR } from '../../harness/cluster/config.js';
import { run } from './helpers.js';

const kubeconfig = inject('kubeconfig');
/** What package.json's "bin" names, as the gitops setup built it. */
const PLUGIN = join(REPO_DIR, 'lib/src/cli/kubectl-prewarm.js');
let dir: string;

/** kubectl with only the plugin folder, node's and kubectl's own on the PATH. */
function kubectl(args: string[]) {
  const path = [dir, dirname(process.execPath), dirname(BIN.kubectl)].join(':');
  return run([BIN.kubectl, ...args], { env: { PATH: path, HOME: dir, KUBECONFIG: kubeconfig } });
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'prewarm-plugin-'));
  // npm and krew both link the bin under its plugin name and make it executable.
  chmodSync(PLUGIN, 0o755);
  symlinkSync(PLUGIN, join(dir, 'kubectl-prewarm'));
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('kubectl prewarm', () => {
  it('kubectl lists the plugin', () => {
    const r = kubectl(['plugin', 'list']);
    expect(r.stdout + r.stderr).toContain(join(dir, 'kubectl-prewarm'));
  });

  it('kubectl prewarm --help is the CLI, named as the plugin', () => {
    const r = kubectl(['prewarm', '--help']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^kubectl prewarm <command> \[options\]/);
    expect(r.stdout).toContain('kubectl prewarm doctor');
  });

  it('kubectl prewarm status reads the cluster of KUBECONFIG and keeps the exit code', () => {
    const r = kubectl(['prewarm', 'status', '-n', 'prewarm-plugin-empty', '-o', 'json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ pools: [], allWarm: true });
    const bad = kubectl(['prewarm', 'status', '--context', 'no-such-context']);
    expect(bad.code).toBe(2);
    // The message names the kubeconfig file it read (KUBECONFIG), then what it lacks.
    expect(bad.stderr).toMatch(/^prewarm: kubeconfig \/\S+: no context "no-such-context"$/m);
  });
});
