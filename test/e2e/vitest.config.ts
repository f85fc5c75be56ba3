/** Standalone config for running only the e2e tier: npx vitest run --config test/e2e/vitest.config.ts */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { e2eProject } from './projects.js';

export default defineConfig({ root: fileURLToPath(new URL('../..', import.meta.url)), test: { projects: [e2eProject] } });
