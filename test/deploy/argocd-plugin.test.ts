/**
 * deploy/argocd/prewarm-argocd.mjs on its own, with a PREWARM_BIN that prints the argv it is given:
 * what reaches synth, and what is refused before synth runs. The gitops tier runs the same script
 * under the real argocd-cmp-server (test/gitops/argocd-plugin.test.ts).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const SCRIPT = resolve('deploy/argocd/prewarm-argocd.mjs');
const work = mkdtempSync(join(tmpdir(), 'prewarm-argocd-unit-'));
const echo = join(work, 'echo.mjs');
writeFileSync(echo, 'process.stdout.write(JSON.stringify(process.argv.slice(2)));\n');

// A repository with two teams' apps; team A's app holds links of every kind.
const repo = join(work, 'repo');
const appA = join(repo, 'team-a');
mkdirSync(join(repo, 'team-b', 'specs'), { recursive: true });
mkdirSync(join(appA, 'real'), { recursive: true });
symlinkSync('../team-b', join(appA, 'specs'));
symlinkSync('../team-b/specs', join(appA, 'deep'));
symlinkSync('real', join(appA, 'inside'));
symlinkSync(work, join(appA, 'abs'));
// The app path itself reached through a link: what counts is where it really is.
symlinkSync(appA, join(work, 'app-link'));

afterAll(() => rmSync(work, { recursive: true, force: true }));

function generate(cwd: string, env: NodeJS.ProcessEnv): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [SCRIPT, 'generate'], {
    cwd,
    env: { PATH: process.env['PATH'], PREWARM_BIN: echo, ...env },
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const params = (paths: string[]) => ({ ARGOCD_APP_PARAMETERS: JSON.stringify([{ name: 'paths', array: paths }]) });

describe('prewarm-argocd: a path must stay inside the app path once links are resolved', () => {
  it.each([
    ['a link to a sibling app', 'specs'],
    ['a path below such a link', 'specs/specs'],
    ['a path that does not exist yet, below such a link', 'specs/none/x.yaml'],
    ['a link to a folder of the sibling app', 'deep'],
    ['a link to an absolute path outside', 'abs'],
  ])('refuses %s (%s), as parameter and as env, without saying where it leads', (_what, path) => {
    for (const env of [params([path]), { ARGOCD_ENV_PREWARM_PATHS: path }]) {
      const r = generate(appA, env);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe(
        `prewarm-argocd: path ${JSON.stringify(path)} leads out of the app path through a link; name a folder inside the app path\n`,
      );
      expect(r.stderr).not.toContain('team-b');
    }
  });

  it.each([
    ['the app path', '.'],
    ['a real folder', 'real'],
    ['a link that stays inside', 'inside'],
    ['a path that does not exist (prewarm reports it)', 'missing/x.yaml'],
  ])('passes %s (%s) to synth after --', (_what, path) => {
    for (const cwd of [appA, join(work, 'app-link')]) {
      const r = generate(cwd, params([path]));
      expect(r.code, r.stderr).toBe(0);
      expect((JSON.parse(r.stdout) as string[]).slice(-2)).toEqual(['--', path]);
    }
  });

  it('refuses the whole render when one of several paths leaves', () => {
    const r = generate(appA, params(['real', 'specs']));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('path "specs" leads out of the app path');
  });
});

describe('prewarm-argocd: the bounds come from the plugin configuration only', () => {
  it('passes PREWARM_PLUGIN_ALLOW_PRIORITY_CLASSES, _MAX_NODE_MEMORY and _MIN_REFRESH_INTERVAL as synth options', () => {
    const r = generate(appA, {
      PREWARM_PLUGIN_ALLOW_PRIORITY_CLASSES: ' warm  batch ',
      PREWARM_PLUGIN_MAX_NODE_MEMORY: '2Gi',
      PREWARM_PLUGIN_MIN_REFRESH_INTERVAL: '15m',
    });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([
      'synth',
      '--stdout',
      '--namespace',
      'prewarm',
      '--allow-priority-class',
      'warm',
      '--allow-priority-class',
      'batch',
      '--max-node-memory',
      '2Gi',
      '--min-refresh-interval',
      '15m',
      '--',
      '.',
    ]);
  });

  it('no Application parameter or plugin env sets them', () => {
    const asParam = generate(appA, { ARGOCD_APP_PARAMETERS: JSON.stringify([{ name: 'max-node-memory', string: '64Gi' }]) });
    expect(asParam.code).toBe(2);
    expect(asParam.stderr).toContain('unknown parameter "max-node-memory"');
    const asEnv = generate(appA, { ARGOCD_ENV_PREWARM_ALLOW_PRIORITY_CLASSES: 'system-node-critical' });
    expect(asEnv.code).toBe(2);
    expect(asEnv.stderr).toContain('unknown plugin env "PREWARM_ALLOW_PRIORITY_CLASSES"');
    const two = generate(appA, { PREWARM_PLUGIN_MIN_REFRESH_INTERVAL: '1m 2m' });
    expect(two.code).toBe(2);
    expect(two.stderr).toContain('PREWARM_PLUGIN_MIN_REFRESH_INTERVAL: one value, not 2');
  });
});
