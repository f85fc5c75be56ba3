#!/usr/bin/env node
/** The `prewarm` executable: the thin edge between the process and {@link run}. */
import { run } from './main.js';

// cdk8s reads these at synth time; output must be a function of the specs alone.
delete process.env['CDK8S_DISABLE_SORT'];
delete process.env['CDK8S_LEGACY_HASH'];

process.exitCode = await run(process.argv.slice(2));
