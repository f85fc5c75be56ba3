import { execFileSync } from 'node:child_process';
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { readEditable, writeAll } from '../../src/cli/rewrite.js';

async function workdir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'prewarm-rewrite-'));
}

/**
 * Makes a path immutable (chattr +i): then even root cannot create files in it (a folder) or
 * rename onto it (a file), which is how these tests make a write fail for real.
 */
const immutable: string[] = [];
function freeze(path: string): void {
  execFileSync('chattr', ['+i', path]);
  immutable.push(path);
}
afterEach(() => {
  for (const path of immutable.splice(0)) execFileSync('chattr', ['-i', path]);
});

describe('readEditable', () => {
  it.each<[string, Buffer, 'utf8' | 'latin1']>([
    ['UTF-8', Buffer.from('a: "caf\u00e9"\n', 'utf8'), 'utf8'],
    ['UTF-8 with a BOM and CRLF', Buffer.from('\uFEFFa: b\r\n# \u00fc\r\n', 'utf8'), 'utf8'],
    ['Latin-1 in a comment', Buffer.from('a: b   # caf\xe9 \xfcber\n', 'latin1'), 'latin1'],
    ['a stray continuation byte', Buffer.from([0x61, 0x3a, 0x20, 0x80, 0x0a]), 'latin1'],
    ['a UTF-8 BOM, then Latin-1', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('a: b # \xe9\n', 'latin1')]), 'latin1'],
    ['a truncated sequence at the end', Buffer.from([0x61, 0x0a, 0xc3]), 'latin1'],
  ])('%s: read as %s, so the text turns back into the same bytes', async (_name, bytes, encoding) => {
    const dir = await workdir();
    await writeFile(join(dir, 'a.yaml'), bytes);
    const file = await readEditable(join(dir, 'a.yaml'));
    expect(file.encoding).toBe(encoding);
    expect(file.text).not.toContain('\uFFFD');
    // YAML sees a BOM as one: U+FEFF, whatever the rest of the file is.
    expect(file.text.startsWith('\uFEFF')).toBe(bytes[0] === 0xef);
    const written = join(dir, 'b.yaml');
    await writeFile(written, 'placeholder\n');
    await writeAll([{ file: { ...file, path: written, text: 'placeholder\n' }, text: file.text }]);
    expect((await readFile(written)).equals(bytes)).toBe(true);
  });
});

describe('writeAll', () => {
  it("writes edited text back in the file's own encoding, and leaves unchanged files alone", async () => {
    const dir = await workdir();
    await writeFile(join(dir, 'l1.yaml'), Buffer.from('image: a:1   # caf\xe9\r\n', 'latin1'));
    await writeFile(join(dir, 'same.yaml'), 'x: 1\n');
    const l1 = await readEditable(join(dir, 'l1.yaml'));
    const same = await readEditable(join(dir, 'same.yaml'));
    const before = await stat(join(dir, 'same.yaml'));
    expect(
      await writeAll([
        { file: l1, text: l1.text.replace('a:1', 'a:2') },
        { file: same, text: same.text },
      ]),
    ).toBe(1);
    expect((await readFile(join(dir, 'l1.yaml'))).equals(Buffer.from('image: a:2   # caf\xe9\r\n', 'latin1'))).toBe(true);
    const after = await stat(join(dir, 'same.yaml'));
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
    expect((await readdir(dir)).sort()).toEqual(['l1.yaml', 'same.yaml']);
  });

  it.each([0o600, 0o640, 0o644, 0o755])('keeps the mode %o', async (mode) => {
    const dir = await workdir();
    await writeFile(join(dir, 'a.yaml'), 'x: 1\n');
    await chmod(join(dir, 'a.yaml'), mode);
    const file = await readEditable(join(dir, 'a.yaml'));
    await writeAll([{ file, text: 'x: 2\n' }]);
    expect((await stat(join(dir, 'a.yaml'))).mode & 0o7777).toBe(mode);
    expect(await readFile(join(dir, 'a.yaml'), 'utf8')).toBe('x: 2\n');
  });

  it('writes through a link, which stays a link; a file named twice is written once', async () => {
    const dir = await workdir();
    await mkdir(join(dir, 'store'));
    await writeFile(join(dir, 'store', 'real.yaml'), 'x: 1\n');
    await symlink('store/real.yaml', join(dir, 'link.yaml'));
    const viaLink = await readEditable(join(dir, 'link.yaml'));
    const direct = await readEditable(join(dir, 'store', 'real.yaml'));
    expect(
      await writeAll([
        { file: viaLink, text: 'x: 2\n' },
        { file: direct, text: 'x: 2\n' },
      ]),
    ).toBe(1);
    expect((await lstat(join(dir, 'link.yaml'))).isSymbolicLink()).toBe(true);
    expect(await readlink(join(dir, 'link.yaml'))).toBe('store/real.yaml');
    expect(await readFile(join(dir, 'store', 'real.yaml'), 'utf8')).toBe('x: 2\n');
  });

  it.each<[string, (dir: string) => void, string]>([
    ['staging the second file fails (its folder is read-only)', (dir) => freeze(join(dir, 'z')), 'z/b.yaml'],
    ['renaming the second file into place fails (it is immutable)', (dir) => freeze(join(dir, 'z', 'b.yaml')), 'z/b.yaml'],
  ])('changes no file when %s, and leaves nothing behind', async (_name, breakIt, failing) => {
    const dir = await workdir();
    await mkdir(join(dir, 'z'));
    await writeFile(join(dir, 'a.yaml'), 'x: 1\n');
    await writeFile(join(dir, 'z', 'b.yaml'), 'y: 1\n');
    const a = await readEditable(join(dir, 'a.yaml'));
    const b = await readEditable(join(dir, 'z', 'b.yaml'));
    breakIt(dir);
    await expect(
      writeAll([
        { file: a, text: 'x: 2\n' },
        { file: b, text: 'y: 2\n' },
      ]),
    ).rejects.toMatchObject({
      exitCode: ExitCode.Internal,
      message: `cannot write ${join(dir, failing)}: operation not permitted (EPERM); no file was changed`,
    });
    expect(await readFile(join(dir, 'a.yaml'), 'utf8')).toBe('x: 1\n');
    expect(await readFile(join(dir, 'z', 'b.yaml'), 'utf8')).toBe('y: 1\n');
    expect((await readdir(dir)).sort()).toEqual(['a.yaml', 'z']);
    expect(await readdir(join(dir, 'z'))).toEqual(['b.yaml']);
  });
});
