// Password hashes: scrypt with a random salt, in a self-describing string (shared/scrypt-hash.ts).
// Each verification takes 128·N·r bytes (16 MB at the defaults) on libuv's pool: they run one at
// a time, and at most `waitingMax` more wait; beyond that a login is refused at once (503), so a
// flood of anonymous logins costs neither memory nor an unbounded queue.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { EwsError } from '../../shared/errors.ts';
import { parseScryptHash, SCRYPT_KEYLEN, SCRYPT_MEM_MAX } from '../../shared/scrypt-hash.ts';

const N = 16384, R = 8, P = 1;

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(password, salt, SCRYPT_KEYLEN, { N: n, r, p, maxmem: SCRYPT_MEM_MAX + 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key))));
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

export class PasswordVerifier {
  private chain: Promise<unknown> = Promise.resolve();
  private pending = 0;
  constructor(private readonly waitingMax: number) {}

  /** True if `password` matches `hash`; QUEUE_FULL when `waitingMax` verifications already wait. */
  verify(password: string, hash: string): Promise<boolean> {
    const h = parseScryptHash(hash);
    if (typeof h === 'string') return Promise.resolve(false);
    if (this.pending > this.waitingMax) return Promise.reject(new EwsError('QUEUE_FULL', 'too many logins in progress', { retryAfterS: 1 }));
    this.pending++;
    const run = async () => {
      try {
        const key = await derive(password, h.salt, h.n, h.r, h.p);
        return key.length === h.key.length && timingSafeEqual(key, h.key);
      } finally {
        this.pending--;
      }
    };
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => undefined);
    return p;
  }
}
