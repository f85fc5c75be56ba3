/** Writes docs/spec.md from the ImageCache field shapes: `npm run docs:spec`. */
import { writeFileSync } from 'node:fs';
import { specReference } from '../src/imagecache/spec-reference.js';

writeFileSync(new URL('../docs/spec.md', import.meta.url), specReference());
