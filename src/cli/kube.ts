/**
 * The one place the CLI builds a Kubernetes client: the kubeconfig read bounded, never quoting its
 * secrets, and requests through src/http/client.ts, bounded as a whole.
 */
import { homedir } from 'node:os';
import { existsSync } from 'node:fs';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { isMap, parseDocument, type YAMLError } from 'yaml';
import { readNamedFile } from '../files/read.js';
import { request } from '../http/client.js';
import { CliError, ExitCode } from './exit-codes.js';

/** The largest apiserver answer read: only stops a server that streams without end. */
const MAX_APISERVER_BODY = 256 << 20;

export interface KubeClientOptions {
  /** The kubeconfig context. @default the current context */
  readonly context?: string | undefined;
  /** Each whole request's deadline (ms). */
  readonly requestTimeoutMs: number;
  /** Ends every request in flight, e.g. at a command's own deadline. */
  readonly signal?: AbortSignal | undefined;
}

/** Where the in-cluster service account is mounted. */
const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Where a kubeconfig is looked for; injectable for tests. */
export interface KubeconfigSources {
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** @default os.homedir() */
  readonly home?: string;
  /** @default /var/run/secrets/kubernetes.io/serviceaccount */
  readonly serviceAccountDir?: string;
}

/** A client from the default kubeconfig; a missing, unreadable or malformed one is exit 2. */
export async function kubeClient(o: KubeClientOptions, sources: KubeconfigSources = {}) {
  const { context } = o;
  const k8s = await import('@kubernetes/client-node');
  const config = new k8s.KubeConfig();
  const env = sources.env ?? process.env;
  const saDir = sources.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const { files, looked } = await readKubeconfigs(env, sources.home ?? homedir());
  if (files.length > 0) {
    const name = files.length === 1 ? `kubeconfig ${files[0]?.path ?? ''}` : `kubeconfigs ${files.map((f) => f.path).join(', ')}`;
    const merged = merge(files);
    const contexts = entriesOf(merged['contexts']);
    if (context !== undefined && !contexts.some((c) => c['name'] === context)) {
      throw new CliError(`${name}: no context "${context}"`, ExitCode.Usage);
    }
    const current = context ?? (typeof merged['current-context'] === 'string' ? merged['current-context'] : undefined);
    await inlineFiles(merged, current, name);
    try {
      config.loadFromString(JSON.stringify(merged));
    } catch (err) {
      throw new CliError(`${name}: ${shapeProblem(err)}`, ExitCode.Usage);
    }
    if (context !== undefined) config.setCurrentContext(context);
  } else if (env['KUBERNETES_SERVICE_HOST'] && env['KUBERNETES_SERVICE_PORT'] && existsSync(join(saDir, 'token'))) {
    config.loadFromCluster();
  } else {
    throw new CliError(
      `no kubeconfig found: ${[...looked, `no in-cluster service account (KUBERNETES_SERVICE_HOST and ${join(saDir, 'token')})`].join('; ')}; ` +
        'set KUBECONFIG or create ~/.kube/config',
      ExitCode.Usage,
    );
  }
  const cluster = config.getCurrentCluster();
  if (cluster === null) throw new CliError('kubeconfig names no current cluster', ExitCode.Usage);
  /** The HTTP exchange of client-node, bounded by the deadline and by `maxBody`. */
  const httpApi = (maxBody: number) =>
    k8s.wrapHttpLibrary({
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
          maxBody,
        });
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(r.headers)) if (value !== undefined) headers[name] = [value].flat().join(', ');
        return new k8s.ResponseContext(r.status, headers, {
          text: () => Promise.resolve(r.body.toString('utf8')),
          binary: () => Promise.resolve(r.body),
        });
      },
    });
  /** An API client of `type`, bounded as above; `maxBody` lowers the cap for small answers. */
  const api = <T>(type: new (configuration: ReturnType<typeof k8s.createConfiguration>) => T, maxBody = MAX_APISERVER_BODY): T =>
    new type(
      k8s.createConfiguration({
        baseServer: new k8s.ServerConfiguration(cluster.server, {}),
        authMethods: { default: config },
        httpApi: httpApi(maxBody),
      }),
    );
  return { k8s, config, api };
}

type Obj = Record<string, unknown>;

interface KubeconfigFile {
  readonly path: string;
  readonly config: Obj;
}

/** The kubeconfig files kubectl would read, parsed, and where it looked when there are none. */
async function readKubeconfigs(env: NodeJS.ProcessEnv, home: string): Promise<{ files: KubeconfigFile[]; looked: string[] }> {
  const fromEnv = (env['KUBECONFIG'] ?? '').split(delimiter).filter((p) => p !== '');
  const paths = fromEnv.length > 0 ? fromEnv : [join(home, '.kube', 'config')];
  const files: KubeconfigFile[] = [];
  for (const path of paths) {
    const read = await readNamedFile(path, 'kubeconfig');
    if (typeof read !== 'string') {
      // As in kubectl, a file of KUBECONFIG that does not exist is passed over.
      if (read.missing) continue;
      throw new CliError(
        `cannot read kubeconfig ${path}: it ${read.problem.replace(/^cannot read: /, 'cannot be read: ')}`,
        ExitCode.Usage,
      );
    }
    files.push({ path, config: parseKubeconfig(path, read) });
  }
  const looked =
    fromEnv.length > 0
      ? [`KUBECONFIG=${fromEnv.join(delimiter)} names no file that exists`]
      : ['KUBECONFIG is not set', `${paths[0] ?? ''} does not exist`];
  return { files, looked };
}

/** Problems of the YAML parser, in words that never quote the file (its own messages do). */
const YAML_PROBLEMS: Readonly<Record<string, string>> = {
  BAD_INDENT: 'bad indentation',
  TAB_AS_INDENT: 'a tab used as indentation',
  MULTILINE_IMPLICIT_KEY: 'a key that runs over more than one line (a missing colon, or a quote not closed?)',
  MISSING_CHAR: 'a closing quote or bracket is missing',
  UNEXPECTED_TOKEN: 'unexpected text',
  DUPLICATE_KEY: 'a key appears twice in one mapping',
  BAD_DQ_ESCAPE: 'an invalid escape sequence in a double-quoted string',
  BLOCK_AS_IMPLICIT_KEY: 'a block used as a key',
  BAD_ALIAS: 'an alias that is not defined',
  MULTIPLE_DOCS: 'more than one YAML document',
};

function parseKubeconfig(path: string, text: string): Obj {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  const error: YAMLError | undefined = doc.errors[0];
  if (error !== undefined) {
    const line = error.linePos?.[0].line ?? 1;
    const problem = YAML_PROBLEMS[error.code] ?? error.code.toLowerCase().replace(/_/g, ' ');
    throw new CliError(`kubeconfig ${path}:${line}: not valid YAML: ${problem}`, ExitCode.Usage);
  }
  if (doc.contents === null) return {};
  if (!isMap(doc.contents)) throw new CliError(`kubeconfig ${path}:1: not a kubeconfig: expected a mapping`, ExitCode.Usage);
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch {
    throw new CliError(`kubeconfig ${path}: not a kubeconfig: too many aliases`, ExitCode.Usage);
  }
  return withAbsolutePaths(value as Obj, dirname(resolve(path)));
}

/** Fields that name files, resolved against the kubeconfig's folder as kubectl does. */
const FILE_FIELDS = { clusters: ['certificate-authority'], users: ['client-certificate', 'client-key', 'token-file'] } as const;

function withAbsolutePaths(config: Obj, dir: string): Obj {
  for (const [list, fields] of Object.entries(FILE_FIELDS)) {
    const inner = list === 'clusters' ? 'cluster' : 'user';
    for (const entry of entriesOf(config[list])) {
      const body = entry[inner];
      if (typeof body !== 'object' || body === null) continue;
      for (const field of fields) {
        const value = (body as Obj)[field];
        if (typeof value === 'string' && value !== '' && !isAbsolute(value)) (body as Obj)[field] = join(dir, value);
      }
    }
  }
  return config;
}

/** The files merged as kubectl merges them: for each name and for current-context, the first file wins. */
function merge(files: readonly KubeconfigFile[]): Obj {
  const out: Obj = {};
  for (const list of ['clusters', 'users', 'contexts']) {
    const seen = new Set<unknown>();
    const merged: Obj[] = [];
    for (const { config } of files) {
      for (const entry of entriesOf(config[list])) {
        if (entry['name'] !== undefined && seen.has(entry['name'])) continue;
        seen.add(entry['name']);
        merged.push(entry);
      }
    }
    out[list] = merged;
  }
  const current = files.map((f) => f.config['current-context']).find((c) => typeof c === 'string' && c !== '');
  if (current !== undefined) out['current-context'] = current;
  return out;
}

function entriesOf(list: unknown): Obj[] {
  return Array.isArray(list) ? list.filter((e): e is Obj => typeof e === 'object' && e !== null) : [];
}

/** Inlines the files the context in use names, read bounded, so client-node never opens them. */
async function inlineFiles(config: Obj, contextName: string | undefined, name: string): Promise<void> {
  const context = entriesOf(config['contexts']).find((c) => c['name'] === contextName)?.['context'] as Obj | undefined;
  const clusterBody = entriesOf(config['clusters']).find((c) => c['name'] === context?.['cluster'])?.['cluster'] as Obj | undefined;
  const userBody = entriesOf(config['users']).find((u) => u['name'] === context?.['user'])?.['user'] as Obj | undefined;
  for (const user of entriesOf(config['users'])) {
    const body = user['user'] as Obj | undefined;
    if (body !== userBody && typeof body === 'object' && body !== null) delete body['token-file'];
  }
  const inline = async (body: Obj | undefined, field: string, to: string, asText: boolean) => {
    const path = body?.[field];
    if (body === undefined || typeof path !== 'string' || path === '') return;
    const read = await readNamedFile(path, field);
    if (typeof read !== 'string') {
      throw new CliError(
        `cannot read the ${field} ${path} that ${name} names: it ${read.problem.replace(/^cannot read: /, 'cannot be read: ')}`,
        ExitCode.Usage,
      );
    }
    Reflect.deleteProperty(body, field);
    body[to] = asText ? read.trim() : Buffer.from(read).toString('base64');
  };
  await inline(clusterBody, 'certificate-authority', 'certificate-authority-data', false);
  await inline(userBody, 'client-certificate', 'client-certificate-data', false);
  await inline(userBody, 'client-key', 'client-key-data', false);
  await inline(userBody, 'token-file', 'token', true);
}

/** client-node's own checks of a loaded config (`clusters[0].server is missing`) quote nothing; anything else may. */
function shapeProblem(err: unknown): string {
  const message = err instanceof Error ? err.message : '';
  return /^(clusters|users|contexts)\[\d+\]\.[\w.]+ is missing$/.test(message) ? message : 'not a kubeconfig';
}
