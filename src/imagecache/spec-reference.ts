/**
 * The spec reference, docs/spec.md, rendered from the field shapes of both dialects: every field
 * with its type, default, limits and the dialects that accept it. `npm run docs:spec` writes it,
 * and a unit test fails when the committed file differs.
 */
import { API_VERSIONS, type ApiVersion } from './model.js';
import { ignored, type Field } from './read.js';
import { documentShape } from './shapes.js';

type Fields = Readonly<Record<string, Field<unknown>>>;

const DIALECTS: readonly ApiVersion[] = [API_VERSIONS.kubeFledged, API_VERSIONS.prewarm];

/** The fields under `fields`, depth first, by path; a list's items are `path[]`. */
function walk(fields: Fields, prefix: string, out: Map<string, Field<unknown>>, skipped: Set<string>): void {
  for (const [name, field] of Object.entries(fields)) {
    const path = prefix === '' ? name : `${prefix}.${name}`;
    if (field.read === ignored) {
      skipped.add(path);
      continue;
    }
    out.set(path, field);
    if (field.fields) walk(field.fields, field.doc?.type.startsWith('list of') === true ? `${path}[]` : path, out, skipped);
  }
}

function cell(text: string | undefined): string {
  return text === undefined ? '—' : text.replaceAll('|', '\\|');
}

function row(path: string, field: Field<unknown>, accepted: readonly boolean[]): string {
  const doc = field.doc;
  if (doc === undefined) throw new Error(`spec reference: ${path} has no doc in src/imagecache/shapes.ts`);
  const type = field.required === true ? `${doc.type}, required` : doc.type;
  const dialects = accepted.map((yes) => (yes ? '✓' : '—'));
  return `| \`${path}\` | ${cell(type)} | ${cell(doc.default)} | ${cell(doc.limits)} | ${dialects.join(' | ')} | ${cell(doc.description)} |`;
}

/** docs/spec.md as the shapes define it today. */
export function specReference(): string {
  const byDialect = DIALECTS.map((dialect) => {
    const fields = new Map<string, Field<unknown>>();
    const skipped = new Set<string>();
    walk(documentShape(dialect), '', fields, skipped);
    return { fields, skipped };
  });
  // The superset's order first, so each field stays beside its siblings.
  const paths = [...new Set([...byDialect].reverse().flatMap((d) => [...d.fields.keys()]))];
  const skipped = [...new Set(byDialect.flatMap((d) => [...d.skipped]))];
  const rows = paths.map((path) => {
    const field = byDialect.map((d) => d.fields.get(path)).find((f) => f !== undefined) as Field<unknown>;
    return row(
      path,
      field,
      byDialect.map((d) => d.fields.has(path)),
    );
  });
  return [
    '# ImageCache spec reference',
    '',
    '<!-- Generated from src/imagecache/shapes.ts by `npm run docs:spec`: do not edit by hand. -->',
    '',
    `Every field of an ImageCache in both dialects: \`${API_VERSIONS.kubeFledged}\`, kube-fledged's, read`,
    `unchanged, and \`${API_VERSIONS.prewarm}\`, a superset. A field marked — in a dialect's column is an`,
    'error there, and so is every field not listed. The settings under `spec` other than `cacheSpec` and',
    '`imagePullSecrets` are pool-wide: the `prewarm.dev` ImageCaches of a pool must agree on them,',
    'defaults included. Durations are written `90s`, `10m`, `1h30m`. How spec files are read, with an',
    'example of each dialect: [imagecache.md](imagecache.md).',
    '',
    `| field | type | default | limits | \`${DIALECTS[0] ?? ''}\` | \`${DIALECTS[1] ?? ''}\` | meaning |`,
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    `Accepted in both dialects and ignored, as the apiserver writes them: ${skipped.map((p) => `\`${p}\``).join(', ')}.`,
    '',
  ].join('\n');
}
