// The cluster key signs every packet, frame and session. A guessable key is no key: refuse keys
// that are short, that repeat a few byte values, or that were ever published (examples, docs).
export const KEY_BYTES_MIN = 32;
/** 32 random bytes have ~30 distinct values; fewer than this many is a pattern, not randomness. */
export const KEY_DISTINCT_BYTES_MIN = 20;
export const KEY_PLACEHOLDER = 'REPLACE-ME-with-the-output-of-ews-gen-key';

/** Keys that appeared in examples or documentation, in hex. */
const PUBLISHED = new Set(['00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff']);

/** The key's bytes, or why it is refused. */
export function parseClusterKey(hex: unknown): Buffer | string {
  if (hex === KEY_PLACEHOLDER) return "is the example's placeholder: put the output of `ews gen-key` here";
  if (typeof hex !== 'string' || !/^([0-9a-fA-F]{2})+$/.test(hex)) return 'must be hex characters (make one with: ews gen-key)';
  if (hex.length < 2 * KEY_BYTES_MIN) return `too short: ${hex.length} hex characters, need at least ${2 * KEY_BYTES_MIN} (${KEY_BYTES_MIN} bytes)`;
  if (PUBLISHED.has(hex.toLowerCase())) return 'is a published example key: make your own with `ews gen-key`';
  const key = Buffer.from(hex, 'hex');
  const distinct = new Set(key.subarray(0, KEY_BYTES_MIN)).size;
  if (distinct < KEY_DISTINCT_BYTES_MIN) return `looks low-entropy (${distinct} distinct byte values in its first ${KEY_BYTES_MIN}): make one with \`ews gen-key\``;
  return key;
}
