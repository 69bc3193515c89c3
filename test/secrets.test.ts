import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadEncryptionKey, parseEncryptionKey, secretsFrom } from '../src/auth/secrets.js';
import { StartupError } from '../src/process/startup.js';

describe('secrets', () => {
  it('without ENCRYPTION_KEY, generates one key into DATA_DIR (mode 600), the same for every process, even at once', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'postwise-key-'));
    try {
      const keys = await Promise.all(Array.from({ length: 5 }, () => loadEncryptionKey(undefined, join(dataDir, 'data'))));
      expect(new Set(keys.map((key) => key.toString('hex'))).size).toBe(1);
      expect(keys[0]!).toHaveLength(32);
      const file = join(dataDir, 'data', 'encryption-key');
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      expect(parseEncryptionKey(await readFile(file, 'utf8'))).toEqual(keys[0]);
      expect(await loadEncryptionKey(undefined, join(dataDir, 'data'))).toEqual(keys[0]);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('reads ENCRYPTION_KEY in base64 or hex, and refuses any other length', () => {
    const key = Buffer.alloc(32, 7);
    expect(parseEncryptionKey(key.toString('base64'))).toEqual(key);
    expect(parseEncryptionKey(key.toString('hex'))).toEqual(key);
    expect(() => parseEncryptionKey(Buffer.alloc(16).toString('base64'))).toThrow(StartupError);
  });

  it('seals with AES-256-GCM: opens with its key only, and refuses an altered value', () => {
    const secrets = secretsFrom(Buffer.alloc(32, 1));
    const sealed = secrets.seal(Buffer.from('app-password'));
    expect(sealed.toString('latin1')).not.toContain('app-password');
    expect(secrets.open(sealed).toString()).toBe('app-password');
    expect(secrets.seal(Buffer.from('app-password')).equals(sealed)).toBe(false); // a fresh IV each time
    const altered = Buffer.from(sealed);
    altered[altered.length - 1]! ^= 1;
    expect(() => secrets.open(altered)).toThrow();
    expect(() => secretsFrom(Buffer.alloc(32, 2)).open(sealed)).toThrow();
  });

  it('signs with a key of its own: a signature holds for its text only', () => {
    const secrets = secretsFrom(Buffer.alloc(32, 1));
    const signature = secrets.sign('state');
    expect(secrets.verify('state', signature)).toBe(true);
    expect(secrets.verify('other', signature)).toBe(false);
    expect(secretsFrom(Buffer.alloc(32, 2)).verify('state', signature)).toBe(false);
    expect(secrets.verify('state', '')).toBe(false);
  });
});
