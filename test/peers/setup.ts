/**
 * vitest globalSetup of the peers project, run before the cluster's (harness/cluster/global-setup.ts):
 * builds OpenKruise's kruise-manager and kruise-daemon from their Go module with
 * `harness/cluster/build.sh kruise` (cached by version; only this tier and the peer benchmarks build
 * it). A failed build fails the run here, before any cluster starts.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_DIR } from '../../harness/cluster/config.js';
import { requireKruise } from '../../harness/cluster/kruise.js';

export default function setup(): void {
  const t0 = Date.now();
  execFileSync('bash', [join(REPO_DIR, 'harness/cluster/build.sh'), 'kruise'], {
    cwd: REPO_DIR,
    stdio: ['ignore', 'inherit', 'inherit'],
    timeout: 3_600_000,
  });
  requireKruise();
  console.log(`[peers] OpenKruise ready in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
}
