/**
 * Dev-cluster CLI of the prewarm test harness (run as root):
 *   npm run cluster -- up [--no-kwok] [--nodes N] [--audit-log] [--registry-profile loopback|remote[:conn=24MiB,node=96MiB,upstream=96MiB,rtt=50ms]]
 *   npm run cluster -- registry-profile [PROFILE]   (show, or switch a running cluster's)
 *   npm run cluster -- down [--purge]
 *   npm run cluster -- status
 *   npm run cluster -- add-node NAME [--label k=v]... [--taint k=v:Effect]... [--image-gc-high P --image-gc-low P --image-gc-min-age D] [--serialize-image-pulls] [--cni-stand-in] [--cni-delay S] [--cni-fail-for S]
 *   npm run cluster -- remove-node NAME
 *   npm run cluster -- images NODE
 *   npm run cluster -- kubeconfig
 *   npm run cluster -- fake-nodes N [--prefix fake] [--label k=v]... [--no-taint]
 *   npm run cluster -- push-image REF [--rootfs DIR|TAR] [--cmd ARG]... [--user UID] [--size-mb N]
 */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import {
  ADMIN_KUBECONFIG,
  addNode,
  down,
  images,
  parseLabel,
  parseTaint,
  registryProfile,
  removeNode,
  setRegistryProfile,
  status,
  up,
} from './cluster.js';
import { describeProfile, parseRegistryProfile } from './registry-profile.js';
import { buildImageFromRootfs, ensureStandIn } from './images.js';
import { createFakeNodes, deleteFakeNodes } from './kwok.js';

function labels(v: unknown): Record<string, string> {
  return Object.fromEntries(strings(v).map(parseLabel));
}
function strings(v: unknown): string[] {
  // yargs hands over a scalar (string, number or boolean) or an array of them.
  const scalar = v as string | number | boolean | undefined;
  return Array.isArray(v) ? v.map(String) : scalar === undefined ? [] : [String(scalar)];
}

await yargs(hideBin(process.argv))
  .scriptName('cluster')
  .command(
    'up',
    'start (or reuse) the control plane, registries and kwok',
    (y) =>
      y
        .option('kwok', { type: 'boolean', default: true })
        .option('nodes', { type: 'number', default: 0, describe: 'real nodes to add (node-1..N) if absent' })
        .option('audit-log', {
          type: 'boolean',
          default: false,
          describe: 'start the apiserver with a Metadata-level audit log (control-plane/audit.log)',
        })
        .option('registry-profile', {
          type: 'string',
          default: 'loopback',
          describe:
            'loopback, or remote (per-connection and per-node caps, RTT; remote:conn=24MiB,node=96MiB,rtt=50ms to change them, upstream=96MiB to add a link all nodes share)',
        }),
    async (a) => {
      await up({ kwok: a.kwok, auditLog: a['audit-log'], registryProfile: parseRegistryProfile(a['registry-profile']) });
      for (let i = 1; i <= a.nodes; i++) {
        const name = `node-${i}`;
        if (!(await status()).nodes.includes(name)) await addNode(name);
      }
      console.log(ADMIN_KUBECONFIG);
    },
  )
  .command(
    'down',
    'stop everything and delete cluster state (keeps certs and registry images unless --purge)',
    (y) => y.option('purge', { type: 'boolean', default: false }),
    async (a) => {
      await down({ purge: a.purge });
    },
  )
  .command(
    'registry-profile [profile]',
    "show the registry profile, or switch a running cluster's (nodes see it at their next pull)",
    (y) => y.positional('profile', { type: 'string' }),
    async (a) => {
      if (a.profile !== undefined) await setRegistryProfile(parseRegistryProfile(a.profile));
      console.log(describeProfile(registryProfile()));
    },
  )
  .command('status', 'show daemons and nodes', {}, async () => {
    const s = await status();
    console.log(`apiserver: ${s.up ? 'ready' : 'down'}   hub netns: ${s.hub ? 'yes' : 'no'}   kubeconfig: ${s.kubeconfig}`);
    console.log(`registry profile: ${s.registryProfile}`);
    for (const [name, pid] of Object.entries(s.daemons)) console.log(`  ${pid ? String(pid).padStart(7) : '   dead'}  ${name}`);
    if (s.nodes) console.log(s.nodes);
  })
  .command(
    'add-node <name>',
    'add a real node (netns + containerd + kubelet + kube-proxy) and wait for Ready',
    (y) =>
      y
        .positional('name', { type: 'string', demandOption: true })
        .option('label', { type: 'string', array: true, describe: 'k=v (repeatable)' })
        .option('taint', { type: 'string', array: true, describe: 'k[=v]:Effect (repeatable)' })
        .option('image-gc-high', { type: 'number' })
        .option('image-gc-low', { type: 'number' })
        .option('image-gc-min-age', { type: 'string' })
        .option('image-gc-max-age', { type: 'string' })
        .option('serialize-image-pulls', { type: 'boolean', describe: 'the kubelet pulls one image at a time (default: parallel)' })
        .option('cni-stand-in', {
          type: 'boolean',
          describe: 'join without a CNI config: a host-network pod pulls its image, then writes it (the network start-up window)',
        })
        .option('cni-delay', {
          type: 'number',
          describe: 'seconds the CNI stand-in waits before it writes the config (implies --cni-stand-in)',
        })
        .option('cni-fail-for', {
          type: 'number',
          describe: 'seconds the CNI stand-in fails (exit 1, restarted with back-off) (implies --cni-stand-in)',
        })
        .option('v', { type: 'number', default: 1, describe: 'kubelet verbosity' }),
    async (a) => {
      const gc: Record<string, number | string> = {};
      if (a['image-gc-high'] !== undefined) gc['highThresholdPercent'] = a['image-gc-high'];
      if (a['image-gc-low'] !== undefined) gc['lowThresholdPercent'] = a['image-gc-low'];
      if (a['image-gc-min-age'] !== undefined) gc['minimumGcAge'] = a['image-gc-min-age'];
      if (a['image-gc-max-age'] !== undefined) gc['maximumGcAge'] = a['image-gc-max-age'];
      const t0 = Date.now();
      await addNode(a.name, {
        labels: labels(a.label),
        taints: strings(a.taint).map(parseTaint),
        imageGc: gc,
        verbosity: a.v,
        ...(a['serialize-image-pulls'] === undefined ? {} : { serializeImagePulls: a['serialize-image-pulls'] }),
        ...(a['cni-stand-in'] === true || a['cni-delay'] !== undefined || a['cni-fail-for'] !== undefined
          ? {
              cniStandIn: {
                ...(a['cni-delay'] === undefined ? {} : { delaySeconds: a['cni-delay'] }),
                ...(a['cni-fail-for'] === undefined ? {} : { failSeconds: a['cni-fail-for'] }),
              },
            }
          : {}),
      });
      console.log(`node ${a.name} Ready in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
    },
  )
  .command(
    'remove-node <name>',
    'stop a real node and delete it',
    (y) => y.positional('name', { type: 'string', demandOption: true }),
    async (a) => {
      await removeNode(a.name);
    },
  )
  .command(
    'images <node>',
    "list the images in a real node's containerd",
    (y) => y.positional('node', { type: 'string', demandOption: true }),
    (a) => {
      for (const i of images(a.node)) console.log(i);
    },
  )
  .command('kubeconfig', 'print the admin kubeconfig path', {}, () => {
    console.log(ADMIN_KUBECONFIG);
  })
  .command(
    'fake-nodes <count>',
    'create COUNT kwok fake nodes (0 deletes them)',
    (y) =>
      y
        .positional('count', { type: 'number', demandOption: true })
        .option('prefix', { type: 'string', default: 'fake' })
        .option('label', { type: 'string', array: true })
        .option('taint', { type: 'boolean', default: true }),
    (a) => {
      if (a.count === 0) deleteFakeNodes(ADMIN_KUBECONFIG, a.prefix);
      else createFakeNodes(ADMIN_KUBECONFIG, a.count, { prefix: a.prefix, labels: labels(a.label), taint: a.taint });
    },
  )
  .command(
    'push-image <ref>',
    'push an image to the local registry: from a rootfs dir/tarball, or a small stand-in',
    (y) =>
      y
        .positional('ref', { type: 'string', demandOption: true })
        .option('rootfs', { type: 'string' })
        .option('cmd', { type: 'string', array: true })
        .option('entrypoint', { type: 'string', array: true })
        .option('user', { type: 'string' })
        .option('env', { type: 'string', array: true })
        .option('size-mb', { type: 'number', describe: 'stand-in: add a random data layer of N MiB' }),
    (a) => {
      if (a.rootfs) {
        buildImageFromRootfs({
          rootfs: a.rootfs,
          ref: a.ref,
          config: {
            ...(a.cmd ? { cmd: strings(a.cmd) } : {}),
            ...(a.entrypoint ? { entrypoint: strings(a.entrypoint) } : {}),
            ...(a.user ? { user: a.user } : {}),
            ...(a.env ? { env: strings(a.env) } : {}),
          },
        });
      } else {
        ensureStandIn(a.ref, { force: true, ...(a['size-mb'] ? { sizeBytes: a['size-mb'] * 1024 * 1024 } : {}) });
      }
      console.log(`pushed ${a.ref}`);
    },
  )
  .demandCommand(1)
  .strict()
  .showHelpOnFail(false)
  .fail((msg, err) => {
    console.error(err ? (err.stack ?? err.message) : msg);
    process.exit(1);
  })
  .help()
  .parseAsync();
