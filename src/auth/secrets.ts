import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { StartupError } from '../process/startup.js';

/**
 * The service's one secret, and what is made from it: credentials sealed at rest with AES-256-GCM, and HMAC
 * signatures (of connect-page states) under a key derived from it, so one key never serves two purposes.
 */
export interface Secrets {
  seal(plain: Buffer): Buffer;
  /** Throws when `sealed` was not made with this key or was altered. */
  open(sealed: Buffer): Buffer;
  sign(text: string): string;
  verify(text: string, signature: string): boolean;
}

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
// Binds a sealed value to what it is, so a value sealed for one purpose cannot be passed off as another.
const CREDENTIALS_AAD = Buffer.from('postwise:integration-credentials');

export function secretsFrom(key: Buffer): Secrets {
  const signingKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'postwise:signed-state', 32));
  const mac = (text: string) => createHmac('sha256', signingKey).update(text).digest();
  return {
    seal(plain) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(CREDENTIALS_AAD);
      const body = Buffer.concat([cipher.update(plain), cipher.final()]);
      return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body]);
    },
    open(sealed) {
      if (sealed[0] !== VERSION) throw new Error('sealed value of an unknown version');
      const iv = sealed.subarray(1, 1 + IV_BYTES);
      const tag = sealed.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
      const decipher = createDecipheriv('aes-256-gcm', key, iv).setAAD(CREDENTIALS_AAD).setAuthTag(tag);
      return Buffer.concat([decipher.update(sealed.subarray(1 + IV_BYTES + TAG_BYTES)), decipher.final()]);
    },
    sign: (text) => mac(text).toString('base64url'),
    verify(text, signature) {
      const given = Buffer.from(signature, 'base64url');
      const expected = mac(text);
      return given.length === expected.length && timingSafeEqual(given, expected);
    },
  };
}

/** ENCRYPTION_KEY read as 32 bytes, in base64 (or base64url) or hex. */
export function parseEncryptionKey(raw: string): Buffer {
  const text = raw.trim();
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (key.length !== 32) throw new StartupError('ENCRYPTION_KEY must be 32 bytes, in base64 or hex (e.g. `openssl rand -base64 32`)');
  return key;
}

/**
 * The key: ENCRYPTION_KEY, or without it the one generated into DATA_DIR/encryption-key (mode 600) by the first
 * process, as the embedded Postgres password is. Several hosts on one database must share ENCRYPTION_KEY.
 */
export async function loadEncryptionKey(encryptionKey: string | undefined, dataDir: string): Promise<Buffer> {
  if (encryptionKey) return parseEncryptionKey(encryptionKey);
  const file = join(dataDir, 'encryption-key');
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  try {
    await writeFile(file, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw new StartupError(`cannot write ${file} (${(error as Error).message}); set ENCRYPTION_KEY or a DATA_DIR of your own`);
  }
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new StartupError(`cannot read ${file} (${(error as Error).message}); run as the user who made DATA_DIR, or set ENCRYPTION_KEY`);
  }
  // Written by another process at this very moment: `wx` made it exist before its content; wait for the content.
  for (let tries = 0; text.trim() === '' && tries < 50; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    text = await readFile(file, 'utf8');
  }
  return parseEncryptionKey(text);
}
