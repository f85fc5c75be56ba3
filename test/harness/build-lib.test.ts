/**
 * harness/build-lib.sh, the recipe-keyed cache of the harness's Go builds, driven through bash with
 * a fake `go` on PATH that records each build and writes one file per package.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const LIB = resolve('harness/build-lib.sh');

const FAKE_GO = `#!/usr/bin/env bash
set -eu
case "$1" in
  version) echo "go version go0.0 fake/amd64" ;;
  build)
    echo "build $*" >> "$FAKE_GO_LOG"
    [ "\${FAKE_GO_FAIL:-0}" = 1 ] && { echo "fake go: build failed" >&2; exit 1; }
    out=""; prev=""
    for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
    for a in "$@"; do case "$a" in ./cmd/*) touch "$out/$(basename "$a")" ;; esac; done ;;
  *) exit 2 ;;
esac
`;

let dir: string;
let mod: string;
let env: NodeJS.ProcessEnv;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'build-lib-'));
  mkdirSync(join(dir, 'fakebin'));
  writeFileSync(join(dir, 'fakebin', 'go'), FAKE_GO);
  chmodSync(join(dir, 'fakebin', 'go'), 0o755);
  mod = join(dir, 'mod');
  mkdirSync(join(mod, 'cmd', 'server'), { recursive: true });
  writeFileSync(join(mod, 'go.mod'), 'module example.test/wrapper\n');
  writeFileSync(join(mod, 'cmd', 'server', 'main.go'), 'package main\n');
  env = {
    ...process.env,
    PATH: `${join(dir, 'fakebin')}:${process.env['PATH'] ?? ''}`,
    PREWARM_CACHE_DIR: join(dir, 'cache'),
    FAKE_GO_LOG: join(dir, 'go.log'),
  };
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Runs build_cached for the wrapper module; `post` names a POST_BUILD hook defined in the script. */
function build(opts: { ldflags?: string; fail?: boolean; post?: boolean } = {}): { status: number | null; stderr: string } {
  const hook = opts.post === true ? 'mark() { touch "$2/post-build-ran"; }; POST_BUILD=mark; ' : '';
  const script = `set -euo pipefail; . "$1"; ${hook}build_cached wrapper v1 "$2" tags 0 "$3" ./cmd/server ./cmd/client`;
  const r = spawnSync('bash', ['-c', script, 'test', LIB, mod, opts.ldflags ?? '-X a=b'], {
    env: { ...env, FAKE_GO_FAIL: opts.fail === true ? '1' : '0' },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: r.status, stderr: r.stderr };
}

const builds = (): number =>
  existsSync(env['FAKE_GO_LOG'] as string)
    ? readFileSync(env['FAKE_GO_LOG'] as string, 'utf8')
        .split('\n')
        .filter(Boolean).length
    : 0;
const out = (): string => join(env['PREWARM_CACHE_DIR'] as string, 'wrapper-v1');

describe('build_cached', () => {
  it('builds once, publishes bin/ with a stamp, and finds it cached the second time', () => {
    expect(build().status).toBe(0);
    expect(readdirSync(join(out(), 'bin')).sort()).toEqual(['client', 'server']);
    expect(readFileSync(join(out(), '.complete'), 'utf8')).toMatch(/^key=[0-9a-f]{16} built /);
    const second = build();
    expect(second.status).toBe(0);
    expect(second.stderr).toContain('wrapper v1: cached at');
    expect(builds()).toBe(1);
  });

  it('passes the shared flags: no DWARF, read-only modules, stripped', () => {
    expect(build().status).toBe(0);
    const line = readFileSync(env['FAKE_GO_LOG'] as string, 'utf8');
    expect(line).toContain('-ldflags -s -w -X a=b');
    expect(line).toContain('-tags tags');
    const goflags = spawnSync('bash', ['-c', '. "$1"; echo "$GOFLAGS"', 'test', LIB], { env, encoding: 'utf8' }).stdout;
    expect(goflags.trim()).toBe('-mod=readonly -buildvcs=false -trimpath -gcflags=all=-dwarf=false');
  });

  it('rebuilds when a .go file in a subfolder of the wrapper module changes', () => {
    expect(build().status).toBe(0);
    writeFileSync(join(mod, 'cmd', 'server', 'main.go'), 'package main\n\nfunc init() {}\n');
    expect(build().status).toBe(0);
    expect(builds()).toBe(2);
  });

  it('rebuilds when the flags change', () => {
    expect(build().status).toBe(0);
    expect(build({ ldflags: '-X a=c' }).status).toBe(0);
    expect(builds()).toBe(2);
  });

  it('rebuilds when the stamp is there but bin/ is empty', () => {
    expect(build().status).toBe(0);
    rmSync(join(out(), 'bin'), { recursive: true });
    mkdirSync(join(out(), 'bin'));
    expect(build().status).toBe(0);
    expect(builds()).toBe(2);
    expect(readdirSync(join(out(), 'bin')).sort()).toEqual(['client', 'server']);
  });

  it('runs POST_BUILD on the new folder before publishing it', () => {
    expect(build({ post: true }).status).toBe(0);
    expect(existsSync(join(out(), 'bin', 'post-build-ran'))).toBe(true);
  });

  it('leaves no stamp when the build fails, so the next call builds again', () => {
    const failed = build({ fail: true });
    expect(failed.status).not.toBe(0);
    expect(failed.stderr).toContain('fake go: build failed');
    expect(existsSync(join(out(), '.complete'))).toBe(false);
    expect(
      readdirSync(out()).filter((f) => f.startsWith('bin.tmp')),
      'no half-built folder left',
    ).toEqual([]);
    expect(build().status).toBe(0);
    expect(builds()).toBe(2);
  });
});
