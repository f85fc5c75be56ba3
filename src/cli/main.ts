/**
 * The CLI: yargs in strict mode, every failure mapped to an {@link ExitCode}. `run` never calls
 * `process.exit`, so it can be driven by tests with captured streams.
 */
import yargs from 'yargs';
import { VERSION } from '../version.js';
import { synthCommand } from './commands/synth.js';
import { validateCommand } from './commands/validate.js';
import { migrateCommand } from './commands/migrate.js';
import { statusCommand } from './commands/status.js';
import { pinCommand } from './commands/pin.js';
import { doctorCommand } from './commands/doctor.js';
import { specsCommand } from './commands/specs.js';
import { discoverCommand } from './commands/discover.js';
import { asIoError, CliError, ExitCode, isSystemError, UsageError } from './exit-codes.js';
import { processIo, type Io } from './io.js';

/** How the CLI is invoked: as `prewarm`, or by kubectl as the plugin `kubectl prewarm`. */
export type ScriptName = 'prewarm' | 'kubectl prewarm';

/** Runs the CLI with `argv` (without node and script) and returns the exit code. */
export async function run(argv: readonly string[], io: Io = processIo, scriptName: ScriptName = 'prewarm'): Promise<ExitCode> {
  // `--` ends the options: what follows is paths, whatever it looks like.
  const args = withOperands(argv);
  const [synth, validate, migrate, status, pin, doctor, specs, discover] = [
    synthCommand(io),
    validateCommand(io),
    migrateCommand(io),
    statusCommand(io),
    pinCommand(io),
    doctorCommand(io),
    specsCommand(io),
    discoverCommand(io),
  ] as const;
  const names = [synth, validate, migrate, status, pin, doctor, specs, discover].map((c) => c.command.split(' ')[0] as string);
  const parser = yargs(args)
    .command(synth)
    .command(validate)
    .command(migrate)
    .command(status)
    .command(pin)
    .command(doctor)
    .command(specs)
    .command(discover)
    .scriptName(scriptName)
    .usage('$0 <command> [options]\n\nWarm container images on Kubernetes nodes the moment they join.')
    .demandCommand(1, 'name a command')
    .strict()
    .version(VERSION)
    .help()
    .alias('h', 'help')
    .wrap(Math.min(100, process.stderr.columns ?? 100))
    .fail((message, err) => {
      // yargs's own validation comes with a message; throwing stops it running the handler.
      if (err instanceof UsageError || err instanceof CliError) throw err;
      if (message !== null && message !== undefined) throw new UsageError(message);
      throw err;
    })
    .exitProcess(false);
  try {
    // The command comes first (prewarm has no option that takes a value before it). Checked here,
    // because yargs answers `prewarm doctr --help` with the general help and exit 0.
    const given = args.find((a) => !a.startsWith('-'));
    if (given !== undefined && !names.includes(given))
      throw new UsageError(`unknown command ${JSON.stringify(given)}; the commands are ${names.join(', ')}`);
    // yargs drops a bare `-` without a word, so `synth -` would read nothing and say so oddly.
    if (args.includes('-'))
      throw new UsageError(
        '"-" (standard input) is not supported: name spec files or folders (a file named - is ./-, or give it after --)',
      );
    let helpOutput = '';
    await parser.parseAsync(args, {}, (_err, _argv, output) => {
      helpOutput = output;
    });
    // --help and --version print to stdout: they are what the user asked for.
    if (helpOutput !== '') io.stdout(`${helpOutput}\n`);
    return ExitCode.Success;
  } catch (err) {
    return reportFailure(err, io, process.env['PREWARM_DEBUG'] === '1', scriptName);
  }
}

/**
 * `argv` with `--` honoured: yargs re-parses positionals as options, so each operand moves right
 * after the command, and one starting with `-` is spelled `./-…`.
 */
export function withOperands(argv: readonly string[]): string[] {
  const end = argv.indexOf('--');
  if (end < 0) return [...argv];
  const options = argv.slice(0, end);
  const operands = argv.slice(end + 1).map((a) => (a.startsWith('-') ? `./${a}` : a));
  const command = options.findIndex((a) => !a.startsWith('-'));
  if (command < 0) return [...options, ...operands];
  return [...options.slice(0, command + 1), ...operands, ...options.slice(command + 1)];
}

/** Calls whose failure means prewarm could not read; any other failed call is a write. */
const READ_CALLS = new Set(['open', 'read', 'readdir', 'scandir', 'stat', 'lstat', 'readlink', 'realpath', 'access']);

/** The one place a failed command is reported: one stderr line and its exit code; a stack only when `debug`. */
export function reportFailure(failure: unknown, io: Io, debug: boolean, scriptName: ScriptName = 'prewarm'): ExitCode {
  const err = isSystemError(failure)
    ? asIoError(READ_CALLS.has(failure.syscall ?? '') ? 'read' : 'write', failure.path ?? 'a file', failure)
    : failure;
  if (err instanceof UsageError) {
    io.stderr(`prewarm: ${err.message}\nrun "${scriptName} --help" for usage\n`);
    return ExitCode.Usage;
  }
  if (err instanceof CliError) {
    io.stderr(`prewarm: ${err.message}\n`);
    return err.exitCode;
  }
  const message = err instanceof Error ? err.message : String(err);
  const stack = err instanceof Error && err.stack !== undefined ? err.stack : message;
  io.stderr(
    debug
      ? `prewarm: internal error: ${stack}\n`
      : `prewarm: internal error: ${message} (a bug; run with PREWARM_DEBUG=1 for the stack trace)\n`,
  );
  return ExitCode.Internal;
}

/** The body of `prewarm` and `kubectl-prewarm`: sets, never forces, the exit code. */
export async function runProcess(scriptName: ScriptName): Promise<void> {
  // cdk8s reads these at synth time; output must be a function of the specs alone.
  delete process.env['CDK8S_DISABLE_SORT'];
  delete process.env['CDK8S_LEGACY_HASH'];
  process.exitCode = await run(process.argv.slice(2), processIo, scriptName);
}
