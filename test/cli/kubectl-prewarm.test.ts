/**
 * The `kubectl-prewarm` executable runs the CLI as the kubectl plugin `kubectl prewarm`: run here
 * as a process, as kubectl runs it (with the arguments after the plugin name). That real kubectl
 * finds and runs it is tested in test/gitops/kubectl-plugin.test.ts.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { VERSION } from '../../src/version.js';

const exec = promisify(execFile);
const BIN = 'src/cli/kubectl-prewarm.ts';
const plugin = (args: string[]) =>
  exec(process.execPath, ['--import', 'tsx', BIN, ...args], { env: { ...process.env, KUBECONFIG: '/nonexistent' } });

describe('kubectl-prewarm', { timeout: 60_000 }, () => {
  it('package.json ships it as a bin next to prewarm, built from this file', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { bin: Record<string, string> };
    expect(pkg.bin).toEqual({ prewarm: './lib/src/cli/bin.js', 'kubectl-prewarm': './lib/src/cli/kubectl-prewarm.js' });
    expect(readFileSync(BIN, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  });

  it('dispatches to the commands and names itself "kubectl prewarm" in help', async () => {
    const help = await plugin(['--help']);
    expect(help.stdout).toMatch(/^kubectl prewarm <command> \[options\]/);
    for (const cmd of ['synth', 'validate', 'migrate', 'status', 'pin', 'doctor']) expect(help.stdout).toContain(`kubectl prewarm ${cmd}`);
    expect((await plugin(['--version'])).stdout.trim()).toBe(VERSION);
    const status = await plugin(['status', '--help']);
    expect(status.stdout).toContain('kubectl prewarm status');
  });

  it('runs a command and keeps its exit codes; usage errors point at "kubectl prewarm --help"', async () => {
    const usage = (await plugin(['stauts']).catch((e: unknown) => e)) as { code: number; stderr: string };
    expect(usage.code).toBe(2);
    expect(usage.stderr).toBe(
      'prewarm: unknown command "stauts"; the commands are synth, validate, migrate, status, pin, doctor, specs, discover\nrun "kubectl prewarm --help" for usage\n',
    );
    const synth = await plugin(['synth', 'examples', '--stdout']);
    expect(synth.stdout).toContain('kind: DaemonSet');
  });
});
