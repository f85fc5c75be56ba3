/** `cdk8s synth` through cdk8s.yaml produces exactly the committed dist/ (src/main.ts). */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const exec = promisify(execFile);

describe('cdk8s app entry', () => {
  it('cdk8s synth writes the same files as prewarm synth', async () => {
    const out = join(await mkdtemp(join(tmpdir(), 'prewarm-cdk8s-')), 'dist');
    await exec(join('node_modules', '.bin', 'cdk8s'), ['synth', '--output', out], { env: { ...process.env, CI: 'true' } });
    const files = (await readdir(out)).sort();
    expect(files).toEqual((await readdir('dist')).sort());
    for (const f of files) expect(await readFile(join(out, f), 'utf8')).toBe(await readFile(join('dist', f), 'utf8'));
  }, 180_000);
});
