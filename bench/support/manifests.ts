/** Manifests for the benchmarks: `prewarm synth` run in-process, YAML streams, ordered apply. */
import { parseAllDocuments } from 'yaml';
import { run } from '../../src/cli/main.js';
import type { Kube, KubeObject } from './kube.js';

/** The objects of a multi-document YAML stream (empty documents dropped). */
export function yamlObjects(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJSON() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null && typeof o === 'object');
}

/** `prewarm synth <specDir> --stdout <args>` through the CLI's own entry point; throws on a non-zero exit. */
export async function synthObjects(specDir: string, args: readonly string[] = []): Promise<KubeObject[]> {
  let out = '';
  let err = '';
  const code = await run(['synth', specDir, '--stdout', ...args], { stdout: (t) => (out += t), stderr: (t) => (err += t) });
  if (code !== 0) throw new Error(`prewarm synth ${specDir} exited ${code}: ${err}`);
  return yamlObjects(out);
}

/** Server-side applies the objects in order, Namespaces first (their contents need them). */
export async function applyAll(kube: Kube, objs: readonly KubeObject[]): Promise<void> {
  for (const o of [...objs.filter((x) => x.kind === 'Namespace'), ...objs.filter((x) => x.kind !== 'Namespace')]) await kube.apply(o);
}
