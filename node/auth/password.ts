// Password hashes: scrypt with a random salt, in a self-describing string (shared/scrypt-hash.ts).
// A verification takes 128·N·r bytes (16 MB at the defaults). They run one at a time, at most
// `waitingMax` more wait, and beyond that a login is refused at once (503). They run on one
// dedicated thread, started on demand and stopped when idle: on libuv's pool each of its four
// threads kept its own 16 MB malloc arena after a login (glibc raises its mmap threshold after
// the first free), so a burst of logins left RSS 64 MB higher for good.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { EwsError } from '../../shared/errors.ts';
import { parseScryptHash, SCRYPT_KEYLEN, SCRYPT_MEM_MAX, type ScryptHash } from '../../shared/scrypt-hash.ts';

const N = 16384,
  R = 8,
  P = 1;
const MAXMEM = SCRYPT_MEM_MAX + 1024 * 1024;
/** The thread ends after this long without a login. */
const IDLE_MS = 30_000;
/** A valid hash of a random password nobody knows: unknown users cost the same scrypt as known ones. */
export const NOBODY_HASH = 'scrypt$16384$8$1$5y4THv5wAjAF2Mg7ZJWOwA$tY92PhX07Lr-xds7Q8fMt4MaFbLnz2irx94HKBz2TWo';

/** For `ews hash-password` and tests (libuv's pool; a board verifies through PasswordVerifier). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await new Promise<Buffer>((resolve, reject) => scrypt(password, salt, SCRYPT_KEYLEN, { N, r: R, p: P, maxmem: MAXMEM }, (e, k) => (e ? reject(e) : resolve(k))));
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

const THREAD = `
const { parentPort } = require('node:worker_threads');
const { scryptSync } = require('node:crypto');
parentPort.on('message', (m) => {
  try {
    const key = scryptSync(m.password, Buffer.from(m.salt), ${SCRYPT_KEYLEN}, { N: m.n, r: m.r, p: m.p, maxmem: ${MAXMEM} });
    parentPort.postMessage({ key });
  } catch (e) {
    parentPort.postMessage({ error: String(e && e.message) });
  }
});`;

export class PasswordVerifier {
  private chain: Promise<unknown> = Promise.resolve();
  private pending = 0;
  private thread: Worker | undefined;
  private idle: NodeJS.Timeout | undefined;
  constructor(private readonly waitingMax: number) {}

  /** True if `password` matches `hash`; QUEUE_FULL when `waitingMax` verifications already wait. */
  verify(password: string, hash: string): Promise<boolean> {
    const h = parseScryptHash(hash);
    if (typeof h === 'string') return Promise.resolve(false);
    if (this.pending > this.waitingMax) return Promise.reject(new EwsError('QUEUE_FULL', 'too many logins in progress', { retryAfterS: 1 }));
    this.pending++;
    const run = async () => {
      try {
        const key = await this.derive(password, h);
        return key.length === h.key.length && timingSafeEqual(key, h.key);
      } finally {
        this.pending--;
        if (this.pending === 0) this.stopWhenIdle();
      }
    };
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => undefined);
    return p;
  }

  close(): void {
    if (this.idle) clearTimeout(this.idle);
    void this.thread?.terminate();
    this.thread = undefined;
  }

  private derive(password: string, h: ScryptHash): Promise<Buffer> {
    if (this.idle) clearTimeout(this.idle);
    // A small heap: the thread only hashes (scrypt's memory is outside V8).
    if (!this.thread) {
      // Plain JavaScript: no loader flags of the parent (a checkout runs under tsx).
      this.thread = new Worker(THREAD, { eval: true, execArgv: [], resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 1 } });
      this.thread.unref();
    }
    const t = this.thread;
    return new Promise((resolve, reject) => {
      const done = (m: { key?: Uint8Array; error?: string }) => {
        t.off('error', failed);
        if (m.key) resolve(Buffer.from(m.key));
        else reject(new Error(m.error ?? 'scrypt failed'));
      };
      const failed = (e: Error) => {
        t.off('message', done);
        this.thread = undefined;
        reject(e);
      };
      t.once('message', done);
      t.once('error', failed);
      t.postMessage({ password, salt: h.salt, n: h.n, r: h.r, p: h.p });
    });
  }

  private stopWhenIdle(): void {
    if (this.idle) clearTimeout(this.idle);
    this.idle = setTimeout(() => this.close(), IDLE_MS).unref();
  }
}
