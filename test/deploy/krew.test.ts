/**
 * deploy/krew/prewarm.yaml, rendered as krew-release-bot renders it, is a krew Plugin whose `bin`
 * is the `kubectl-prewarm` that package.json ships, inside the archive deploy/krew/pack.sh names.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { VERSION } from '../../src/version.js';

const TEMPLATE = readFileSync('deploy/krew/prewarm.yaml', 'utf8');
const PACK = readFileSync('deploy/krew/pack.sh', 'utf8');
const TAG = `v${VERSION}`;
const SHA = 'a'.repeat(64);

/** krew-release-bot's rendering: the tag, and `uri` + `sha256` of the archive in place of addURIAndSha. */
function render(template: string): string {
  return template
    .replace(
      /^(\s*)\{\{ addURIAndSha "([^"]+)" \.TagName \}\}$/m,
      (_, indent: string, uri: string) => `${indent}uri: ${uri}\n${indent}sha256: ${SHA}`,
    )
    .replaceAll('{{ .TagName }}', TAG);
}

interface Plugin {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: {
    version: string;
    shortDescription: string;
    platforms: { selector: { matchExpressions: { key: string; values: string[] }[] }; uri: string; sha256: string; bin: string }[];
  };
}

describe('deploy/krew/prewarm.yaml', () => {
  const plugin = parse(render(TEMPLATE)) as Plugin;

  it('renders to a krew Plugin named prewarm (so: kubectl prewarm)', () => {
    expect(render(TEMPLATE)).not.toContain('{{');
    expect(plugin).toMatchObject({
      apiVersion: 'krew.googlecontainertools.github.com/v1alpha2',
      kind: 'Plugin',
      metadata: { name: 'prewarm' },
    });
    expect(plugin.spec.version).toBe(TAG);
    expect(plugin.spec.shortDescription.length).toBeLessThanOrEqual(50);
  });

  it('runs the kubectl-prewarm bin of package.json, from the archive pack.sh builds', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { bin: Record<string, string> };
    const [platform] = plugin.spec.platforms;
    expect(plugin.spec.platforms.length).toBe(1);
    expect(platform?.bin).toBe(`prewarm/${(pkg.bin['kubectl-prewarm'] ?? '').replace(/^\.\//, '')}`);
    expect(platform?.sha256).toBe(SHA);
    expect(platform?.uri).toMatch(new RegExp(`/releases/download/${TAG}/prewarm-kubectl-${TAG}\\.tar\\.gz$`));
    // pack.sh: the same archive name, with the package under prewarm/.
    expect(PACK).toContain('VERSION="v$(node -p "require(\'$ROOT/package.json\').version")"');
    expect(PACK).toContain('ARCHIVE="$OUT/prewarm-kubectl-$VERSION.tar.gz"');
    expect(PACK).toContain('tar -czf "$ARCHIVE" -C "$STAGE" prewarm');
    expect(platform?.selector.matchExpressions).toEqual([{ key: 'os', operator: 'In', values: ['linux', 'darwin'] }]);
  });
});
