/**
 * The one place the CLI builds a Kubernetes client. @kubernetes/client-node is imported lazily,
 * so `synth` and `validate` (which never talk to a cluster) do not pay for loading it.
 */
import { CliError, ExitCode } from './exit-codes.js';

/** A client configured from the default kubeconfig (KUBECONFIG, ~/.kube/config, in-cluster). */
export async function kubeClient(context?: string) {
  const k8s = await import('@kubernetes/client-node');
  const config = new k8s.KubeConfig();
  try {
    config.loadFromDefault();
  } catch (err) {
    throw new CliError(`cannot load kubeconfig: ${(err as Error).message}`, ExitCode.Internal);
  }
  if (context !== undefined) {
    if (!config.getContexts().some((c) => c.name === context)) throw new CliError(`kubeconfig has no context "${context}"`, ExitCode.Usage);
    config.setCurrentContext(context);
  }
  if (config.getCurrentCluster() === null) throw new CliError('kubeconfig names no current cluster', ExitCode.Internal);
  return { k8s, config };
}
