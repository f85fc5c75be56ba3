/**
 * Checks that need the rendered tree, registered where the knowledge is: each construct adds one
 * with `node.addValidation`, as cdk8s-plus does, and cdk8s runs them at every synth. A validation
 * here also keeps its findings as diagnostics (file:line, severity), so synth can settle them
 * into a SpecError, with warnings, before anything is written (cdk8s's own run only reports
 * strings, and only errors).
 */
import type { IConstruct, IValidation } from 'constructs';
import { formatDiagnostic, type Diagnostic } from '../../imagecache/errors.js';

/** A validation whose findings are diagnostics. */
class DiagnosticValidation implements IValidation {
  constructor(readonly check: () => readonly Diagnostic[]) {}

  /** The errors, formatted, for cdk8s's run at synth; warnings never fail a synth. */
  validate(): string[] {
    return this.check()
      .filter((d) => d.severity === 'error')
      .map(formatDiagnostic);
  }
}

/** The diagnostic validations of each construct, which `node.validate()` can only report as strings. */
const registered = new WeakMap<IConstruct, DiagnosticValidation[]>();

/** Adds `check` to `scope`'s validations: it runs at every synth, and in {@link diagnosticsOf}. */
export function addCheck(scope: IConstruct, check: () => readonly Diagnostic[]): void {
  const validation = new DiagnosticValidation(check);
  scope.node.addValidation(validation);
  registered.set(scope, [...(registered.get(scope) ?? []), validation]);
}

/** Runs the checks of `root` and every construct below it, in construct order. */
export function diagnosticsOf(root: IConstruct): Diagnostic[] {
  return root.node.findAll().flatMap((c) => (registered.get(c) ?? []).flatMap((v) => v.check()));
}
