// A release bundle: one file holding a release's files, a manifest (version, architecture,
// protocol, each file's size, mode and SHA-256) and an Ed25519 signature over the manifest's
// exact bytes. A board opens one only if the signature verifies under `upgrade.publicKey`, every
// file matches its hash, every path stays inside the release, and it is for this architecture.
//
//   "EWSB" | format u8 (1) | manifest length u32 BE | manifest (JSON, UTF-8) | signature (64) | files, in manifest order
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, sign, verify } from 'node:crypto';

export const BUNDLE_MAGIC = 'EWSB';
export const BUNDLE_FORMAT = 1;
/** The most a bundle may weigh (a board's release with its runtime packages is a few MB). */
export const BUNDLE_BYTES_MAX = 32 * 1024 * 1024;
export const BUNDLE_FILES_MAX = 5000;
const MANIFEST_BYTES_MAX = 1024 * 1024;
const SIGNATURE_BYTES = 64;
/** DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export interface BundleFile {
  path: string;
  bytes: number;
  /** Unix permission bits (0o644, 0o755). */
  mode: number;
  sha256: string;
}

export interface Manifest {
  format: number;
  /** The release's version (semver-like: digits, dots, letters, - and +). */
  version: string;
  /** `process.arch` it was packed for (`arm`, `arm64`, `x64`), or `any`. */
  arch: string;
  /** The cluster protocol it speaks (it also speaks the one before). */
  protocol: number;
  files: BundleFile[];
}

export interface OpenedBundle {
  manifest: Manifest;
  files: Array<{ path: string; mode: number; data: Buffer }>;
}

export const VERSION_RE = /^[0-9A-Za-z][0-9A-Za-z.+-]{0,31}$/;

/** An Ed25519 key pair: the private key as PKCS#8 PEM, the public one as base64 of its raw 32 bytes (`upgrade.publicKey`). */
export function newSigningKey(): { privatePem: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privatePem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), publicKey: rawPublicKey(publicKey) };
}

export function rawPublicKey(k: KeyObject): string {
  return k.export({ format: 'der', type: 'spki' }).subarray(ED25519_SPKI_PREFIX.length).toString('base64');
}

/** `upgrade.publicKey` as a key, or why not. */
export function parsePublicKey(b64: unknown): KeyObject | string {
  if (typeof b64 !== 'string' || !/^[A-Za-z0-9+/]{43}=$/.test(b64)) return 'must be the base64 of a raw 32-byte Ed25519 key (make one with: ews gen-signing-key)';
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, Buffer.from(b64, 'base64')]), format: 'der', type: 'spki' });
}

const safePath = (p: string): boolean =>
  p.length > 0 && p.length <= 512 && !p.startsWith('/') && !p.includes('\\') && !p.includes('\0') && p.split('/').every((s) => s !== '' && s !== '.' && s !== '..');

/** Pack files into a signed bundle. */
export function makeBundle(m: { version: string; arch: string; protocol: number }, files: ReadonlyArray<{ path: string; mode: number; data: Buffer }>, privatePem: string): Buffer {
  if (!VERSION_RE.test(m.version)) throw new Error(`version ${m.version}: letters, digits, . + - (at most 32)`);
  for (const f of files) if (!safePath(f.path)) throw new Error(`${f.path}: not a relative path inside the release`);
  const manifest: Manifest = {
    format: BUNDLE_FORMAT,
    ...m,
    files: files.map((f) => ({ path: f.path, bytes: f.data.length, mode: f.mode & 0o777, sha256: createHash('sha256').update(f.data).digest('hex') })),
  };
  const body = Buffer.from(JSON.stringify(manifest));
  const head = Buffer.alloc(9);
  head.write(BUNDLE_MAGIC, 0, 'latin1');
  head[4] = BUNDLE_FORMAT;
  head.writeUInt32BE(body.length, 5);
  const signature = sign(null, body, createPrivateKey(privatePem));
  return Buffer.concat([head, body, signature, ...files.map((f) => f.data)]);
}

/** Open a bundle for this board (`arch`: process.arch; undefined: any, as the master checks one for its boards); throws with the reason it is refused. */
export function openBundle(buf: Buffer, publicKey: KeyObject, arch: string | undefined): OpenedBundle {
  if (buf.length > BUNDLE_BYTES_MAX) throw new Error(`over ${BUNDLE_BYTES_MAX} bytes`);
  if (buf.length < 9 || buf.toString('latin1', 0, 4) !== BUNDLE_MAGIC) throw new Error('not an ews bundle');
  if (buf[4] !== BUNDLE_FORMAT) throw new Error(`bundle format ${buf[4]}, this board reads ${BUNDLE_FORMAT}`);
  const len = buf.readUInt32BE(5);
  if (len > MANIFEST_BYTES_MAX || 9 + len > buf.length) throw new Error('manifest out of bounds');
  const body = buf.subarray(9, 9 + len);
  if (9 + len + SIGNATURE_BYTES > buf.length) throw new Error('unsigned: no signature');
  const signature = buf.subarray(9 + len, 9 + len + SIGNATURE_BYTES);
  if (!verify(null, body, publicKey, signature)) throw new Error('the signature does not verify under upgrade.publicKey (tampered, or signed with another key)');
  // Signed by the holder of the key: what follows is checked all the same.
  const m = JSON.parse(body.toString('utf8')) as Manifest;
  if (typeof m.version !== 'string' || !VERSION_RE.test(m.version)) throw new Error('manifest: bad version');
  if (typeof m.arch !== 'string' || (arch !== undefined && m.arch !== 'any' && m.arch !== arch)) throw new Error(`packed for ${String(m.arch)}, this board is ${arch}`);
  if (!Number.isInteger(m.protocol)) throw new Error('manifest: bad protocol');
  if (!Array.isArray(m.files) || m.files.length > BUNDLE_FILES_MAX) throw new Error('manifest: bad file list');
  const files: OpenedBundle['files'] = [];
  let at = 9 + len + SIGNATURE_BYTES;
  const seen = new Set<string>();
  for (const f of m.files) {
    if (typeof f.path !== 'string' || !safePath(f.path) || seen.has(f.path)) throw new Error(`manifest: bad path ${String(f.path).slice(0, 80)}`);
    seen.add(f.path);
    if (!Number.isInteger(f.bytes) || f.bytes < 0 || at + f.bytes > buf.length) throw new Error(`${f.path}: out of bounds`);
    const data = buf.subarray(at, at + f.bytes);
    at += f.bytes;
    if (createHash('sha256').update(data).digest('hex') !== f.sha256) throw new Error(`${f.path}: its content does not match the manifest (tampered)`);
    files.push({ path: f.path, mode: Number.isInteger(f.mode) ? f.mode & 0o777 : 0o644, data });
  }
  if (at !== buf.length) throw new Error('bytes after the last file');
  return { manifest: m, files };
}
