// The stored password hash: `scrypt$N$r$p$salt$hash` (salt and hash base64url). Parsing checks
// the cost parameters against bounds, so a config cannot make a login cost unbounded memory or
// time, nor so little that a stolen hash is cheap to crack.
export const SCRYPT_N_MIN = 2 ** 14;
export const SCRYPT_N_MAX = 2 ** 17;
export const SCRYPT_R_MAX = 16;
export const SCRYPT_P_MAX = 4;
/** scrypt needs 128·N·r bytes; one verification may not take more than this. */
export const SCRYPT_MEM_MAX = 64 * 1024 * 1024;
export const SCRYPT_KEYLEN = 32;

export interface ScryptHash {
  readonly n: number;
  readonly r: number;
  readonly p: number;
  readonly salt: Buffer;
  readonly key: Buffer;
}

const RE = /^scrypt\$(\d{1,7})\$(\d{1,2})\$(\d{1,2})\$([A-Za-z0-9_-]{16,64})\$([A-Za-z0-9_-]{43})$/;

/** The parsed hash, or the reason it is refused. */
export function parseScryptHash(s: string): ScryptHash | string {
  const m = RE.exec(s);
  if (!m) return 'is not an scrypt hash (make one with: ews hash-password)';
  const n = Number(m[1]),
    r = Number(m[2]),
    p = Number(m[3]);
  if (n < SCRYPT_N_MIN || n > SCRYPT_N_MAX || (n & (n - 1)) !== 0) return `scrypt N must be a power of two from ${SCRYPT_N_MIN} to ${SCRYPT_N_MAX}, not ${n}`;
  if (r < 8 || r > SCRYPT_R_MAX) return `scrypt r must be from 8 to ${SCRYPT_R_MAX}, not ${r}`;
  if (p < 1 || p > SCRYPT_P_MAX) return `scrypt p must be from 1 to ${SCRYPT_P_MAX}, not ${p}`;
  if (128 * n * r > SCRYPT_MEM_MAX) return `scrypt N·r needs ${(128 * n * r) / 2 ** 20} MB, more than ${SCRYPT_MEM_MAX / 2 ** 20} MB`;
  return { n, r, p, salt: Buffer.from(m[4]!, 'base64url'), key: Buffer.from(m[5]!, 'base64url') };
}
