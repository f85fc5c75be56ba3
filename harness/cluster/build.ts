/**
 * How tiers and benchmarks get the harness's Go components: harness/cluster/build.sh for the named
 * components, returning once they are built. Cached by recipe, so a warm call takes about a second.
 * While another build.sh builds one of them (`npm test` starts them early, in the background), it
 * waits on that build's lock, then finds the result, or builds again; a failed build throws here,
 * before anything starts.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { HARNESS_DIR } from './config.js';

/** Components of harness/cluster/build.sh. */
export type Component = 'pause' | 'etcd' | 'kubernetes' | 'crictl' | 'kwok' | 'kruise';

/** What a harness cluster runs (peers such as kruise are asked for by the tiers that run them). */
export const CLUSTER_COMPONENTS: readonly Component[] = ['pause', 'etcd', 'kubernetes', 'crictl', 'kwok'];

/** A bound on a cold build of every component on a loaded 2-core machine, not a speed target. */
const BUILD_TIMEOUT_MS = 3_600_000;

export function buildComponents(components: readonly Component[]): void {
  execFileSync('bash', [join(HARNESS_DIR, 'build.sh'), ...components], {
    stdio: ['ignore', 'inherit', 'inherit'],
    timeout: BUILD_TIMEOUT_MS,
  });
}
