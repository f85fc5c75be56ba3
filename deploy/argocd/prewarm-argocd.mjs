#!/usr/bin/env node
// The Argo CD side of prewarm, run by argocd-cmp-server in the repo-server sidecar (plugin.yaml):
//
//   prewarm-argocd discover   prints the first spec file under the app path that holds an
//                             ImageCache (as `prewarm specs` lists them), and nothing when there is none
//   prewarm-argocd generate   runs `prewarm synth --stdout [options] -- PATH...`; stdout is the
//                             YAML stream and nothing else
//
// Two sources of settings, trusted differently:
//
// The plugin's configuration: the environment of the sidecar container itself
// (repo-server-patch.yaml), set by whoever installs the plugin. Argo CD hands an Application's
// settings to the plugin only as ARGOCD_ENV_*, PARAM_* and ARGOCD_APP_PARAMETERS, and the
// cmp-server appends them after its own environment, so neither an Application nor a repository
// can set these names. Lists are whitespace-separated.
//   PREWARM_PLUGIN_RECONCILER_IMAGES  the sidecar reconciler images Applications may use; the
//                                     first is the default (unset: prewarm's own image, and the
//                                     reconciler-image parameter is refused)
//   PREWARM_PLUGIN_NAMESPACES         the namespaces the namespace parameter may name; the first
//                                     is the default (unset: prewarm, the only one allowed)
//   PREWARM_PLUGIN_OWN_NAMESPACES     namespaces prewarm owns (--own-namespace); unset: none
//   PREWARM_PLUGIN_ALLOW_GATE_KEYS    gate taint keys the specs may use beyond prewarm's own
//                                     (--allow-gate-key: an exact key, or a prefix ending in /)
//   PREWARM_PLUGIN_NODE_ARCH          the architecture of every node in the cluster (--node-arch:
//                                     amd64 or arm64); unset: not stated
//   PREWARM_PLUGIN_HELPER_IMAGE       the image with a static /bin/busybox that pools without the
//                                     sleeper copy into their pods (--helper-image); every image
//                                     container runs it, so a spec never chooses it; unset:
//                                     prewarm's digest-pinned busybox
//   PREWARM_PLUGIN_ALLOW_PRIORITY_CLASSES  PriorityClasses specs may name (--allow-priority-class;
//                                     never a system- class); unset: none
//   PREWARM_PLUGIN_MAX_NODE_MEMORY    the most memory the pull pods may request on one warming
//                                     node (--max-node-memory, e.g. 2Gi); unset: synth's default
//   PREWARM_PLUGIN_MIN_REFRESH_INTERVAL  the shortest refresh interval specs may set
//                                     (--min-refresh-interval, e.g. 15m); unset: synth's default
//
// The Application's parameters (spec.source.plugin.parameters, read from ARGOCD_APP_PARAMETERS),
// each with an ARGOCD_ENV_PREWARM_* fallback (spec.source.plugin.env), then the default. A
// repository sets these too: the repo-server merges the app path's .argocd-source.yaml and
// .argocd-source-<app>.yaml into spec.source before the plugin runs. So they are untrusted, and
// they only choose within the plugin's configuration:
//   paths             array   spec files or folders, relative to the app path      ["."]
//   namespace         string  namespace of ImageCaches that name none              first allowed
//   reconciler        string  "false" omits the sidecar (--no-reconciler)          "true"
//   reconciler-image  string  sidecar image, one of PREWARM_PLUGIN_RECONCILER_IMAGES  the first
// ARGOCD_ENV_PREWARM_PATHS is a whitespace-separated list. A path never becomes an option: one
// that starts with "-" is refused, and the paths follow `--`. A path must stay inside the app path
// once links are resolved: Argo CD refuses links that leave the repository, and this refuses links
// that leave the app (`paths: [specs]` where specs links to ../team-b would render team B's specs).
//
// Exit codes are prewarm's (1 invalid specs or no ImageCache, 2 usage, 70 internal); a bad
// parameter or configuration exits 2 before prewarm runs. The prewarm CLI is `prewarm` on PATH, or
// the JS file named by PREWARM_BIN (run with this node).
import { spawn, spawnSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, isAbsolute, normalize, resolve, sep } from 'node:path';

const KNOWN = {
  paths: 'array',
  namespace: 'string',
  reconciler: 'string',
  'reconciler-image': 'string',
};
const ENV_PREFIX = 'ARGOCD_ENV_PREWARM_';
const ENV_FALLBACKS = ['PATHS', 'NAMESPACE', 'RECONCILER', 'RECONCILER_IMAGE'];
const CONFIG = {
  images: 'PREWARM_PLUGIN_RECONCILER_IMAGES',
  namespaces: 'PREWARM_PLUGIN_NAMESPACES',
  own: 'PREWARM_PLUGIN_OWN_NAMESPACES',
  gateKeys: 'PREWARM_PLUGIN_ALLOW_GATE_KEYS',
  nodeArch: 'PREWARM_PLUGIN_NODE_ARCH',
  helperImage: 'PREWARM_PLUGIN_HELPER_IMAGE',
  priorityClasses: 'PREWARM_PLUGIN_ALLOW_PRIORITY_CLASSES',
  nodeMemory: 'PREWARM_PLUGIN_MAX_NODE_MEMORY',
  refreshFloor: 'PREWARM_PLUGIN_MIN_REFRESH_INTERVAL',
};
// synth's own default namespace: the only one allowed until the configuration names others.
const DEFAULT_NAMESPACE = 'prewarm';
// Values from the repository are quoted in messages: escaped and cut, never raw.
const MAX_QUOTED = 200;

function fail(message) {
  process.stderr.write(`prewarm-argocd: ${message}\n`);
  process.exit(2);
}

function quote(value) {
  const text = String(value);
  const cut = text.length > MAX_QUOTED ? `${text.slice(0, MAX_QUOTED)}…` : text;
  // JSON escapes controls; the rest of C1 and the bidirectional controls are escaped too.
  return JSON.stringify(cut).replace(
    /[\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** A whitespace-separated list of the plugin's configuration; a value that looks like an option is a misconfiguration. */
function configList(env, name) {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  const values = raw.trim().split(/\s+/);
  for (const v of values) if (v.startsWith('-')) fail(`plugin configuration ${name}: ${quote(v)} starts with "-"`);
  return values;
}

/** A single value of the plugin's configuration, or undefined when unset; prewarm checks the value itself. */
function configOne(env, name) {
  const values = configList(env, name);
  if (values.length > 1) fail(`plugin configuration ${name}: one value, not ${values.length}`);
  return values[0];
}

/** The Application's parameters: name -> string | string[]. Unknown or repeated names are an error. */
function readParameters(env) {
  const out = {};
  const raw = env.ARGOCD_APP_PARAMETERS;
  // The repo-server sends `null` when the Application sets no parameters.
  if (raw === undefined || raw.trim() === '' || raw.trim() === 'null') return out;
  let list;
  try {
    list = JSON.parse(raw);
  } catch (err) {
    fail(`ARGOCD_APP_PARAMETERS is not JSON: ${err.message}`);
  }
  if (!Array.isArray(list)) fail('ARGOCD_APP_PARAMETERS must be a JSON array');
  const seen = new Set();
  for (const p of list) {
    const name = p?.name;
    if (typeof name !== 'string' || !(name in KNOWN)) {
      fail(`unknown parameter ${quote(name)}; known: ${Object.keys(KNOWN).join(', ')}`);
    }
    if (seen.has(name)) fail(`parameter ${name} is given more than once`);
    seen.add(name);
    const kind = KNOWN[name];
    if (kind === 'array') {
      if (!Array.isArray(p.array) || p.array.some((v) => typeof v !== 'string')) fail(`parameter ${name} must be an array of strings`);
      if (p.array.length > 0) out[name] = p.array;
    } else {
      if (typeof p.string !== 'string') fail(`parameter ${name} must be a string`);
      if (p.string !== '') out[name] = p.string;
    }
  }
  return out;
}

/**
 * The real path of `p`, or of its nearest ancestor that exists: a path that does not exist yet is
 * left to prewarm to report, but a link on the way to it is still resolved.
 */
function realPrefix(p) {
  for (let at = resolve(p); ; at = dirname(at)) {
    try {
      return realpathSync(at);
    } catch (err) {
      if (dirname(at) === at || (err.code !== 'ENOENT' && err.code !== 'ENOTDIR')) fail(`path ${quote(p)} cannot be resolved: ${err.code}`);
    }
  }
}

/** Whether `path` is `dir` or lies below it (both real paths). */
function within(path, dir) {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : `${dir}${sep}`);
}

/** A chosen value must be one the plugin's configuration allows; the first allowed is the default. */
function choose(what, chosen, allowed, configName) {
  if (chosen === undefined) return allowed[0];
  if (allowed.includes(chosen)) return chosen;
  const listed = allowed.length === 0 ? 'none besides the default' : allowed.map(quote).join(', ');
  fail(`${what} ${quote(chosen)} is not allowed by the plugin's configuration (${configName} allows ${listed})`);
}

/** The `prewarm synth` argv for these parameters, ARGOCD_ENV_PREWARM_* fallbacks and the plugin's configuration. */
function synthArgs(env) {
  const params = readParameters(env);
  for (const key of Object.keys(env)) {
    if (key.startsWith(ENV_PREFIX) && !ENV_FALLBACKS.includes(key.slice(ENV_PREFIX.length))) {
      fail(`unknown plugin env ${quote(key.slice('ARGOCD_ENV_'.length))}; known: ${ENV_FALLBACKS.map((k) => `PREWARM_${k}`).join(', ')}`);
    }
  }
  const fromEnv = (key) => {
    const v = env[`${ENV_PREFIX}${key}`];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const paths = params.paths ?? fromEnv('PATHS')?.split(/\s+/) ?? ['.'];
  const app = realpathSync(process.cwd());
  for (const p of paths) {
    if (p.startsWith('-')) fail(`path ${quote(p)} starts with "-": a path is never an option (name a file "-x" as "./-x")`);
    const n = normalize(p);
    if (p === '' || isAbsolute(p) || n === '..' || n.startsWith(`..${sep}`)) {
      fail(`path ${quote(p)} must be relative and inside the app path`);
    }
    if (!within(realPrefix(p), app)) {
      // Where it leads lies outside the app, perhaps in another team's folder: never shown.
      fail(`path ${quote(p)} leads out of the app path through a link; name a folder inside the app path`);
    }
  }
  const args = ['synth', '--stdout'];

  const namespaces = configList(env, CONFIG.namespaces);
  const namespace = choose(
    'namespace',
    params.namespace ?? fromEnv('NAMESPACE'),
    namespaces.length > 0 ? namespaces : [DEFAULT_NAMESPACE],
    CONFIG.namespaces,
  );
  args.push('--namespace', namespace);

  const reconciler = params.reconciler ?? fromEnv('RECONCILER') ?? 'true';
  if (reconciler !== 'true' && reconciler !== 'false') fail(`parameter reconciler must be "true" or "false", got ${quote(reconciler)}`);
  const wanted = params['reconciler-image'] ?? fromEnv('RECONCILER_IMAGE');
  if (reconciler === 'false') {
    if (wanted !== undefined) fail('reconciler-image makes no sense with reconciler "false"');
    args.push('--no-reconciler');
  } else {
    const image = choose('reconciler-image', wanted, configList(env, CONFIG.images), CONFIG.images);
    if (image !== undefined) args.push('--reconciler-image', image);
  }
  for (const ns of configList(env, CONFIG.own)) args.push('--own-namespace', ns);
  for (const key of configList(env, CONFIG.gateKeys)) args.push('--allow-gate-key', key);
  const arch = configList(env, CONFIG.nodeArch);
  if (arch.length > 1) fail(`plugin configuration ${CONFIG.nodeArch}: one architecture, not ${arch.length}`);
  if (arch.length === 1) args.push('--node-arch', arch[0]);
  const helper = configList(env, CONFIG.helperImage);
  if (helper.length > 1) fail(`plugin configuration ${CONFIG.helperImage}: one image, not ${helper.length}`);
  if (helper.length === 1) args.push('--helper-image', helper[0]);
  for (const name of configList(env, CONFIG.priorityClasses)) args.push('--allow-priority-class', name);
  const memory = configOne(env, CONFIG.nodeMemory);
  if (memory !== undefined) args.push('--max-node-memory', memory);
  const floor = configOne(env, CONFIG.refreshFloor);
  if (floor !== undefined) args.push('--min-refresh-interval', floor);
  // `--` ends the options: whatever a path looks like, prewarm reads it as a path.
  return [...args, '--', ...paths];
}

/** How to run the prewarm CLI with `args`. */
function prewarm(args) {
  const bin = process.env.PREWARM_BIN;
  return bin ? [process.execPath, [bin, ...args]] : ['prewarm', args];
}

/** The first file `prewarm specs` lists under the app path, or undefined. */
function discover() {
  const [cmd, argv] = prewarm(['specs', '--', '.']);
  const r = spawnSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
  if (r.error) {
    process.stderr.write(`prewarm-argocd: cannot run ${cmd}: ${r.error.message}\n`);
    process.exit(70);
  }
  // Exit 1 is "no ImageCache here" (or a file it cannot read): no match, and synth would say why.
  if (r.status !== 0 && r.status !== 1) {
    process.stderr.write(r.stderr);
    process.exit(r.status ?? 70);
  }
  const first = r.stdout.split('\n')[0];
  return first === '' ? undefined : first;
}

function generate() {
  const [cmd, argv] = prewarm(synthArgs(process.env));
  const child = spawn(cmd, argv, { stdio: 'inherit' });
  for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => child.kill(sig));
  child.on('error', (err) => {
    process.stderr.write(`prewarm-argocd: cannot run ${cmd}: ${err.message}\n`);
    process.exit(70);
  });
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0)));
}

const command = process.argv[2];
if (command === 'generate' && process.argv.length === 3) generate();
else if (command === 'discover' && process.argv.length === 3) {
  const found = discover();
  if (found !== undefined) process.stdout.write(`${found}\n`);
} else fail('usage: prewarm-argocd generate|discover');
