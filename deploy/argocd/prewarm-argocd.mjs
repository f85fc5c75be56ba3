#!/usr/bin/env node
// The Argo CD side of prewarm, run by argocd-cmp-server in the repo-server sidecar (plugin.yaml):
//
//   prewarm-argocd discover   prints the first spec file under the app path that holds an
//                             ImageCache (either dialect), and nothing when there is none
//   prewarm-argocd generate   runs `prewarm synth PATH... --stdout` with the Application's
//                             parameters; stdout is the YAML stream and nothing else
//
// Parameters (spec.source.plugin.parameters, read from ARGOCD_APP_PARAMETERS), each with an
// ARGOCD_ENV_PREWARM_* fallback (spec.source.plugin.env), then the default:
//   paths             array   spec files or folders, relative to the app path      ["."]
//   namespace         string  namespace of ImageCaches that name none              prewarm
//   reconciler        string  "false" omits the sidecar (--no-reconciler)          "true"
//   reconciler-image  string  sidecar image (--reconciler-image)                   prewarm's default
// ARGOCD_ENV_PREWARM_PATHS is a whitespace-separated list.
//
// Exit codes are prewarm's (1 invalid specs or no ImageCache, 2 usage, 70 internal); a bad
// parameter exits 2 before prewarm runs. The prewarm CLI is `prewarm` on PATH, or the JS file named
// by PREWARM_BIN (run with this node).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { isAbsolute, join, normalize, relative, sep } from 'node:path';

const KNOWN = {
  paths: 'array',
  namespace: 'string',
  reconciler: 'string',
  'reconciler-image': 'string',
};

function fail(message) {
  process.stderr.write(`prewarm-argocd: ${message}\n`);
  process.exit(2);
}

/** The Application's parameters: name -> string | string[]. Unknown names are an error. */
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
  for (const p of list) {
    const name = p?.name;
    if (typeof name !== 'string' || !(name in KNOWN)) {
      fail(`unknown parameter ${JSON.stringify(name)}; known: ${Object.keys(KNOWN).join(', ')}`);
    }
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

/** The `prewarm synth` argv for these parameters and ARGOCD_ENV_PREWARM_* fallbacks. */
function synthArgs(env) {
  const params = readParameters(env);
  const fromEnv = (key) => {
    const v = env[`ARGOCD_ENV_PREWARM_${key}`];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const paths = params.paths ?? fromEnv('PATHS')?.split(/\s+/) ?? ['.'];
  for (const p of paths) {
    const n = normalize(p);
    if (p === '' || isAbsolute(p) || n === '..' || n.startsWith(`..${sep}`)) {
      fail(`path ${JSON.stringify(p)} must be relative and inside the app path`);
    }
  }
  const args = ['synth', ...paths, '--stdout'];
  const namespace = params.namespace ?? fromEnv('NAMESPACE');
  if (namespace !== undefined) args.push('--namespace', namespace);
  const reconciler = params.reconciler ?? fromEnv('RECONCILER') ?? 'true';
  if (reconciler === 'false') args.push('--no-reconciler');
  else if (reconciler !== 'true') fail(`parameter reconciler must be "true" or "false", got ${JSON.stringify(reconciler)}`);
  const image = params['reconciler-image'] ?? fromEnv('RECONCILER_IMAGE');
  if (image !== undefined) {
    if (reconciler === 'false') fail('reconciler-image makes no sense with reconciler "false"');
    args.push('--reconciler-image', image);
  }
  return args;
}

const YAML_FILE = /\.ya?ml$/i;
const KIND = /^kind:[ \t]*["']?ImageCache["']?[ \t\r]*(#[^\n]*)?$/m;
const API = /^apiVersion:[ \t]*["']?(prewarm\.dev|kubefledged\.io)\/[a-z0-9]+["']?[ \t\r]*(#[^\n]*)?$/m;

/** First file under dir (prewarm's walk: *.yaml/*.yml, hidden entries skipped) with an ImageCache. */
function discover(dir) {
  const entries = readdirSync(dir, { withFileTypes: true, recursive: true })
    .map((e) => join(e.parentPath, e.name))
    .filter(
      (full) =>
        !relative(dir, full)
          .split(sep)
          .some((part) => part.startsWith('.')),
    )
    .sort();
  for (const full of entries) {
    if (!YAML_FILE.test(full)) continue;
    let text;
    try {
      text = readFileSync(full, 'utf8');
    } catch {
      continue; // a folder named *.yaml, or unreadable: not a spec
    }
    if (KIND.test(text) && API.test(text)) return relative(dir, full);
  }
  return undefined;
}

function generate() {
  const args = synthArgs(process.env);
  const bin = process.env.PREWARM_BIN;
  const [cmd, argv] = bin ? [process.execPath, [bin, ...args]] : ['prewarm', args];
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
  const found = discover('.');
  if (found !== undefined) process.stdout.write(`${found}\n`);
} else fail('usage: prewarm-argocd generate|discover');
