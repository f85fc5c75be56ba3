/** `prewarm pin`: resolve tags to digests against the registries and rewrite the spec files in place. */
import { readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Argv } from 'yargs';
import { OciRegistry } from '../../reconciler/adapters/registry.js';
import { Keyring } from '../../reconciler/oci.js';
import { formatDiagnostic, type Diagnostic } from '../../spec/errors.js';
import { readSources } from '../../spec/load.js';
import { parseFiles } from '../../spec/parse.js';
import { applyPins, findImages, needsPin } from '../../spec/pin.js';
import { CliError, ExitCode } from '../exit-codes.js';
import type { Io } from '../io.js';

interface PinArgs {
  readonly paths: readonly string[];
  readonly dryRun?: boolean | undefined;
  readonly plainHttp?: readonly string[] | undefined;
  readonly dockerConfig?: string | undefined;
}

/** Registers the command. */
export function pinCommand(io: Io) {
  return {
    command: 'pin <paths..>',
    describe: 'Resolve image tags to digests (tag@sha256:…) and rewrite the spec files, keeping their formatting',
    builder: (y: Argv) =>
      y
        .positional('paths', { type: 'string', array: true, demandOption: true, describe: 'Spec files or folders' })
        .option('dry-run', { type: 'boolean', describe: 'Print what would change; write nothing' })
        .option('plain-http', { type: 'string', array: true, describe: 'Registries (host:port) spoken to over plain HTTP' })
        .option('docker-config', { type: 'string', describe: 'Docker config with registry credentials [default: $DOCKER_CONFIG/config.json or ~/.docker/config.json]' }),
    handler: async (args: PinArgs) => {
      const diagnostics: Diagnostic[] = [];
      const files = await readSources(args.paths, diagnostics);
      diagnostics.push(...parseFiles(files).diagnostics.filter((d) => d.severity === 'error'));
      for (const d of diagnostics) io.stderr(`${formatDiagnostic(d)}\n`);
      if (diagnostics.length > 0) throw new CliError(`${diagnostics.length} error(s) found; nothing was pinned`, ExitCode.InvalidInput);

      const registry = new OciRegistry({ keyring: await loadDockerConfig(args.dockerConfig), plainHttp: new Set(args.plainHttp ?? []) });
      const wanted = [...new Set(files.flatMap((f) => findImages(f.text).map((s) => s.text)).filter(needsPin))].sort();
      const digests = new Map<string, string>();
      const failures: string[] = [];
      // Sequential on purpose: a handful of HEAD requests, and registries rate-limit bursts.
      for (const ref of wanted) {
        try {
          digests.set(ref, await registry.digest(ref));
        } catch (err) {
          failures.push(`${ref}: ${(err as Error).message}`);
        }
      }
      if (failures.length > 0) {
        for (const f of failures) io.stderr(`error: ${f}\n`);
        throw new CliError(`${failures.length} image(s) could not be resolved; nothing was written`, ExitCode.Internal);
      }

      const changed = files.flatMap((f) => {
        const text = applyPins(f.text, findImages(f.text), digests);
        return text === f.text ? [] : [{ path: f.path, text }];
      });
      const after = parseFiles(changed.map((c) => ({ path: c.path, text: c.text })));
      const broken = after.diagnostics.filter((d) => d.severity === 'error');
      if (broken.length > 0) throw new CliError(`pinned specs would be invalid:\n${broken.map(formatDiagnostic).join('\n')}`, ExitCode.Internal);

      for (const ref of wanted) io.stderr(`${args.dryRun === true ? 'would pin' : 'pinned'} ${ref}@${digests.get(ref)}\n`);
      if (args.dryRun === true) return;
      for (const c of changed) {
        // Write beside, then rename: a file is either the old one or the whole new one.
        const tmp = `${c.path}.prewarm-pin.tmp`;
        await writeFile(tmp, c.text);
        await rename(tmp, c.path);
      }
      io.stderr(`${changed.length} file(s) rewritten\n`);
    },
  };
}

/** Credentials from a docker config's `auths`, as `docker login` writes them. */
async function loadDockerConfig(path: string | undefined): Promise<Keyring> {
  const file = path ?? join(process.env['DOCKER_CONFIG'] ?? join(homedir(), '.docker'), 'config.json');
  const keyring = new Keyring();
  try {
    keyring.add(await readFile(file, 'utf8'));
  } catch (err) {
    // No docker config means anonymous pulls only; anything else is worth knowing about.
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || path !== undefined) {
      throw new CliError(`cannot read docker config ${file}: ${(err as Error).message}`, ExitCode.Usage);
    }
  }
  return keyring;
}
