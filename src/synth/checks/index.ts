/**
 * Every check synth makes, entered here in the order they run; each finding is a diagnostic that
 * points back at the spec (diagnostics.ts), and {@link settle} throws the errors as one SpecError
 * before anything is written.
 *
 * 1. The model, before any construct renders it ({@link checkBundle}): the bundle's size
 *    (budget.ts), the invocation's bounds (../bounds.ts), and what two pools could collide on or a
 *    spec may not choose (model.ts, ../annotations.ts).
 * 2. Each pull DaemonSet, as rendered, through its own `node.addValidation` ({@link addCheck};
 *    output.ts `checkPoolObject`, against limits.ts `OUTPUT_LIMITS`).
 * 3. The whole output, on the cluster chart ({@link checkOutput}): object names, shared objects,
 *    a warming node's memory (memory.ts) and the owned namespaces.
 */
import type { Diagnostic } from '../../imagecache/errors.js';
import type { Bundle } from '../../imagecache/model.js';
import { checkNodeAnnotations } from '../annotations.js';
import { checkPriorityClasses, checkRefreshFloor, type InvocationBounds } from '../bounds.js';
import { checkBundleSize } from './budget.js';
import { checkNodeMemory, type PoolMember } from './memory.js';
import { checkEarlyPull, checkGateKeys, checkOwnedNamespaces, checkPoolNames, checkPoolSelectors } from './model.js';
import { checkObjectNames, checkSharedObjects, type Manifest, type ObjectName } from './output.js';

export { settle } from './diagnostics.js';
export { addCheck, diagnosticsOf } from './validation.js';

/** What the model checks need of the invocation. */
export interface BundleCheckOptions {
  /** Gate keys the invocation allows beyond `prewarm.dev/`. */
  readonly allowedGateKeys: readonly string[];
  readonly bounds: InvocationBounds;
  readonly ownedNamespaces: readonly string[];
  /** Whether the pull pods run the sidecar. */
  readonly reconciler: boolean;
}

/** Step 1: the checks of the model, before anything is built. */
export function checkBundle(bundle: Bundle, o: BundleCheckOptions): Diagnostic[] {
  return [
    ...checkBundleSize(bundle),
    ...checkGateKeys(bundle, o.allowedGateKeys),
    ...checkPriorityClasses(bundle, o.bounds.allowedPriorityClasses),
    ...checkRefreshFloor(bundle, o.bounds.minRefreshSeconds),
    ...checkPoolSelectors(bundle),
    ...checkPoolNames(bundle, o.reconciler),
    ...checkEarlyPull(bundle, o.ownedNamespaces),
    ...(o.reconciler ? checkNodeAnnotations(bundle) : []),
  ];
}

/** The whole output, as step 3 reads it. */
export interface OutputFacts {
  /** Every object's identity. */
  readonly names: readonly ObjectName[];
  /** The objects that belong to no pool, rendered. */
  readonly shared: readonly Manifest[];
  /** Each pull DaemonSet's pool and pod memory request. */
  readonly memory: readonly PoolMember[];
}

/** Step 3: the checks of what spans the whole output. */
export function checkOutput(output: OutputFacts, bundle: Bundle, owned: readonly string[], maxNodeMemoryBytes: number): Diagnostic[] {
  return [
    ...checkObjectNames(output.names),
    ...checkSharedObjects(output.shared, bundle.pools.length),
    ...checkNodeMemory(output.memory, maxNodeMemoryBytes),
    ...checkOwnedNamespaces(bundle, owned),
  ];
}
