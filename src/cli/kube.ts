/**
 * The one place the CLI builds a Kubernetes client. @kubernetes/client-node is imported lazily,
 * so `synth` and `validate` (which never talk to a cluster) do not pay for loading it.
 *
 * Its requests go through the sidecar's own HTTP exchange (reconciler/adapters/http.ts), not
 * client-node's fetch: that one bounds each request as a whole (connect to last byte) and caps the
 * body, where fetch would wait on an apiserver that accepts and never answers, or drips.
 */
import { request } from '../reconciler/adapters/http.js';
import { CliError, ExitCode } from './exit-codes.js';

/**
 * The largest apiserver answer read: a list of every node or pod of a large cluster runs to tens
 * of MiB, so this cap only stops a server that streams without end.
 */
const MAX_APISERVER_BODY = 256 << 20;

/** How the client talks to the apiserver. */
export interface KubeClientOptions {
  /** The kubeconfig context. @default the current context */
  readonly context?: string | undefined;
  /** Each request, from connecting to its last byte, takes at most this long (ms). */
  readonly requestTimeoutMs: number;
  /** Ends every request in flight, e.g. at a command's own deadline. */
  readonly signal?: AbortSignal | undefined;
}

/** A client configured from the default kubeconfig (KUBECONFIG, ~/.kube/config, in-cluster). */
export async function kubeClient(o: KubeClientOptions) {
  const k8s = await import('@kubernetes/client-node');
  const config = new k8s.KubeConfig();
  try {
    config.loadFromDefault();
  } catch (err) {
    throw new CliError(`cannot load kubeconfig: ${(err as Error).message}`, ExitCode.Internal);
  }
  if (o.context !== undefined) {
    if (!config.getContexts().some((c) => c.name === o.context))
      throw new CliError(`kubeconfig has no context "${o.context}"`, ExitCode.Usage);
    config.setCurrentContext(o.context);
  }
  const cluster = config.getCurrentCluster();
  if (cluster === null) throw new CliError('kubeconfig names no current cluster', ExitCode.Internal);
  const httpApi = k8s.wrapHttpLibrary({
    async send(req) {
      const body = req.getBody();
      const agent = req.getAgent();
      if (body !== undefined && typeof body !== 'string') throw new Error('only JSON request bodies are sent');
      const r = await request({
        method: req.getHttpMethod(),
        url: new URL(req.getUrl()),
        headers: req.getHeaders(),
        ...(body !== undefined ? { body } : {}),
        ...(agent ? { agent } : {}),
        ...(o.signal ? { signal: o.signal } : {}),
        timeoutMs: o.requestTimeoutMs,
        maxBody: MAX_APISERVER_BODY,
      });
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(r.headers)) if (value !== undefined) headers[name] = [value].flat().join(', ');
      return new k8s.ResponseContext(r.status, headers, {
        text: () => Promise.resolve(r.body.toString('utf8')),
        binary: () => Promise.resolve(r.body),
      });
    },
  });
  /** An API client of `type` whose every request is bounded as above. */
  const api = <T>(type: new (configuration: ReturnType<typeof k8s.createConfiguration>) => T): T =>
    new type(
      k8s.createConfiguration({
        baseServer: new k8s.ServerConfiguration(cluster.server, {}),
        authMethods: { default: config },
        httpApi,
      }),
    );
  return { k8s, config, api };
}
