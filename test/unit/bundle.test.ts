// Release bundles (shared/bundle.ts) and releases on a board (node/upgrade/releases.ts): a board
// opens only a bundle signed with its key, untampered, for its architecture; releases switch by
// a link, the previous one stays for a rollback, older ones go.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { RunningConfig } from '../../node/config/running-config.ts';
import { silentLogger } from '../../node/log.ts';
import { currentRelease, installRelease, previousRelease, prune, rollBack, switchRelease } from '../../node/upgrade/releases.ts';
import { UpgradeBoard } from '../../node/upgrade/upgrade-board.ts';
import { makeBundle, newSigningKey, openBundle, parsePublicKey } from '../../shared/bundle.ts';
import { parseConfig } from '../../shared/config.ts';
import type { EwsError } from '../../shared/errors.ts';

const key = newSigningKey();
const other = newSigningKey();
const pub = parsePublicKey(key.publicKey);
const files = [
  { path: 'ews.js', mode: 0o644, data: Buffer.from('console.log("ews")\n') },
  { path: 'node_modules/x/index.js', mode: 0o755, data: Buffer.from('module.exports = 1;\n') },
];
const bundle = (version: string, arch = 'x64', pem = key.privatePem) => makeBundle({ version, arch, protocol: 1 }, files, pem);
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('a bundle opens only signed with the board’s key, untampered, for its architecture', () => {
  assert.ok(typeof pub !== 'string');
  const b = bundle('0.2.0');
  const opened = openBundle(b, pub, 'x64');
  assert.equal(opened.manifest.version, '0.2.0');
  assert.deepEqual(
    opened.files.map((f) => [f.path, f.mode, f.data.toString()]),
    files.map((f) => [f.path, f.mode, f.data.toString()]),
  );
  assert.throws(() => openBundle(bundle('0.2.0', 'x64', other.privatePem), pub, 'x64'), /does not verify/, 'signed with another key');
  const manifestTampered = Buffer.from(b);
  manifestTampered[20] = manifestTampered[20]! ^ 1;
  assert.throws(() => openBundle(manifestTampered, pub, 'x64'), /does not verify|manifest/);
  const fileTampered = Buffer.from(b);
  fileTampered[fileTampered.length - 3] = fileTampered[fileTampered.length - 3]! ^ 1;
  assert.throws(() => openBundle(fileTampered, pub, 'x64'), /node_modules\/x\/index.js: its content does not match/);
  assert.throws(() => openBundle(bundle('0.2.0', 'arm64'), pub, 'x64'), /packed for arm64, this board is x64/);
  assert.equal(openBundle(bundle('0.2.0', 'any'), pub, 'arm').manifest.arch, 'any');
  assert.throws(() => openBundle(Buffer.from('not a bundle at all'), pub, 'x64'), /not an ews bundle/);
  assert.throws(() => openBundle(b.subarray(0, 9 + b.readUInt32BE(5)), pub, 'x64'), /unsigned/);
  assert.throws(() => openBundle(Buffer.concat([b, Buffer.from('x')]), pub, 'x64'), /bytes after/);
  assert.throws(() => makeBundle({ version: '1', arch: 'x64', protocol: 1 }, [{ path: '../etc/passwd', mode: 0o644, data: Buffer.alloc(1) }], key.privatePem), /not a relative path/);
  assert.match(String(parsePublicKey('short')), /base64 of a raw 32-byte Ed25519 key/);
});

test('releases: installed beside the running one, switched by a link, the previous kept for a rollback, older ones removed', async () => {
  const prefix = mkdtempSync(join(tmpdir(), 'ews-releases-'));
  dirs.push(prefix);
  const p = pub as Exclude<typeof pub, string>;
  for (const v of ['0.1.0', '0.2.0', '0.3.0']) {
    await installRelease(prefix, openBundle(bundle(v), p, 'x64'));
    switchRelease(prefix, v);
    await prune(prefix);
  }
  assert.equal(currentRelease(prefix), '0.3.0');
  assert.equal(previousRelease(prefix), '0.2.0');
  assert.equal(readlinkSync(join(prefix, 'current')), join('releases', '0.3.0'));
  assert.equal(readFileSync(join(prefix, 'current', 'ews.js'), 'utf8'), 'console.log("ews")\n');
  assert.equal(statSync(join(prefix, 'current', 'node_modules/x/index.js')).mode & 0o777, 0o755);
  assert.ok(!existsSync(join(prefix, 'releases', '0.1.0')), 'only the current and the previous stay');
  await assert.rejects(installRelease(prefix, openBundle(bundle('0.3.0'), p, 'x64')), /is the one running/);
  assert.equal(rollBack(prefix), true);
  assert.deepEqual([currentRelease(prefix), previousRelease(prefix)], ['0.2.0', '0.3.0']);
  assert.throws(() => switchRelease(prefix, '9.9.9'), /no release 9.9.9/);
});

/** A releases layout running 0.1.0. */
async function running010() {
  const prefix = mkdtempSync(join(tmpdir(), 'ews-releases-'));
  dirs.push(prefix);
  const p = pub as Exclude<typeof pub, string>;
  await installRelease(prefix, openBundle(bundle('0.1.0'), p, 'x64'));
  switchRelease(prefix, '0.1.0');
  return { prefix, p };
}

test('releases: an install that fails half-way (a file where a directory must go) leaves no partial release and keeps the running one', async () => {
  const { prefix, p } = await running010();
  const many = Array.from({ length: 40 }, (_, i) => ({ path: `f${i}.js`, mode: 0o644, data: Buffer.from(`${i}\n`) }));
  const clash = [
    ...many,
    { path: 'x', mode: 0o644, data: Buffer.from('a file\n') },
    { path: 'x/y.js', mode: 0o644, data: Buffer.from('under it\n') },
    ...many.map((f) => ({ ...f, path: `g/${f.path}` })),
  ];
  await assert.rejects(installRelease(prefix, openBundle(makeBundle({ version: '0.2.0', arch: 'x64', protocol: 1 }, clash, key.privatePem), p, 'x64')), /ENOTDIR|EEXIST|EISDIR/);
  assert.deepEqual(readdirSync(join(prefix, 'releases')), ['0.1.0'], 'no partial release, no 0.2.0');
  assert.equal(currentRelease(prefix), '0.1.0');
});

test('a board installs one release at a time: a second one sent while the first installs (or after it, the board restarting) is refused PUSH_IN_PROGRESS', async () => {
  const { prefix } = await running010();
  const cfg = parseConfig({
    cluster: { name: 't', key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' },
    boards: [{ id: 'b1', address: '127.0.0.1', httpPort: 1000, udpPort: 2000 }],
    auth: { disabled: true },
    upgrade: { publicKey: key.publicKey, prefix },
  });
  const up = new UpgradeBoard({ running: new RunningConfig(cfg, {}), self: cfg.boards[0]!, log: silentLogger, exit: () => {} });
  const arch = (v: string) => makeBundle({ version: v, arch: process.arch, protocol: 1 }, files, key.privatePem);
  const [first, second] = await Promise.allSettled([up.take(arch('0.2.0')), up.take(arch('0.3.0'))]);
  assert.equal(first.status === 'fulfilled' && first.value.applied, 'restart');
  assert.equal(second.status === 'rejected' && (second.reason as EwsError).code, 'PUSH_IN_PROGRESS');
  await assert.rejects(up.take(arch('0.3.0')), (e: EwsError) => e.code === 'PUSH_IN_PROGRESS', 'the board restarts into 0.2.0: nothing more');
  assert.equal(currentRelease(prefix), '0.2.0');
});
