import { defineConfig } from 'vitest/config';
import { gitopsProject } from './project.js';

/** Runs the gitops project alone: npx vitest run --config test/gitops/vitest.config.ts */
export default defineConfig({ test: { projects: [gitopsProject] } });
