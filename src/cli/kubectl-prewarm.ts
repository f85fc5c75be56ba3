#!/usr/bin/env node
/**
 * The `kubectl-prewarm` executable: kubectl runs any `kubectl-<name>` on the PATH for
 * `kubectl <name> ...`, so `kubectl prewarm status` is `prewarm status`. kubectl passes only the
 * arguments after the plugin's name; its own flags (`--context`, `--kubeconfig`) do not reach us,
 * so plugin users pass `--context` after the command, or set KUBECONFIG.
 */
import { runProcess } from './main.js';

await runProcess('kubectl prewarm');
