/**
 * Golden test: the bundled examples synthesize to exactly what dist/ holds. After an intended
 * change, run `npm run synth` and review the diff of dist/ like any other code change.
 */
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from '../src/cli/main.js';

describe('examples', () => {
  it('synthesize to the committed dist/', async () => {
    const out = join(await mkdtemp(join(tmpdir(), 'prewarm-golden-')), 'dist');
    let stderr = '';
    const code = await run(['synth', 'examples', '-o', out], { stdout: () => undefined, stderr: (t) => (stderr += t) });
    expect(code, stderr).toBe(0);
    const files = (await readdir(out)).sort();
    expect((await readdir('dist')).sort()).toEqual(files);
    for (const file of files) {
      expect(await readFile(join(out, file), 'utf8'), `dist/${file} is stale: run npm run synth`).toBe(await readFile(join('dist', file), 'utf8'));
    }
  });

  it('synthesize without warnings', async () => {
    let stderr = '';
    await run(['validate', 'examples'], { stdout: () => undefined, stderr: (t) => (stderr += t) });
    expect(stderr).not.toContain('warning');
  });
});
