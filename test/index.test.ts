import { App } from 'cdk8s';
import { describe, expect, it } from 'vitest';
import { addPrewarmCharts, loadBundle, PullDaemonSet } from '../src/index.js';

describe('library entry point', () => {
  it('lets a cdk8s app add prewarm charts from spec folders', async () => {
    const app = new App({ outdir: 'unused' });
    const { bundle } = await loadBundle(['examples']);
    addPrewarmCharts(app, bundle);
    const kinds = app.charts.flatMap((c) => c.toJson().map((o: { kind: string }) => o.kind));
    expect(kinds.filter((k) => k === 'DaemonSet')).toHaveLength(bundle.pools.length);
    expect(typeof PullDaemonSet).toBe('function');
  });
});
