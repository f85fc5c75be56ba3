/** Registry credentials by host and path prefix, from docker configs and mounted pull secrets. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Keyring, loadKeyring } from '../../src/oci/keyring.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

describe('Keyring', () => {
  it('matches the most specific key, folding Docker Hub aliases and schemes', () => {
    const k = new Keyring();
    k.add(
      JSON.stringify({
        auths: {
          'https://index.docker.io/v1/': { auth: b64('hub:pw') },
          'reg.io': { username: 'u1', password: 'p1' },
          'reg.io/team': { auth: b64('u2:p2') },
        },
      }),
    );
    expect(k.lookup('docker.io', 'library/nginx')).toEqual({ username: 'hub', password: 'pw' });
    expect(k.lookup('reg.io', 'team/app')).toEqual({ username: 'u2', password: 'p2' });
    expect(k.lookup('reg.io', 'other/app')).toEqual({ username: 'u1', password: 'p1' });
    expect(k.lookup('reg.io:5000', 'team/app')).toBeUndefined();
    expect(k.lookup('reg.iox', 'a')).toBeUndefined();
  });
  it('loads mounted dockerconfigjson and legacy dockercfg secrets, ignoring junk', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prewarm-secrets-'));
    try {
      fs.mkdirSync(path.join(dir, 'a'));
      fs.writeFileSync(path.join(dir, 'a', '.dockerconfigjson'), JSON.stringify({ auths: { 'r1.io': { auth: b64('a:1') } } }));
      fs.mkdirSync(path.join(dir, 'b'));
      fs.writeFileSync(path.join(dir, 'b', '.dockercfg'), JSON.stringify({ 'r2.io': { auth: b64('b:2') } }));
      fs.mkdirSync(path.join(dir, 'c'));
      fs.writeFileSync(path.join(dir, 'c', '.dockerconfigjson'), 'not json');
      const k = loadKeyring(dir);
      expect(k.size).toBe(2);
      expect(k.lookup('r2.io', 'x')).toEqual({ username: 'b', password: '2' });
      expect(loadKeyring(path.join(dir, 'missing')).size).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
