/**
 * E2E: the README's "Getting started on your cluster", run as written against the harness
 * cluster, so that the section cannot rot. The commands are read from README.md, from the fenced
 * blocks marked `<!-- getting-started: step N -->` (test/docs/getting-started.ts), and each runs
 * in bash with a time bound, in a copy of this checkout (the files `git ls-files -co
 * --exclude-standard` lists: no node_modules/, lib/ or cluster state), as an operator runs them
 * from a checkout:
 *
 * 1. `npm ci && npm run build && npm pack`, then `npm install --global ./prewarm-<version>.tgz`;
 * 2. `npm run build:reconciler-image -- DIR TAG`, then `skopeo copy` of the layout to the registry;
 * 3. the README's ImageCache, written as it stands to the file the README names;
 * 4. `prewarm synth … --reconciler-image …` and `kubectl apply --server-side -f dist/`;
 * 5. (prose, no commands) a real node joins, configured by the kubelet recipe of
 *    docs/operations.md that step 5 links to: its `registerWithTaints` is the node's, and its
 *    labels are what the README's pool selects. It must register tainted, turn warm, and lose the
 *    taint, in that order;
 * 6. `prewarm status`, `kubectl prewarm status --node NODE` and `prewarm doctor`: each exits 0;
 *    status counts the node warm, the timeline is the node's, doctor finds its registration fine.
 *
 * Not run: the commands test/docs/getting-started.ts lists in ALTERNATIVES (step 1's npx line:
 * the README offers it instead of the global install, which is run), reported as skipped. Step
 * 2's `docker buildx` line is a comment in the README, so no command.
 *
 * Substitutions, the only changes to the README's text:
 * - `registry.example.com/platform`, which the README says "stands for a registry your nodes can
 *   pull from", becomes `10.250.0.1:5000/platform`: the harness's plain-HTTP registry, which
 *   every node's containerd pulls from;
 * - `NODE` in `--node NODE` becomes the joined node's name.
 *
 * The environment, which the README leaves to the operator:
 * - a fresh shell's: the npm_* variables of the `npm test` that runs this are dropped, and so are
 *   node_modules/.bin folders on PATH;
 * - PATH starts with the bin/ of a temporary global prefix (where `npm install --global` links
 *   prewarm and kubectl-prewarm) and the harness's kubectl; KUBECONFIG is the harness admin
 *   kubeconfig;
 * - npm_config_prefix is that temporary prefix, so the machine's global prefix is never touched;
 *   npm_config_prefer_offline reads npm's cache (filled by the suite's own `npm ci`) first;
 * - step 2 runs in the hub network namespace, the only place the registry listens, with HOME a
 *   temporary folder whose .config/containers/registries.conf marks that plain-HTTP registry
 *   `insecure` (what an operator with such a registry configures; skopeo reads no environment
 *   variable for it).
 *
 * The images of the README's ImageCache (nvcr.io/…, docker.io/…) and the helper image are small
 * stand-ins that the harness registry serves under those names (the nodes' containerd mirrors
 * those hosts to it: harness/cluster/registry.ts); the reconciler image is the one step 2 pushed.
 * Everything applied, the node, the copy and the image layout are removed afterwards: the other
 * e2e files share the cluster.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { addNode, kubectl, removeNode } from '../../harness/cluster/cluster.js';
import { BIN, NET, REGISTRY, REPO_DIR } from '../../harness/cluster/config.js';
import { imageInRegistry } from '../../harness/cluster/images.js';
import { run, type RunResult } from '../../harness/cluster/sh.js';
import { Kube, type KubeObject } from '../../harness/kube.js';
import { poolsOf, prepareImages, yamlObjects, type PoolImages } from '../../harness/manifests.js';
import { NodeWatch, until, type NodeTimes } from '../../harness/nodes.js';
import { secs } from '../../harness/time.js';
import { nodeLabelKey } from '../../src/contract/identity.js';
import { LABEL_MANAGED_BY, MANAGED_BY, NodeState } from '../../src/contract/names.js';
import {
  ALTERNATIVES,
  kubeletRecipe,
  NODE_PLACEHOLDER,
  readmeSteps,
  REGISTRY_PLACEHOLDER,
  stepCommands,
  withoutComment,
  type Step,
} from '../docs/getting-started.js';
import { describePool, kubeconfigPath, waitNodeListsImages } from './helpers.js';

const NODE = 'gs-node';
/** What the README's registry placeholder becomes: the harness registry every node pulls from. */
const REGISTRY_HERE = `${REGISTRY.plain}/platform`;
/** A bound on each command; `npm ci` of the whole tree is the slowest, about a minute here. */
const COMMAND_TIMEOUT_MS = 300_000;
const WARM_TIMEOUT_MS = 300_000;

interface ImageCacheDoc {
  metadata: { name: string; namespace: string };
  spec: { cacheSpec: { pool: string; nodeSelector: Record<string, string> }[] };
}

const { text, blocks } = readmeSteps();
const recipe = kubeletRecipe();
const specPath = /e\.g\. `(specs\/[^`]+\.yaml)`/.exec(text)?.[1];
const specText = blocks.get('step 3')?.body ?? '';
const spec = parse(specText) as ImageCacheDoc;
const cache = spec.spec.cacheSpec[0];
const WORK = mkdtempSync(join(tmpdir(), 'prewarm-getting-started-'));
const CHECKOUT = join(WORK, 'checkout');
const PREFIX = join(WORK, 'global');
const HOME = join(WORK, 'home');

/** The README's commands that were not run, with why. */
const skipped: string[] = [];

/** The README's text with the documented placeholders replaced (see the header). */
function substitute(command: string): string {
  return command.replaceAll(REGISTRY_PLACEHOLDER, REGISTRY_HERE).replace(NODE_PLACEHOLDER, `$1${NODE}`);
}

/** A fresh operator shell's environment (see the header). */
function operatorEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  const path = (process.env['PATH'] ?? '').split(delimiter).filter((p) => p !== '' && !p.endsWith(join('node_modules', '.bin')));
  return {
    ...env,
    PATH: [join(PREFIX, 'bin'), dirname(BIN.kubectl), ...path].join(delimiter),
    KUBECONFIG: kubeconfigPath(),
    npm_config_prefix: PREFIX,
    npm_config_prefer_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  };
}

/** Runs one README command (substituted) in the checkout copy; fails the test unless it exits 0. */
function runCommand(readme: string, opts: { netns?: string; env?: NodeJS.ProcessEnv } = {}): RunResult {
  const command = substitute(readme);
  const t0 = Date.now();
  const r = run(['bash', '-eo', 'pipefail', '-c', command], {
    cwd: CHECKOUT,
    env: opts.env ?? operatorEnv(),
    timeoutMs: COMMAND_TIMEOUT_MS,
    allowFail: true,
    ...(opts.netns !== undefined ? { netns: opts.netns } : {}),
  });
  console.log(`[getting-started] ${command} -> exit ${r.code} (${secs(Date.now() - t0)}s)`);
  expect(r.code, `README command \`${readme}\` run as \`${command}\`:\n${r.stderr}\n${r.stdout}`).toBe(0);
  return r;
}

/** The step's commands to run: the alternatives the README offers are noted as skipped instead. */
function commandsOf(step: Step): string[] {
  return stepCommands(blocks, step).filter((c) => {
    const why = ALTERNATIVES[withoutComment(c)];
    if (why !== undefined) skipped.push(`${c}  (${why})`);
    return why === undefined;
  });
}

/** The one argument that follows `flag` in a README command of `step`. */
function argOf(step: Step, flag: string): string {
  const value = stepCommands(blocks, step)
    .map((c) => new RegExp(`${flag} (\\S+)`).exec(substitute(c))?.[1])
    .find((v) => v !== undefined);
  if (value === undefined) throw new Error(`README ${step} has no command with ${flag}`);
  return value;
}

/** Copies the checkout's files (tracked and untracked, not ignored) to `to`. */
function copyCheckout(to: string): void {
  const files = run(['git', '-C', REPO_DIR, 'ls-files', '-z', '-co', '--exclude-standard']).stdout.split('\0');
  for (const f of files) {
    if (f === '' || !existsSync(join(REPO_DIR, f))) continue;
    mkdirSync(dirname(join(to, f)), { recursive: true });
    cpSync(join(REPO_DIR, f), join(to, f), { verbatimSymlinks: true });
  }
}

/** The objects step 4 wrote to dist/ (none before it ran). */
function distObjects(): KubeObject[] {
  const dist = join(CHECKOUT, 'dist');
  if (!existsSync(dist)) return [];
  return readdirSync(dist)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .flatMap((f) => yamlObjects(readFileSync(join(dist, f), 'utf8')));
}

describe("the README's getting-started steps on the harness cluster", () => {
  /** The image the README pushes in step 2 and names in step 4's synth. */
  const reconcilerImage = argOf('step 4', '--reconciler-image');
  const layout = argOf('step 2', 'build:reconciler-image --');
  let pool: PoolImages | undefined;
  let kube: Kube | undefined;
  let watch: NodeWatch | undefined;
  let times: NodeTimes | undefined;

  beforeAll(async () => {
    if (specPath === undefined) throw new Error('README step 3 names no file (e.g. `specs/….yaml`) for its ImageCache');
    if (!cache) throw new Error('README step 3: the ImageCache has no cacheSpec');
    // A kept cluster may still hold these from an earlier run, or be deleting the namespace (the
    // examples' output uses it too).
    await removeNode(NODE).catch(() => undefined);
    kubectl(['delete', 'namespace', spec.metadata.namespace, '--ignore-not-found', '--wait=true', '--timeout=180s']);
    // The README applies as a first user would, with kubectl's own field manager. Other files of
    // this suite applied prewarm's shared objects (cluster-scoped, and the Events RoleBinding in
    // default) with theirs and other subjects, which server-side apply rightly calls a conflict:
    // start from a cluster without them, as the README's reader does.
    const managed = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;
    kubectl([
      'delete',
      'clusterrole,clusterrolebinding,validatingadmissionpolicy,validatingadmissionpolicybinding',
      '-l',
      managed,
      '--ignore-not-found',
    ]);
    kubectl(['-n', 'default', 'delete', 'role,rolebinding', '-l', managed, '--ignore-not-found']);
    copyCheckout(CHECKOUT);
    mkdirSync(join(HOME, '.config', 'containers'), { recursive: true });
    writeFileSync(
      join(HOME, '.config', 'containers', 'registries.conf'),
      `[[registry]]\nlocation = "${REGISTRY.plain}"\ninsecure = true\n`,
    );
  });

  afterAll(async () => {
    watch?.close();
    kube?.close();
    const applied = distObjects().filter((o) => !(o.kind === 'Namespace' && o.metadata.name === 'default'));
    // Waits for the namespace to go, so that the next file applying into it does not meet it
    // terminating; the node is still there, so its pods end the ordinary way.
    if (applied.length > 0) {
      kubectl(['delete', '--ignore-not-found', '--wait=true', '--timeout=180s', '-f', '-'], {
        input: applied.map((o) => JSON.stringify(o)).join('\n---\n'),
        allowFail: true,
      });
    }
    await removeNode(NODE).catch(() => undefined);
    rmSync(WORK, { recursive: true, force: true });
    rmSync(layout, { recursive: true, force: true });
    console.log(`[getting-started] not run (alternatives the README offers):\n${skipped.map((s) => `  ${s}`).join('\n')}`);
  });

  it('step 1: builds and packs the CLI, and installs the tarball globally (here: into a temporary prefix)', () => {
    for (const c of commandsOf('step 1')) runCommand(c);
    expect(existsSync(join(PREFIX, 'lib', 'node_modules', 'prewarm', 'package.json')), 'installed under npm_config_prefix').toBe(true);
    for (const bin of ['prewarm', 'kubectl-prewarm']) expect(existsSync(join(PREFIX, 'bin', bin)), `${bin} linked into bin/`).toBe(true);
  });

  it('step 2: builds the reconciler image and pushes it to the registry the nodes pull from', () => {
    for (const c of commandsOf('step 2')) runCommand(c, { netns: NET.hubNs, env: { ...operatorEnv(), HOME } });
    expect(reconcilerImage.startsWith(`${REGISTRY_HERE}/`), reconcilerImage).toBe(true);
    expect(imageInRegistry(reconcilerImage), `${reconcilerImage} in the harness registry`).toBe(true);
  });

  it('steps 3 and 4: the ImageCache, synthesized with the pushed image and applied with zero warnings', () => {
    mkdirSync(dirname(join(CHECKOUT, specPath as string)), { recursive: true });
    writeFileSync(join(CHECKOUT, specPath as string), specText);
    for (const c of commandsOf('step 4')) {
      const r = runCommand(c);
      const warnings = r.stderr.split('\n').filter((l) => /^Warning:/i.test(l.trim()));
      expect(warnings, c).toEqual([]);
    }
    const objects = distObjects();
    pool = poolsOf(objects).find((p) => p.pool === cache?.pool && p.namespace === spec.metadata.namespace);
    expect(pool, `dist/ holds pool ${cache?.pool} in ${spec.metadata.namespace}`).toBeDefined();
    expect(pool?.sidecar).toEqual([reconcilerImage]);
    // Stand-ins for the README's images and the helper; the sidecar's image is step 2's.
    prepareImages(objects, [reconcilerImage]);
  });

  it("step 5: a node born with the kubelet recipe's taint joins the pool, turns warm, and loses the taint", async () => {
    expect(pool, 'steps 3 and 4 ran').toBeDefined();
    const selector = cache?.nodeSelector ?? {};
    kube = new Kube();
    watch = new NodeWatch(
      kube,
      Object.entries(selector)
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
    );
    await watch.start();
    const t = watch.expect(NODE);
    times = t;
    await addNode(NODE, { labels: selector, taints: recipe.configTaints });
    // The kubelet registered the node with every taint of the recipe: there from the first event
    // (which the watch may deliver a moment after addNode saw the node Ready).
    expect(await until(t, (x) => x.registeredAt !== undefined, Date.now() + 30_000), `${NODE} seen by the watch`).toBe(true);
    for (const taint of recipe.configTaints) expect(t.taintsAt.get(taint.key), `${taint.key} at registration`).toBe(t.registeredAt);

    const warm = `${nodeLabelKey(cache?.pool ?? '')}=${NodeState.Warm}`;
    const state = (): string => describePool(pool as PoolImages);
    expect(await until(t, (x) => x.labelsAt.has(warm), Date.now() + WARM_TIMEOUT_MS), `${NODE} labelled ${warm}\n${state()}`).toBe(true);
    for (const taint of recipe.configTaints) {
      expect(await until(t, (x) => x.taintsGoneAt.has(taint.key), Date.now() + 120_000), `${taint.key} removed\n${state()}`).toBe(true);
      expect(t.taintsGoneAt.get(taint.key), `${taint.key} removed once warm, not before`).toBeGreaterThanOrEqual(
        t.labelsAt.get(warm) ?? Infinity,
      );
    }
    const readyAt = t.readyAt ?? t.registeredAt ?? 0;
    console.log(`[getting-started] ${NODE}: warm ${secs((t.labelsAt.get(warm) ?? 0) - readyAt)}s after Ready`);
  });

  it('step 6: status, the node timeline and doctor exit 0 and report the warm node', async () => {
    expect(times?.labelsAt.size, 'step 5 ran').toBeGreaterThan(0);
    // A user runs doctor on a settled node: one that lists its images (see waitNodeListsImages).
    if (pool) await waitNodeListsImages(NODE, pool.all);
    const commands = commandsOf('step 6');
    expect(commands.length).toBeGreaterThan(0);
    for (const c of commands) {
      const out = runCommand(c).stdout;
      if (/^prewarm status(\s|$)/.test(c) && !c.includes('--node')) {
        // Without -o wide the table lists pools, and only the nodes that are not warm.
        expect(out, out).toMatch(new RegExp(`^${spec.metadata.namespace}\\s+${cache?.pool ?? ''}\\s+1\\s+1\\s+0\\s+0$`, 'm'));
        expect(out, out).not.toContain(NODE);
      } else if (c.includes('--node')) {
        expect(out, out).toContain(`node ${NODE}:`);
      } else if (/^prewarm doctor(\s|$)/.test(c)) {
        expect(
          out.split('\n').filter((l) => l.includes(NODE) && l.includes('register-taint')),
          out,
        ).toEqual([]);
      }
    }
  });
});
