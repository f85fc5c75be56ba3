import { mkdir, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { run } from '../../../src/cli/main.js';
import type { SourceFile } from '../../../src/imagecache/parse.js';
import { parseImageRef } from '../../../src/oci/reference.js';
import { synthYaml, type SynthOptions } from '../../../src/synth/app.js';
import { bundleOfFiles, cache } from '../../helpers.js';
import { refusal } from '../spec-fixtures.js';
import { poolId, shortHash } from '../../../src/contract/identity.js';
import { dnsLabel, imageContainerName, pullSecretVolumeName } from '../../../src/synth/naming.js';
import { poolKey } from '../../../src/imagecache/bundle.js';

const sidecar: SynthOptions = { reconciler: { image: 'ghcr.io/prewarm-dev/reconciler:0.1.0' } };

/**
 * The first i < j with make(i) and make(j) equal: a brute-force search for a collision of the
 * 32-bit names, bounded (about 77,000 tries find one half the time; each search below is fixed,
 * so it ends at the same j every run).
 */
function collision(make: (i: number) => string, bound = 1_000_000): [number, number] {
  const seen = new Map<string, number>();
  for (let j = 0; j < bound; j++) {
    const name = make(j);
    const i = seen.get(name);
    if (i !== undefined) return [i, j];
    seen.set(name, j);
  }
  throw new Error(`no collision in ${bound} tries`);
}

const tolerating = (key: string) =>
  `  cacheSpec:\n  - images: [redis:7]\n    nodeSelector: {pool: gpu}\n    tolerations: [{key: ${key}, operator: Exists}]\n`;
const key = (ns: string, t: string) => poolKey(ns, { nodeSelector: { pool: 'gpu' }, tolerations: [{ key: t, operator: 'Exists' }] });

// Two pools in one namespace that differ only in a toleration key, found to share a derived id.
const [p1, p2] = collision((i) => poolId({ key: key('ml', `t${i}`), nodeSelector: { pool: 'gpu' } }));
// Two images whose readable part is the same and whose canonical references share a hash.
const [c1, c2] = collision((i) => imageContainerName(ref(`docker.io/r${i}/app:1`)));
// Two long pull secret names cut to the same head, whose volume names share a hash.
const SECRET = `registry-credentials-for-the-${'x'.repeat(30)}`;
const [s1, s2] = collision((i) => pullSecretVolumeName(`${SECRET}-${i}`));

function ref(text: string) {
  const r = parseImageRef(text);
  if (!r.ok) throw new Error(r.error);
  return r.ref;
}

describe('name collisions are refused, naming both sources', () => {
  it('the brute force found real collisions of the current 32-bit hash', () => {
    expect(shortHash(key('ml', `t${p1}`))).toBe(shortHash(key('ml', `t${p2}`)));
    expect(imageContainerName(ref(`docker.io/r${c1}/app:1`))).toBe(imageContainerName(ref(`docker.io/r${c2}/app:1`)));
    expect(dnsLabel(`pull-secret-${SECRET}-${s1}`)).toBe(dnsLabel(`pull-secret-${SECRET}-${s2}`));
  });

  const explicit = (id: string) => `  cacheSpec:\n  - pool: ${id}\n    images: [redis:7]\n`;
  const derived = poolId({ key: poolKey('ml', { nodeSelector: { tier: 'web' }, tolerations: [] }), nodeSelector: { tier: 'web' } });
  const web = '  cacheSpec:\n  - images: [redis:7]\n    nodeSelector: {tier: web}\n';

  it.each([
    {
      case: 'two derived pool ids in one namespace (hash collision): one DaemonSet, one node label',
      files: [cache('a.yaml', 'a', 'ml', tolerating(`t${p1}`)), cache('b.yaml', 'b', 'ml', tolerating(`t${p2}`))],
      expected: [
        /^b\.yaml:6:5: error: document 1: spec\.cacheSpec\[0\]: this pool gets id "gpu-[0-9a-f]{8}", as does the pool of ImageCache ml\/a \(a\.yaml:6:5 spec\.cacheSpec\[0\]\): both would use node label prewarm\.dev\/gpu-[0-9a-f]{8} and DaemonSet ml\/prewarm-gpu-[0-9a-f]{8}/,
      ],
    },
    {
      case: 'an explicit pool name equal to an id derived in the same namespace',
      files: [cache('a.yaml', 'a', 'ml', web), cache('b.yaml', 'b', 'ml', explicit(derived))],
      expected: [
        new RegExp(
          `^b\\.yaml:6:5: error: .*this pool gets id "${derived}", as does the pool of ImageCache ml/a \\(a\\.yaml:6:5 .*and DaemonSet ml/prewarm-${derived},`,
        ),
      ],
    },
    {
      case: 'an explicit pool name equal to an id derived in another namespace: only the node label is shared',
      files: [cache('a.yaml', 'a', 'ml', web), cache('b.yaml', 'b', 'other', explicit(derived))],
      expected: [new RegExp(`^b\\.yaml:6:5: error: .*both would use node label prewarm\\.dev/${derived}, and one would overwrite`)],
    },
    {
      case: 'two images of one pool with the same container name (hash collision)',
      files: [cache('a.yaml', 'a', 'ml', `  cacheSpec:\n  - images: [docker.io/r${c1}/app:1, docker.io/r${c2}/app:1]\n`)],
      // Burst pullers are numbered lanes (src/synth/lanes.ts), so their names never collide.
      expected: [
        /^a\.yaml:6:5: error: document 1: spec\.cacheSpec\[0\]\.images\[[01]\]: image "docker\.io\/r\d+\/app:1" gets container name "app-1-[0-9a-f]{8}", as does "docker\.io\/r\d+\/app:1" \(a\.yaml:6:5 spec\.cacheSpec\[0\]\.images\[[01]\]\), in DaemonSet ml\/prewarm-all-[0-9a-f]{8}; the apiserver would refuse the pod/,
      ],
    },
    {
      case: 'the colliding images in two ImageCaches that feed one pool',
      files: [
        cache('a.yaml', 'a', 'ml', `  cacheSpec:\n  - images: [docker.io/r${c1}/app:1]\n`),
        cache('b.yaml', 'b', 'ml', `  cacheSpec:\n  - images: [busybox:1, docker.io/r${c2}/app:1]\n`),
      ],
      expected: [
        /^[ab]\.yaml:6:5: error: .*container name "app-1-[0-9a-f]{8}", as does .* \([ab]\.yaml:6:5 spec\.cacheSpec\[0\]\.images\[[01]\]\)/,
      ],
    },
    {
      case: 'two pull secrets of a refreshing pool with the same volume name (hash collision)',
      files: [
        cache(
          'a.yaml',
          'a',
          'ml',
          `  cacheSpec:\n  - images: [redis:7]\n  imagePullSecrets: [{name: ${SECRET}-${s1}}, {name: ${SECRET}-${s2}}]\n  refresh: {interval: 1h}\n`,
        ),
      ],
      expected: [
        /^a\.yaml:6:5: error: .*the pull secrets ".*" and ".*" of this pool \(ImageCaches ml\/a\) both get volume name "pull-secret-registry-credentials-for-the-x+-[0-9a-f]{8}" in the sidecar/,
      ],
    },
  ])('$case', ({ files, expected }) => {
    const got = refusal(files);
    expect(got).toHaveLength(expected.length);
    expected.forEach((pattern, i) => expect(got[i]).toMatch(pattern));
  });

  it('lets the colliding pull secrets pass when nothing mounts them (no sidecar, or no refresh)', () => {
    const spec = (refresh: string) =>
      `  cacheSpec:\n  - images: [redis:7]\n  imagePullSecrets: [{name: ${SECRET}-${s1}}, {name: ${SECRET}-${s2}}]\n${refresh}`;
    expect(() => synthYaml(bundleOfFiles([cache('a.yaml', 'a', 'ml', spec('  refresh: {interval: 1h}\n'))]))).not.toThrow();
    expect(() => synthYaml(bundleOfFiles([cache('a.yaml', 'a', 'ml', spec(''))]), sidecar)).not.toThrow();
  });

  it('the CLI exits 1 naming both files, and writes nothing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-collide-'));
    await mkdir(join(dir, 'specs'));
    await writeFile(join(dir, 'specs', 'a.yaml'), cache('', 'a', 'ml', tolerating(`t${p1}`)).text);
    await writeFile(join(dir, 'specs', 'b.yaml'), cache('', 'b', 'ml', tolerating(`t${p2}`)).text);
    let stderr = '';
    const code = await run(['synth', join(dir, 'specs'), '-o', join(dir, 'out')], {
      stdout: () => undefined,
      stderr: (t) => (stderr += t),
    });
    expect(code).toBe(1);
    expect(stderr).toContain(`${join(dir, 'specs', 'b.yaml')}:6:5: error:`);
    expect(stderr).toContain(`ImageCache ml/a (${join(dir, 'specs', 'a.yaml')}:6:5 spec.cacheSpec[0])`);
    expect(stderr).toContain('prewarm: 1 error found; nothing was written');
    expect(await readdir(dir)).toEqual(['specs']);
  });
});

describe("a node selector on the pool's own state label", () => {
  const own = (selector: string) =>
    cache('specs/own.yaml', 'own', 'ml', `  cacheSpec:\n  - pool: gpu\n    images: [redis:7]\n    nodeSelector: ${selector}\n`);

  it('is refused with the reason, at the entry of each ImageCache that feeds the pool', () => {
    for (const selector of ['{prewarm.dev/gpu: warm}', '{prewarm.dev/gpu: partial, tier: gpu}', '{prewarm.dev/gpu: ""}']) {
      expect(refusal([own(selector)]), selector).toEqual([
        'specs/own.yaml:6:5: error: document 1: spec.cacheSpec[0].nodeSelector: the node selector names prewarm.dev/gpu, ' +
          "the pool's own state label, which its sidecar sets only on nodes where the pool already runs: the pool would never get a pod " +
          'onto a node without it, and never turn a node warm; select on a label the node has when it joins',
      ]);
    }
  });

  it("is allowed on another pool's label (a pool that follows another)", () => {
    expect(() => synthYaml(bundleOfFiles([own('{prewarm.dev/cpu: warm}')]), sidecar)).not.toThrow();
  });

  it('validate refuses it as synth does (exit 1)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-own-'));
    await writeFile(join(dir, 'own.yaml'), own('{prewarm.dev/gpu: warm}').text);
    let stderr = '';
    const code = await run(['validate', dir], { stdout: () => undefined, stderr: (t) => (stderr += t) });
    expect(code, stderr).toBe(1);
    expect(stderr).toContain("spec.cacheSpec[0].nodeSelector: the node selector names prewarm.dev/gpu, the pool's own state label");
  });
});

describe('gate keys: a spec chooses only prewarm.dev/ keys; the invocation allows others', () => {
  const gated = (taintKey: string, tolerations = '[]') =>
    cache(
      'specs/gate.yaml',
      'gate',
      'ml',
      `  cacheSpec:\n  - pool: gpu\n    images: [redis:7]\n    tolerations: ${tolerations}\n  gate:\n    deadline: 5m\n    taintKey: ${taintKey}\n`,
    );

  it('refuses a control-plane key at spec.gate.taintKey, naming the pool and why no flag allows it', () => {
    const lines = refusal([gated('node-role.kubernetes.io/control-plane')]);
    expect(lines).toEqual([
      'specs/gate.yaml:11:15: error: document 1: spec.gate.taintKey: pool ml/gpu (specs/gate.yaml:6:5 spec.cacheSpec[0]): gate taint key ' +
        '"node-role.kubernetes.io/control-plane" is a taint that Kubernetes itself sets and lifts; prewarm never removes it, whatever --allow-gate-key says',
    ]);
  });

  it('refuses a reserved key without an allowance, and names the flag that allows it', () => {
    const ca = 'startup-taint.cluster-autoscaler.kubernetes.io/prewarm';
    expect(refusal([gated(ca)])).toEqual([
      `specs/gate.yaml:11:15: error: document 1: spec.gate.taintKey: pool ml/gpu (specs/gate.yaml:6:5 spec.cacheSpec[0]): gate taint key "${ca}" ` +
        'is under kubernetes.io, reserved for Kubernetes: the sidecar removes this taint from nodes, so only the synth invocation may allow it ' +
        `(--allow-gate-key ${ca}, or a prefix such as --allow-gate-key startup-taint.cluster-autoscaler.kubernetes.io/)`,
    ]);
    const yaml = synthYaml(bundleOfFiles([gated(ca)]), {
      ...sidecar,
      allowedGateKeys: ['startup-taint.cluster-autoscaler.kubernetes.io/'],
    });
    expect(yaml).toContain(`value: ${ca}`);
    expect(yaml).toContain(`the prewarm reconciler may only remove the gating taints ${ca}`);
  });

  it("refuses a key the pool's own tolerations tolerate, even when allowed", () => {
    const lines = refusal([gated('nvidia.com/gpu', '[{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]')], {
      ...sidecar,
      allowedGateKeys: ['nvidia.com/gpu'],
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(
      'spec.gate.taintKey: pool ml/gpu (specs/gate.yaml:6:5 spec.cacheSpec[0]): the pool tolerates nvidia.com/gpu:NoSchedule',
    );
  });

  it('a toleration with an empty key and Exists tolerates every key: refused for a key outside prewarm.dev/, even when allowed', () => {
    for (const tolerations of [
      '[{key: "", operator: Exists}]',
      '[{operator: Exists}]',
      '[{key: "", operator: Exists, effect: NoSchedule}]',
    ]) {
      const lines = refusal([gated('example.com/cold', tolerations)], { ...sidecar, allowedGateKeys: ['example.com/'] });
      expect(lines, tolerations).toHaveLength(1);
      expect(lines[0], tolerations).toContain(
        'spec.gate.taintKey: pool ml/gpu (specs/gate.yaml:6:5 spec.cacheSpec[0]): the pool tolerates every taint, so gate taint key "example.com/cold"',
      );
    }
  });

  it('an empty-key toleration of another effect leaves the gate key its own; every toleration reaches the DaemonSet', () => {
    const yaml = synthYaml(
      bundleOfFiles([gated('example.com/cold', '[{key: "", operator: Exists, effect: NoExecute, tolerationSeconds: 60}]')]),
      {
        ...sidecar,
        allowedGateKeys: ['example.com/'],
      },
    );
    const ds = parseAllDocuments(yaml)
      .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string }; spec?: { template: { spec: { tolerations: unknown } } } })
      .find((m) => m.kind === 'DaemonSet' && m.metadata?.name === 'prewarm-gpu');
    expect(ds?.spec?.template.spec.tolerations).toEqual([
      { operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 },
      { key: 'example.com/cold', operator: 'Exists' },
    ]);
  });

  it('an empty-key toleration keeps the default prewarm.dev/ gate, and tolerates the gate taint without a second toleration', () => {
    const yaml = synthYaml(bundleOfFiles([gated('prewarm.dev/warming', '[{key: "", operator: Exists}]')]), sidecar);
    const ds = parseAllDocuments(yaml)
      .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string }; spec?: { template: { spec: { tolerations: unknown } } } })
      .find((m) => m.kind === 'DaemonSet' && m.metadata?.name === 'prewarm-gpu');
    expect(ds?.spec?.template.spec.tolerations).toEqual([{ operator: 'Exists' }]);
  });

  it('refuses each pool on its own, pointing at its own ImageCache', () => {
    const other = cache(
      'specs/other.yaml',
      'other',
      'ml',
      '  cacheSpec:\n  - images: [redis:7]\n    nodeSelector: {tier: web}\n  gate: {taintKey: nvidia.com/gpu}\n',
    );
    expect(refusal([gated('prewarm.dev/warming'), other])).toEqual([
      expect.stringContaining('specs/other.yaml:8:20: error: document 1: spec.gate.taintKey: pool ml/web-'),
    ]);
  });

  it('an allowed key reaches the sidecar, pools.json and the policy; kube-fledged input keeps its default gate', () => {
    const fledged: SourceFile = {
      path: 'kf.yaml',
      text: 'apiVersion: kubefledged.io/v1alpha2\nkind: ImageCache\nmetadata: {name: kf, namespace: kf}\nspec:\n  cacheSpec: [{images: [nginx:1]}]\n',
    };
    const yaml = synthYaml(bundleOfFiles([gated('example.com/cold'), fledged]), { ...sidecar, allowedGateKeys: ['example.com/'] });
    expect(yaml).toContain("o.key in ['example.com/cold', 'prewarm.dev/warming']");
  });

  it('the library refuses an allowance that is no key or prefix, or that names a Kubernetes node taint', () => {
    const bundle = bundleOfFiles([gated('prewarm.dev/warming')]);
    expect(() => synthYaml(bundle, { ...sidecar, allowedGateKeys: ['node.kubernetes.io/'] })).toThrow(
      'allowedGateKeys: "node.kubernetes.io/" names taints that Kubernetes itself sets and lifts',
    );
    expect(() => synthYaml(bundle, { ...sidecar, allowedGateKeys: ['not a key'] })).toThrow(
      'allowedGateKeys: "not a key" is neither a taint key',
    );
  });

  it('the CLI: synth and validate refuse alike (exit 1), --allow-gate-key allows (exit 0), a bad allowance is a usage error (exit 2)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'prewarm-gate-'));
    await writeFile(join(dir, 'gate.yaml'), gated('startup-taint.cluster-autoscaler.kubernetes.io/prewarm').text);
    const runs = async (...args: string[]) => {
      const stderr: string[] = [];
      const code = await run(args, { stdout: () => undefined, stderr: (s) => stderr.push(s) });
      return { code, stderr: stderr.join('') };
    };
    for (const command of ['synth', 'validate']) {
      const extra = command === 'synth' ? ['--stdout'] : [];
      const refused = await runs(command, dir, ...extra);
      expect(refused.code, refused.stderr).toBe(1);
      expect(refused.stderr).toContain('reserved for Kubernetes');
      const allowed = await runs(
        command,
        dir,
        ...extra,
        '--allow-gate-key',
        'startup-taint.cluster-autoscaler.kubernetes.io/',
        '--allow-gate-key',
        'x.example/',
      );
      expect(allowed.code, allowed.stderr).toBe(0);
      const usage = await runs(command, dir, ...extra, '--allow-gate-key', 'node-role.kubernetes.io/control-plane');
      expect(usage.code).toBe(2);
      expect(usage.stderr).toContain(
        '--allow-gate-key "node-role.kubernetes.io/control-plane" names taints that Kubernetes itself sets and lifts',
      );
    }
  });
});
