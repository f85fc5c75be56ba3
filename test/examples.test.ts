/**
 * Golden test: the bundled examples synthesize to exactly what dist/ holds. After an intended
 * change, run `npm run synth` and review the diff of dist/ like any other code change.
 */
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { run } from '../src/cli/main.js';

/**
 * How dist/ is made, as `npm run synth` and cdk8s.yaml make it: prewarm owns its dedicated
 * namespace `prewarm`; `ml-serving` (where the serving pods run) and `kube-fledged` (where
 * kube-fledged's own Jobs run during a side-by-side migration) are not prewarm's.
 */
const SYNTH_ARGS = ['synth', 'examples', '--own-namespace', 'prewarm'];

describe('examples', () => {
  it('synthesize to the committed dist/', async () => {
    const out = join(await mkdtemp(join(tmpdir(), 'prewarm-golden-')), 'dist');
    let stderr = '';
    const code = await run([...SYNTH_ARGS, '-o', out], { stdout: () => undefined, stderr: (t) => (stderr += t) });
    expect(code, stderr).toBe(0);
    const files = (await readdir(out)).sort();
    expect((await readdir('dist')).sort()).toEqual(files);
    for (const file of files) {
      expect(await readFile(join(out, file), 'utf8'), `dist/${file} is stale: run npm run synth`).toBe(
        await readFile(join('dist', file), 'utf8'),
      );
    }
  });

  it('synthesize without warnings', async () => {
    let stderr = '';
    await run(['validate', 'examples'], { stdout: () => undefined, stderr: (t) => (stderr += t) });
    await run([...SYNTH_ARGS, '--stdout'], { stdout: () => undefined, stderr: (t) => (stderr += t) });
    expect(stderr).not.toContain('warning');
  });

  it('restrict only the namespace prewarm owns; npm run synth and cdk8s.yaml own the same', async () => {
    const cluster = parseAllDocuments(await readFile(join('dist', 'prewarm-cluster.k8s.yaml'), 'utf8')).map((d) => d.toJS());
    const enforced = Object.fromEntries(
      cluster
        .filter((o) => o.kind === 'Namespace')
        .map((o) => [o.metadata.name, o.metadata.labels?.['pod-security.kubernetes.io/enforce'] ?? 'none']),
    );
    expect(enforced).toEqual({ 'kube-fledged': 'none', 'ml-serving': 'none', prewarm: 'restricted' });
    const pkg = JSON.parse(await readFile('package.json', 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts['synth']).toContain(SYNTH_ARGS.slice(2).join(' '));
    expect(await readFile('cdk8s.yaml', 'utf8')).toContain(`node lib/src/main.js ${SYNTH_ARGS.slice(2).join(' ')} examples`);
  });
});
