// Password hashes: scrypt with a random salt, in a self-describing string
// `scrypt$N$r$p$salt$hash` (base64url). Verification runs one at a time: each takes ~16 MB.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const N = 16384, R = 8, P = 1, KEYLEN = 32;

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(password, salt, KEYLEN, { N: n, r, p, maxmem: 64 * 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key))));
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

export const HASH_RE = /^scrypt\$(\d{1,7})\$(\d{1,2})\$(\d{1,2})\$([A-Za-z0-9_-]{16,64})\$([A-Za-z0-9_-]{43})$/;

let chain: Promise<unknown> = Promise.resolve();

/** True if `password` matches `hash`. Calls are serialised so logins cannot exhaust memory. */
export function verifyPassword(password: string, hash: string): Promise<boolean> {
  const m = HASH_RE.exec(hash);
  if (!m) return Promise.resolve(false);
  const run = async () => {
    const key = await derive(password, Buffer.from(m[4]!, 'base64url'), Number(m[1]), Number(m[2]), Number(m[3]));
    const want = Buffer.from(m[5]!, 'base64url');
    return key.length === want.length && timingSafeEqual(key, want);
  };
  const p = chain.then(run, run);
  chain = p.catch(() => undefined);
  return p;
}
