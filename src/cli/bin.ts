#!/usr/bin/env node
/** The `prewarm` executable: the thin edge between the process and {@link runProcess}. */
import { runProcess } from './main.js';

await runProcess('prewarm');
