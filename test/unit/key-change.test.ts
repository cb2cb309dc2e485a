// A cluster key changed one board at a time (cluster.acceptKeys): what is signed with an accepted
// key verifies, everything is signed with the board's own key, and nothing else verifies: UDP
// packets, dispatch-link frames, session tokens and their CSRF tokens.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { SessionSigner } from '../../node/auth/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { redactConfig } from '../../shared/config-redact.ts';
import { FrameCodec } from '../../shared/dispatch-frame.ts';
import { createCodec, type Message } from '../../shared/protocol.ts';

const OLD = randomBytes(32);
const NEW = randomBytes(32);
const OTHER = randomBytes(32);

test('UDP: a packet signed with an accepted key decodes; packets are signed with the own key; another key is refused (auth)', () => {
  const codec = (key: Buffer, acceptKeys: Buffer[] = []) => createCodec({ key, acceptKeys, cluster: 'c', boards: 3, packetBytesMax: 1400 });
  const msg: Message = { type: 'JOIN', sender: 1, term: 0, body: {} };
  const env = { epoch: 1, counter: 1 };
  const fromOld = codec(OLD).encode(msg, env);
  const rotating = codec(NEW, [OLD]);
  assert.ok(rotating.decode(fromOld).ok, 'the old key accepted');
  assert.ok(codec(NEW).decode(rotating.encode(msg, env)).ok, 'signed with the new key');
  assert.deepEqual(codec(OLD).decode(rotating.encode(msg, env)), { ok: false, reason: 'auth' }, 'not with the old one');
  assert.deepEqual(rotating.decode(codec(OTHER).encode(msg, env)), { ok: false, reason: 'auth' });
});

test('dispatch link: a frame sealed with an accepted key opens; frames are sealed with the own key', () => {
  const frame = { id: 7, load: 1, status: 200, refused: false, head: Buffer.alloc(0), body: Buffer.from('x') };
  const rotating = new FrameCodec(NEW, 1 << 16, [OLD]);
  assert.equal(typeof rotating.decode(new FrameCodec(OLD, 1 << 16).answer(frame)), 'object');
  assert.equal(typeof new FrameCodec(NEW, 1 << 16).decode(rotating.answer(frame)), 'object');
  assert.equal(new FrameCodec(OLD, 1 << 16).decode(rotating.answer(frame)), 'auth');
  assert.equal(rotating.decode(new FrameCodec(OTHER, 1 << 16).answer(frame)), 'auth');
});

test('sessions: a token and its CSRF token issued under the old key stay good while it is accepted, and only then', () => {
  const none = { has: () => false, notBefore: () => 0 };
  const { token, session } = new SessionSigner(OLD, none).issue('ada', 'admin', 600, 1000);
  const csrf = new SessionSigner(OLD, none).csrf(session);
  const rotating = new SessionSigner(NEW, none, [OLD]);
  assert.equal(rotating.verify(token, 2000)?.user, 'ada');
  assert.ok(rotating.csrfOk(session, csrf));
  const after = new SessionSigner(NEW, none);
  assert.equal(after.verify(token, 2000), undefined, 'the old key no longer accepted: the session ends');
  assert.equal(after.csrfOk(session, csrf), false);
  assert.equal(new SessionSigner(OLD, none).verify(rotating.issue('bob', 'viewer', 600, 1000).token, 2000), undefined, 'issued with the new key');
});

test('cluster.acceptKeys: keys like cluster.key, at most 2, none repeated; off the wire in backups', () => {
  const hex = (b: Buffer) => b.toString('hex');
  const base = { cluster: { key: hex(OLD) }, boards: [{ id: 'a', address: '127.0.0.1' }], auth: { disabled: true } };
  const cfg = (acceptKeys: unknown) => parseConfig({ ...base, cluster: { ...base.cluster, acceptKeys } });
  assert.deepEqual(cfg([hex(NEW)]).cluster.acceptKeys, [NEW]);
  assert.deepEqual(parseConfig(base).cluster.acceptKeys, []);
  assert.throws(() => cfg(['abc']), /cluster\.acceptKeys\[0\]/);
  assert.throws(() => cfg([hex(OLD)]), /cluster\.acceptKeys\[0\]: repeats/);
  assert.throws(() => cfg([hex(NEW), hex(NEW)]), /cluster\.acceptKeys\[1\]: repeats/);
  assert.throws(() => cfg([hex(NEW), hex(OTHER), hex(randomBytes(32))]), /cluster\.acceptKeys: at most 2/);
  assert.deepEqual(redactConfig({ cluster: { name: 'p', key: hex(OLD), acceptKeys: [hex(NEW)] } }), { cluster: { name: 'p' } });
});
