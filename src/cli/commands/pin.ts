/** `prewarm pin`: resolve tags to digests against the registries and rewrite the spec files in place. */
import type { Argv } from 'yargs';
import { askRegistries, OciRegistry, registryHost, registryRef } from '../../oci/client.js';
import { DockerConfigError, loadRegistryCredentials, type RegistryCredentials } from '../../oci/docker-config.js';
import { ApiError } from '../../http/api-error.js';
import { formatDiagnostics, type Diagnostic } from '../../imagecache/errors.js';
import { plural } from '../../text/plural.js';
import { readSources } from '../../imagecache/load.js';
import { parseFiles } from '../../imagecache/parse.js';
import { applyPins, findImages, needsPin, pinnedRef, type ImageSite } from '../../imagecache/pin.js';
import { checkPlatform, DEFAULT_LOCK_PLATFORM, LOCK_FILE } from '../../imagecache/sizes.js';
import { parseImageRef } from '../../oci/reference.js';
import { planLocks, recordSizes } from './pin-sizes.js';
import { CliError, ExitCode } from '../exit-codes.js';
import type { Io } from '../io.js';
import { readEditable, writeAll, type EditableFile } from '../rewrite.js';
import { VERSION } from '../../version.js';
import { checkOptions, deadlineOption, deadlineSignal, durationMs, isPath, isRegistry, requestTimeoutOption } from './common.js';

interface PinArgs {
  readonly paths: readonly string[];
  readonly dryRun?: boolean | undefined;
  readonly plainHttp?: readonly string[] | undefined;
  readonly dockerConfig?: string | undefined;
  readonly requestTimeout: string;
  readonly sizes: boolean;
  readonly platform: string;
  readonly deadline: string;
}

/** Registers the command. */
export function pinCommand(io: Io) {
  return {
    command: 'pin <paths..>',
    describe: 'Resolve image tags to digests (tag@sha256:…) and rewrite the spec files, keeping their formatting',
    builder: pinOptions,
    handler: (args: PinArgs) => pin(io, args),
  };
}

/** The command's options and examples. */
function pinOptions(y: Argv) {
  return (
    deadlineOption(
      requestTimeoutOption(checkOptions(y, { 'plain-http': isRegistry, 'docker-config': isPath, platform: checkPlatform }, ['plain-http'])),
      'resolving the tags',
    )
      .positional('paths', { type: 'string', array: true, demandOption: true, describe: 'Spec files or folders' })
      .option('dry-run', { type: 'boolean', describe: 'Print what would change; write nothing' })
      .option('sizes', {
        type: 'boolean',
        default: true,
        describe: `Record each image's size in ${LOCK_FILE} beside the specs, for synth to split pullers by bytes (--no-sizes: only pin)`,
      })
      .option('platform', {
        type: 'string',
        default: DEFAULT_LOCK_PLATFORM,
        describe: 'The platform (os/arch) whose manifest sizes are recorded',
      })
      // nargs 1: an array option is greedy otherwise, and `--plain-http HOST specs/` would take specs/ as a host.
      .option('plain-http', {
        type: 'string',
        array: true,
        nargs: 1,
        describe: 'A registry (host:port) spoken to over plain HTTP; repeat for more',
      })
      .option('docker-config', {
        type: 'string',
        describe:
          'Docker config with registry credentials (auths, credHelpers, credsStore) [default: $DOCKER_CONFIG/config.json or ~/.docker/config.json]',
      })
      .example('$0 pin specs/ --dry-run', 'show the digests each tag would be pinned to')
      .example('NODE_EXTRA_CA_CERTS=ca.pem $0 pin specs/', 'pin against a registry with a private CA')
      .example('$0 pin --plain-http localhost:5000 specs/', 'a plain-HTTP registry')
  );
}

/** The spec files' image references: all of them, and those still to pin. */
interface FoundImages {
  readonly sites: readonly { readonly file: EditableFile; readonly sites: readonly ImageSite[] }[];
  readonly pending: readonly ImageSite[];
  readonly wanted: readonly string[];
  readonly all: readonly string[];
}

/** Prints diagnostics to stderr, one line each. */
function printDiagnostics(io: Io, list: readonly Diagnostic[]): void {
  for (const line of formatDiagnostics(list)) io.stderr(`${line}\n`);
}

/** Pins every tag in the specs, or writes nothing; then records the images' sizes unless --no-sizes. */
async function pin(io: Io, args: PinArgs): Promise<void> {
  const { sites, pending, wanted, all } = await findImageSites(io, args);
  if (wanted.length === 0 && (!args.sizes || all.length === 0)) {
    io.stderr('nothing to pin: every image reference has a digest\n');
    return;
  }
  const signal = deadlineSignal(args.deadline);
  const credentials = await loadRegistryCredentials(args.dockerConfig).catch((err: unknown) => {
    // The user's docker setup is wrong, not a registry: the command line must change.
    throw err instanceof DockerConfigError ? new CliError(err.message, ExitCode.Usage) : err;
  });
  const registry = new OciRegistry({
    keyring: credentials.keyring,
    userAgent: `prewarm-cli/${VERSION}`,
    plainHttp: new Set(args.plainHttp ?? []),
    timeoutMs: durationMs(args.requestTimeout),
    signal,
  });
  const digests = await resolveDigests(io, args, { pending, wanted }, registry, credentials, signal);

  const changed = sites
    .map(({ file, sites: found }) => ({ file, text: applyPins(file.text, found, digests) }))
    .filter((c) => c.text !== c.file.text);
  const after = parseFiles(changed.map((c) => ({ path: c.file.path, text: c.text })));
  const broken = after.diagnostics.filter((d) => d.severity === 'error');
  if (broken.length > 0) throw new CliError(`pinned specs would be invalid:\n${formatDiagnostics(broken).join('\n')}`, ExitCode.Internal);

  // The change list is the command's result: stdout, one line per place, in file order, and
  // only once it is true (after the write, or for --dry-run).
  const changes = pending.map(
    (s) => `${s.location.file}:${s.location.line}:${s.location.column}: ${s.text} -> ${pinnedRef(s.text, digests.get(s.text) as string)}\n`,
  );
  const summary = `${pending.length} reference(s) of ${wanted.length} image(s) in ${changed.length} file(s)`;
  const record = async (): Promise<void> => {
    if (!args.sizes) return;
    const pinnedFiles = sites.map(({ file, sites: found }) => ({
      path: file.path,
      references: found.flatMap((x) => {
        const digest = digests.get(x.text);
        return needsPin(x.text) ? (digest === undefined ? [] : [pinnedRef(x.text, digest)]) : [x.text];
      }),
    }));
    const [os, architecture] = args.platform.split('/') as [string, string];
    await recordSizes(await planLocks(args.paths, pinnedFiles), {
      registry,
      bounds: { signal, prepare: (host) => credentials.prepare(host, signal) },
      platform: { os, architecture },
      dryRun: args.dryRun === true,
      io,
    });
  };
  if (wanted.length === 0) {
    io.stderr('nothing to pin: every image reference has a digest\n');
    await record();
    return;
  }
  if (args.dryRun === true) {
    for (const line of changes) io.stdout(line);
    io.stderr(`would pin ${summary}; nothing was written (--dry-run)\n`);
    await record();
    return;
  }
  await writeAll(changed);
  for (const line of changes) io.stdout(line);
  io.stderr(`pinned ${summary}\n`);
  await record();
}

/** Reads and checks the specs, and finds their image references; throws on any that cannot be pinned in place. */
async function findImageSites(io: Io, args: PinArgs): Promise<FoundImages> {
  const diagnostics: Diagnostic[] = [];
  const files = await readSources(args.paths, diagnostics);
  const parsed = parseFiles(files);
  for (const d of parsed.diagnostics) if (d.severity === 'error') diagnostics.push(d);
  printDiagnostics(io, diagnostics);
  if (diagnostics.length > 0) throw new CliError(`${diagnostics.length} error(s) found; nothing was pinned`, ExitCode.InvalidInput);
  // Like synth: a path that holds no spec at all is a mistake, not a success.
  if (parsed.caches.length === 0)
    throw new CliError(`no ImageCache found in ${args.paths.join(', ')}; nothing was pinned`, ExitCode.InvalidInput);

  // Read again as bytes to be kept (see rewrite.ts): the loader's text has U+FFFD for non-UTF-8 bytes.
  const editable = await Promise.all(files.map((f) => readEditable(f.path)));
  const sites = editable.map((f) => ({ file: f, sites: findImages(f.text, f.path) }));
  const unpinned = sites.flatMap((s) => s.sites).filter((s) => needsPin(s.text));
  // A tag that stays unpinned while pin reports success is the failure pin exists to prevent:
  // a reference it cannot rewrite in place is an error, and nothing is written.
  const stuck = unpinned.filter((u) => !u.literal);
  if (stuck.length > 0) {
    printDiagnostics(
      io,
      stuck.map((s) => ({
        ...s.location,
        severity: 'error' as const,
        message:
          s.alias === undefined
            ? `cannot pin ${s.text}: it is a block scalar or has escape sequences, so it cannot be rewritten in place; write it as a plain or quoted string`
            : `cannot pin ${s.text}: given through ${s.alias.merge ? 'a merge key' : 'an alias'} at ${s.location.file}:${s.location.line} (*${s.alias.anchor}, whose value is written at line ${s.alias.anchorLine}, outside the image fields); write the reference in place of the ${s.alias.merge ? 'merge key' : 'alias'}`,
      })),
    );
    throw new CliError(`${plural(stuck.length, 'image reference')} cannot be pinned in place; nothing was pinned`, ExitCode.InvalidInput);
  }
  const pending = unpinned;
  const wanted = [...new Set(pending.map((s) => s.text))].sort();
  const all = sites.flatMap((s) => s.sites.filter((x) => parseImageRef(x.text).ok).map((x) => x.text));
  return { sites, pending, wanted, all };
}

/** Each wanted tag's digest; throws, naming every place of a failed image, unless all resolve. */
async function resolveDigests(
  io: Io,
  args: PinArgs,
  { pending, wanted }: Pick<FoundImages, 'pending' | 'wanted'>,
  registry: OciRegistry,
  credentials: RegistryCredentials,
  signal: AbortSignal,
): Promise<Map<string, string>> {
  const digests = new Map<string, string>();
  const failures = new Map<string, string>();
  const asked = await askRegistries(
    wanted,
    (ref) => ref,
    (ref) => registry.digest(ref),
    { signal, prepare: (host) => credentials.prepare(host, signal) },
  );
  const helperFailure = asked.find((a) => a.kind === 'failed' && a.error instanceof DockerConfigError);
  // A credential helper that is missing or broken is the user's setup, as a bad docker config is.
  if (helperFailure?.kind === 'failed') throw new CliError((helperFailure.error as Error).message, ExitCode.Usage);
  asked.forEach((a, i) => {
    const ref = wanted[i] as string;
    if (a.kind === 'answered') digests.set(ref, a.value);
    else if (a.kind === 'failed') failures.set(ref, explain(ref, a.error, credentials));
    else if (a.kind === 'deadline') failures.set(ref, `not resolved: the run's deadline (--deadline ${args.deadline}) passed first`);
    else failures.set(ref, `not tried: ${a.host} did not answer the request for ${a.first} earlier in this run`);
  });
  if (failures.size > 0) {
    // Every place that names a failed image, so the user can jump to each.
    printDiagnostics(
      io,
      pending.flatMap((s) => {
        const why = failures.get(s.text);
        return why === undefined ? [] : [{ ...s.location, severity: 'error' as const, message: `cannot pin ${s.text}: ${why}` }];
      }),
    );
    throw new CliError(`${failures.size} image(s) could not be resolved; nothing was written`, ExitCode.Unresolved);
  }
  return digests;
}

/** One line on why `ref` has no digest, naming the registry, with the fix when there is an obvious one. */
function explain(ref: string, err: unknown, credentials: RegistryCredentials): string {
  const { domain, path: repository, tag } = registryRef(ref);
  const registry = registryHost(domain);
  if (!(err instanceof ApiError)) return `${registry}: ${(err as Error).message}`;
  switch (err.code) {
    case 404:
      return `${registry} has no manifest ${repository}:${tag ?? 'latest'} (404: no such tag or repository)`;
    case 401:
    case 403: {
      const source = credentials.found ? `docker config ${credentials.file}` : `docker config (none at ${credentials.file})`;
      return credentials.keyring.lookup(registry, repository) === undefined
        ? `${registry} requires credentials (${err.code}) and the ${source} has none for it; run docker login ${registry}, or pass --docker-config`
        : `${registry} refused the credentials from the ${source} (${err.code})`;
    }
    case 0:
      return /certificate|self[- ]signed|issuer/i.test(err.message)
        ? `${err.message} (a registry with a private CA: set NODE_EXTRA_CA_CERTS to the CA's PEM file)`
        : `${err.message}${/wrong version number|EPROTO/i.test(err.message) ? ` (a plain-HTTP registry: pass --plain-http ${registry})` : ''}`;
    default:
      return err.message.includes(registry) ? err.message : `${registry}: ${err.message}`;
  }
}
