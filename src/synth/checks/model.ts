/**
 * Checks of the model before any construct renders it, while colliding inputs are still apart;
 * every finding points at the spec through the pools' origins.
 */
import type { Diagnostic } from '../../imagecache/errors.js';
import type { Bundle, Pool } from '../../imagecache/model.js';
import { gateKeyRefusal } from '../../contract/gate-key.js';
import { nodeLabelKey } from '../../contract/identity.js';
import { claim, describePool, error, objectLocation, poolLocation, poolName, where } from './diagnostics.js';
import { daemonSetName, pullSecretVolumeName } from '../naming.js';

/**
 * Names two inputs share: pool ids (node label and annotation keys, cluster-wide) and pull-secret
 * volumes (cdk8s-plus throws on two of one name).
 */
export function checkPoolNames(bundle: Bundle, sidecar: boolean): Diagnostic[] {
  const out: Diagnostic[] = [];
  const byId = new Map<string, Pool>();
  for (const pool of bundle.pools) {
    const id = pool.id;
    const first = claim(byId, id, pool);
    if (first !== undefined) {
      const shared = first.namespace === pool.namespace ? ` and DaemonSet ${pool.namespace}/${daemonSetName(id)}` : '';
      out.push(
        error(
          poolLocation(pool),
          `this pool gets id "${id}", as does the pool of ${describePool(first)}: both would use node label ${nodeLabelKey(id)}${shared}, ` +
            `and one would overwrite the other's state; give one of them its own name with "pool:" (prewarm.dev/v1alpha1)`,
        ),
      );
    }
    if (!sidecar || pool.settings.refreshSeconds === 0) continue;
    const bySecret = new Map<string, string>();
    for (const secret of pool.imagePullSecrets) {
      const volume = pullSecretVolumeName(secret);
      const other = claim(bySecret, volume, secret);
      if (other !== undefined) {
        out.push(
          error(
            poolLocation(pool),
            `the pull secrets "${other}" and "${secret}" of this pool (ImageCaches ${pool.sources.join(', ')}) both get volume name "${volume}" ` +
              `in the sidecar; rename one of the Secrets`,
          ),
        );
      }
    }
  }
  return out;
}

/** Gate keys against the trust boundary (contract/gate-key.ts), before any construct renders one. */
export function checkGateKeys(bundle: Bundle, allowed: readonly string[]): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const pool of bundle.pools) {
    const key = pool.settings.gate?.taintKey;
    if (key === undefined) continue;
    const why = gateKeyRefusal(key, pool.tolerations, allowed);
    if (why === undefined) continue;
    const at = pool.settingLocations.gateTaintKey ?? pool.settingLocations.gate ?? poolLocation(pool);
    const entry = poolLocation(pool);
    out.push(error(at, `pool ${poolName(pool)} (${where(entry)}): ${why}`));
  }
  return out;
}

/** A pool selecting on its own state label, which only its running pods' sidecar sets, never warms. */
export function checkPoolSelectors(bundle: Bundle): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const pool of bundle.pools) {
    const own = nodeLabelKey(pool.id);
    if (!(own in pool.nodeSelector)) continue;
    for (const origin of pool.origins) {
      out.push(
        error(
          { ...origin.location, path: `${origin.location.path}.nodeSelector` },
          `the node selector names ${own}, the pool's own state label, which its sidecar sets only on nodes where the pool already runs: ` +
            `the pool would never get a pod onto a node without it, and never turn a node warm; select on a label the node has when it joins`,
        ),
      );
    }
  }
  return out;
}

/** An owned namespace that no ImageCache is in is not emitted: likely a typo, or a left-over. */
export function checkOwnedNamespaces(bundle: Bundle, owned: readonly string[]): Diagnostic[] {
  return owned
    .filter((ns) => !bundle.namespaces.includes(ns))
    .map((ns) => ({
      ...objectLocation(`Namespace ${ns}`),
      severity: 'warning',
      message: `namespace "${ns}" is owned, but no ImageCache is in it, so it is not emitted (a prune deletes it if it was emitted before)`,
    }));
}

/**
 * Early pulling is refused with `lanes: 1` (no pullers would pull early) and outside an owned
 * namespace (synth relaxes Pod Security only there); with or without the sidecar alike.
 */
export function checkEarlyPull(bundle: Bundle, owned: readonly string[]): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const pool of bundle.pools) {
    if (!pool.settings.earlyPull) continue;
    const at = pool.settingLocations.earlyPull ?? poolLocation(pool);
    const name = `pool ${poolName(pool)} (${where(poolLocation(pool))})`;
    if (pool.settings.lanes === 1) {
      const lanes = pool.settingLocations.lanes;
      out.push(
        error(
          at,
          `${name}: earlyPull needs burst pullers, and lanes: 1${lanes === undefined ? '' : ` (${where(lanes)})`} has none: ` +
            "the pool's one pod, the holder, stays on the pod network and starts only once the node has one; set lanes to 2 or more, or remove earlyPull",
        ),
      );
    }
    if (!owned.includes(pool.namespace)) {
      out.push(
        error(
          at,
          `${name}: earlyPull needs a namespace prewarm owns, and ${pool.namespace} is not owned: early pullers use the host network, ` +
            `which Pod Security baseline and restricted forbid, and synth relaxes only an owned namespace (--own-namespace ${pool.namespace}), ` +
            "under an admission policy that admits the host network only for its pullers; own a namespace that holds only prewarm's pods, " +
            'move the pool there, or remove earlyPull',
        ),
      );
    }
  }
  return out;
}
