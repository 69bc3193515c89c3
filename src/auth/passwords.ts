import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Passwords are hashed with scrypt (memory-hard, in node:crypto: nothing to install), at N = 2^15, r = 8, p = 3
 * (OWASP's minimum: 32 MiB and about 150 ms a hash on one core), and stored as `scrypt$N$r$p$salt$hash` so the cost can rise
 * later without locking anyone out: a hash is checked with the numbers it names.
 */
const COST = { N: 2 ** 15, r: 8, p: 3 };
const KEY_BYTES = 32;

export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 200;

/**
 * The rule a password breaks ("must be …"), or null. Length is what makes a password strong; no composition rules
 * (NIST SP 800-63B).
 */
export function passwordProblem(password: unknown): string | null {
  if (typeof password !== 'string' || [...password].length < PASSWORD_MIN) return `must be at least ${PASSWORD_MIN} characters long`;
  if ([...password].length > PASSWORD_MAX) return `must be at most ${PASSWORD_MAX} characters long`;
  return null;
}

const derive = (password: string, salt: Buffer, cost: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) =>
    // maxmem: scrypt needs 128 * N * r bytes; Node's default cap (32 MiB) is just short of it.
    scrypt(password.normalize('NFKC'), salt, KEY_BYTES, { ...cost, maxmem: 256 * cost.N! * cost.r! }, (error, key) => (error ? reject(error) : resolve(key))),
  );

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, COST);
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** A hash that matches no password, checked when the account does not exist so that its absence takes as long. */
const NOBODY = `scrypt$${COST.N}$${COST.r}$${COST.p}$${randomBytes(16).toString('base64url')}$${randomBytes(KEY_BYTES).toString('base64url')}`;

/** Whether `password` matches `stored` (null: no account or no password yet, answered in the same time, and false). */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const [scheme, N, r, p, salt, key] = (stored ?? NOBODY).split('$');
  if (scheme !== 'scrypt' || !salt || !key) return false;
  const expected = Buffer.from(key, 'base64url');
  const actual = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(N), r: Number(r), p: Number(p) });
  return actual.length === expected.length && timingSafeEqual(actual, expected) && stored !== null;
}
