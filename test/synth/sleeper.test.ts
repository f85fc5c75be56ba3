import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NODE_ARCH } from '../../harness/cluster/config.js';
import { isSleeperArch, SLEEPER_ARCHITECTURES, type SleeperArch } from '../../src/contract/names.js';
import { ARCH_LABEL, sleeperArchOf, sleeperBinary, sleeperBinaryData, sleeperListing } from '../../src/synth/sleeper.js';

const dir = mkdtempSync(path.join(tmpdir(), 'prewarm-sleeper-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** ELF e_machine by architecture. */
const MACHINES: Record<SleeperArch, number> = { amd64: 62, arm64: 183 };
/** qemu-user's program for each architecture, for the one the host cannot run. */
const QEMU: Record<SleeperArch, string> = { amd64: 'qemu-x86_64', arm64: 'qemu-aarch64' };

/** The argv that runs the sleeper of `arch` here: itself, or under qemu-user (fails loudly without it). */
function runner(arch: SleeperArch, file: string): string[] {
  if (arch === NODE_ARCH) return [file];
  const found = spawnSync('sh', ['-c', `command -v ${QEMU[arch]}`], { encoding: 'utf8' });
  if (found.status !== 0)
    throw new Error(
      `${QEMU[arch]} is needed to run the ${arch} sleeper on this ${NODE_ARCH} host: install qemu-user (.ci/setup-cluster.sh does)`,
    );
  return [QEMU[arch], file];
}

/** Starts the sleeper of `arch`; resolves with its exit once `signal` was sent after `afterMs`. */
async function exitOn(arch: SleeperArch, signal: NodeJS.Signals, afterMs = 300) {
  const file = path.join(dir, `sleep-${arch}`);
  writeFileSync(file, sleeperBinary(arch));
  chmodSync(file, 0o555);
  const [cmd, ...args] = runner(arch, file);
  const child = spawn(cmd as string, args, { stdio: 'ignore' });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, sig) => resolve({ code, signal: sig, ms: Date.now() - sent }));
  });
  let sent = Infinity;
  let early: unknown;
  void exited.then((e) => (early = e));
  await new Promise((r) => setTimeout(r, afterMs));
  const runningBeforeSignal = early === undefined;
  // Signals it has no handler for and whose default is to ignore them must not end it either.
  child.kill('SIGCHLD');
  child.kill('SIGWINCH');
  await new Promise((r) => setTimeout(r, 50));
  const runningAfterIgnored = early === undefined;
  sent = Date.now();
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  const result = await exited;
  clearTimeout(timer);
  return { runningBeforeSignal, runningAfterIgnored, ...result };
}

describe('sleeper binaries', () => {
  it.each(SLEEPER_ARCHITECTURES)('%s: a static ELF64 executable of one R+X segment and a non-executable stack', (arch) => {
    const b = Buffer.from(sleeperBinary(arch));
    expect(b.subarray(0, 7)).toEqual(Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]));
    expect(b.readUInt16LE(16)).toBe(2); // ET_EXEC
    expect(b.readUInt16LE(18)).toBe(MACHINES[arch]);
    expect(b.readUInt16LE(56)).toBe(2); // two program headers, no interpreter among them
    const entry = Number(b.readBigUInt64LE(24));
    const load = {
      type: b.readUInt32LE(64),
      flags: b.readUInt32LE(68),
      vaddr: Number(b.readBigUInt64LE(64 + 16)),
      size: Number(b.readBigUInt64LE(64 + 32)),
    };
    expect(load).toEqual({ type: 1, flags: 5, vaddr: 0x400000, size: b.length });
    expect(entry).toBe(0x400000 + 64 + 2 * 56);
    expect({ type: b.readUInt32LE(120), flags: b.readUInt32LE(124) }).toEqual({ type: 0x6474e551, flags: 6 });
    expect(b.length).toBeLessThan(512);
  });

  it.each(SLEEPER_ARCHITECTURES)('%s: sleeps, ignores what it should, and exits 0 at once on SIGTERM', async (arch) => {
    const r = await exitOn(arch, 'SIGTERM');
    expect(r).toMatchObject({ runningBeforeSignal: true, runningAfterIgnored: true, code: 0, signal: null });
    expect(r.ms).toBeLessThan(2000);
  });

  it.each(SLEEPER_ARCHITECTURES)('%s: exits 0 on SIGINT', async (arch) => {
    expect(await exitOn(arch, 'SIGINT', 100)).toMatchObject({ runningBeforeSignal: true, code: 0, signal: null });
  });

  it('exits 0 on SIGTERM as PID 1 of its own PID namespace, where a process without a handler never sees it', () => {
    const arch = SLEEPER_ARCHITECTURES.find((a) => a === NODE_ARCH);
    if (arch === undefined) throw new Error(`no sleeper for this host's architecture ${NODE_ARCH}`);
    const file = path.join(dir, `pid1-${arch}`);
    writeFileSync(file, sleeperBinary(arch));
    chmodSync(file, 0o555);
    // unshare forks the sleeper as PID 1 of a new PID namespace; the shell signals it from outside.
    const script = `unshare --pid --fork ${file} & u=$!; sleep 0.3; pkill -TERM -x pid1-${arch}; wait $u; echo "rc=$?"`;
    const out = spawnSync('sh', ['-c', script], { encoding: 'utf8', timeout: 10_000 });
    expect(out.stderr).toBe('');
    expect(out.stdout.trim()).toBe('rc=0');
  });

  it('lists every instruction with its assembly, and the listing is the binary', () => {
    for (const arch of SLEEPER_ARCHITECTURES) {
      const listing = sleeperListing(arch);
      const hex = listing
        .split('\n')
        .map((l) => l.split(/\s+/)[0])
        .join('');
      expect(
        Buffer.from(sleeperBinary(arch))
          .subarray(64 + 2 * 56)
          .toString('hex'),
      ).toBe(hex);
      expect(listing).toMatch(/rt_sigaction/);
    }
  });

  it('binaryData holds each architecture, base64', () => {
    const data = sleeperBinaryData();
    expect(Object.keys(data)).toEqual([...SLEEPER_ARCHITECTURES]);
    for (const a of SLEEPER_ARCHITECTURES) expect(Buffer.from(data[a], 'base64')).toEqual(Buffer.from(sleeperBinary(a)));
  });
});

describe('sleeperArchOf', () => {
  it('takes the pinned architecture of a selector of several labels, ANDed', () => {
    expect(sleeperArchOf({ 'karpenter.sh/nodepool': 'gpu', [ARCH_LABEL]: 'arm64' })).toBe('arm64');
    expect(sleeperArchOf({ [ARCH_LABEL]: 'amd64' }, 'arm64')).toBe('amd64');
  });

  it('keeps the helper for an architecture without a sleeper, whatever the cluster is said to be', () => {
    expect(sleeperArchOf({ [ARCH_LABEL]: 's390x' })).toBeUndefined();
    expect(sleeperArchOf({ [ARCH_LABEL]: 's390x' }, 'amd64')).toBeUndefined();
    expect(sleeperArchOf({ [ARCH_LABEL]: '' }, 'amd64')).toBeUndefined();
  });

  it("falls back to the invocation's statement, else to none", () => {
    expect(sleeperArchOf({ 'beta.kubernetes.io/arch': 'arm64' }, 'amd64')).toBe('amd64');
    expect(sleeperArchOf({})).toBeUndefined();
  });

  it('knows exactly its architectures', () => {
    expect(isSleeperArch('amd64')).toBe(true);
    expect(isSleeperArch('x86_64')).toBe(false);
    expect(isSleeperArch('AMD64')).toBe(false);
  });
});
