/**
 * vitest globalSetup of the peers project, run before the cluster's (harness/cluster/global-setup.ts):
 * builds OpenKruise's kruise-manager and kruise-daemon from their Go module with
 * `harness/cluster/build.sh kruise` (cached by version; only this tier and the peer benchmarks build
 * it; `npm test` starts it early, in the background, and this waits for it). A failed build fails
 * the run here, before any cluster starts.
 */
import { buildComponents } from '../../harness/cluster/build.js';
import { requireKruise } from '../../harness/cluster/kruise.js';

export default function setup(): void {
  const t0 = Date.now();
  buildComponents(['kruise']);
  requireKruise();
  console.log(`[peers] OpenKruise ready in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
}
