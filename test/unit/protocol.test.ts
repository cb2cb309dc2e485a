import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { createCodec, HEADER_BYTES, type Message, PROTOCOL_OLDEST, PROTOCOL_VERSION } from '../../shared/protocol.ts';
import { linkVersion, ProtocolPeers } from '../../shared/protocol-peers.ts';
import { ReplayGuard } from '../../shared/replay-guard.ts';
import { rng } from '../sim/simulator.ts';

const key = Buffer.alloc(32, 7);
const codec = createCodec({ key, cluster: 'plant-a', boards: 3, packetBytesMax: 1400 });
const env = { epoch: 1_700_000_000_000, counter: 42 };
const msgs: Message[] = [
  { type: 'STATE', sender: 1, term: 4, body: { master: 1, linknum: [3, 0, 65535], runstate: [-1, 1, 0], drained: [false, true, false] } },
  { type: 'ACK', sender: 2, term: 4, body: { id: 4_000_000_000, load: 7 } },
  { type: 'REPORT', sender: 0, term: 4, body: { id: 0, load: 0 } },
  { type: 'JOIN', sender: 2, term: 0, body: {} },
  { type: 'HANDOVER', sender: 0, term: 6, body: { to: 2 } },
];

test('every packet type round-trips with its envelope', () => {
  for (const m of msgs) {
    const d = codec.decode(codec.encode(m, env));
    assert.ok(d.ok);
    assert.deepEqual(d.msg, m);
    assert.deepEqual(d.env, { ...env, version: PROTOCOL_VERSION });
  }
});

test('a packet of the version before is read; two apart or newer is dropped; none is written outside the two', () => {
  assert.equal(PROTOCOL_OLDEST, PROTOCOL_VERSION - 1);
  for (const m of msgs) {
    const d = codec.decode(codec.encode(m, env, PROTOCOL_OLDEST));
    assert.ok(d.ok);
    assert.deepEqual(d.msg, m);
    assert.equal(d.env.version, PROTOCOL_OLDEST);
  }
  // Re-signed with the version byte changed: authentic, but not a version spoken here.
  for (const v of [PROTOCOL_OLDEST - 1, PROTOCOL_VERSION + 1]) {
    const b = codec.encode(msgs[0]!, env);
    b[2] = v;
    createHmac('sha256', key)
      .update(b.subarray(0, b.length - 32))
      .digest()
      .copy(b, b.length - 32);
    const d = codec.decode(b);
    assert.equal(d.ok ? 'ok' : d.reason, 'version');
  }
  assert.throws(() => codec.encode(msgs[0]!, env, PROTOCOL_OLDEST - 1), /not spoken/);
  assert.throws(() => codec.encode(msgs[0]!, env, PROTOCOL_VERSION + 1), /not spoken/);
});

test('the version written is the lowest a board heard within the silence limit speaks', () => {
  const p = new ProtocolPeers(3, 0, 1000);
  assert.equal(p.writing(0), PROTOCOL_VERSION, 'nobody heard: its own');
  p.heard(1, 100, PROTOCOL_VERSION, undefined, 0);
  p.heard(2, 100, PROTOCOL_OLDEST, undefined, 0);
  assert.equal(p.writing(10), PROTOCOL_OLDEST, 'an older board holds the cluster at its version');
  // Board 1 writes down to board 2 too, but its HEALTH says what it speaks: it does not pull the version down.
  p.heard(1, 100, PROTOCOL_OLDEST, undefined, 500);
  p.heard(1, 100, PROTOCOL_OLDEST, PROTOCOL_VERSION, 600);
  assert.deepEqual(p.versions(), [PROTOCOL_VERSION, PROTOCOL_VERSION, PROTOCOL_OLDEST]);
  // Board 2 restarts on the new release (a new boot epoch): what it spoke before is forgotten.
  p.heard(2, 200, PROTOCOL_VERSION, undefined, 700);
  assert.equal(p.writing(700), PROTOCOL_VERSION);
  // An old board that stays silent past the limit no longer holds the others down.
  p.heard(2, 300, PROTOCOL_OLDEST, undefined, 800);
  assert.equal(p.writing(1800), PROTOCOL_OLDEST);
  assert.equal(p.writing(1801), PROTOCOL_VERSION);
  // A stated version below the packet's own is not believed; its own packets are ignored.
  p.heard(1, 100, PROTOCOL_VERSION, 0, 1900);
  p.heard(0, 1, PROTOCOL_OLDEST, undefined, 1900);
  assert.deepEqual(p.versions(), [PROTOCOL_VERSION, PROTOCOL_VERSION, PROTOCOL_OLDEST]);
  // A dispatch link opens in the board's version, this release's when it speaks newer or was not heard.
  assert.deepEqual([0, PROTOCOL_OLDEST, PROTOCOL_VERSION, PROTOCOL_VERSION + 1].map(linkVersion), [PROTOCOL_VERSION, PROTOCOL_OLDEST, PROTOCOL_VERSION, PROTOCOL_VERSION]);
});

test('each kind of bad packet is dropped with its reason', () => {
  const good = codec.encode(msgs[0]!, env);
  const flip = (i: number) => {
    const b = Buffer.from(good);
    b[i] = b[i]! ^ 1;
    return b;
  };
  const reason = (b: Buffer) => {
    const d = codec.decode(b);
    return d.ok ? 'ok' : d.reason;
  };
  assert.equal(reason(good.subarray(0, 40)), 'truncated');
  assert.equal(reason(Buffer.alloc(1401)), 'oversized');
  assert.equal(reason(flip(0)), 'garbage');
  assert.equal(reason(flip(2)), 'version');
  assert.equal(reason(flip(5)), 'cluster');
  assert.equal(reason(Buffer.concat([good, Buffer.alloc(1)])), 'length');
  assert.equal(reason(flip(HEADER_BYTES + 1)), 'auth'); // body tampered
  assert.equal(reason(flip(14)), 'auth'); // term tampered
  assert.equal(reason(createCodec({ key: randomBytes(32), cluster: 'plant-a', boards: 3, packetBytesMax: 1400 }).encode(msgs[0]!, env)), 'auth');
  // Validly signed but inconsistent: a STATE whose master is not its sender, or a board count mismatch.
  assert.equal(reason(codec.encode({ ...msgs[0]!, body: { master: 2, linknum: [0, 0, 0], runstate: [1, 1, 1] } } as Message, env)), 'malformed');
  const four = createCodec({ key, cluster: 'plant-a', boards: 4, packetBytesMax: 1400 });
  assert.equal(reason(four.encode({ type: 'STATE', sender: 3, term: 1, body: { master: 3, linknum: [0, 0, 0, 0], runstate: [1, 1, 1, 1] } }, env)), 'sender');
  assert.equal(reason(four.encode({ type: 'STATE', sender: 1, term: 1, body: { master: 1, linknum: [0, 0, 0, 0], runstate: [1, 1, 1, 1] } }, env)), 'malformed');
});

test('fuzz: 20000 mutated and random packets never throw and never decode as something else', () => {
  const r = rng(99);
  for (let k = 0; k < 20_000; k++) {
    const base = codec.encode(msgs[k % msgs.length]!, env);
    let b: Buffer;
    if (k % 4 === 0) b = randomBytes(Math.floor(r() * 200));
    else {
      b = Buffer.from(base);
      const flips = 1 + Math.floor(r() * 4);
      for (let f = 0; f < flips; f++) b[Math.floor(r() * b.length)] = Math.floor(r() * 256);
      if (k % 3 === 0) b = b.subarray(0, Math.floor(r() * b.length));
    }
    const d = codec.decode(b);
    if (d.ok) assert.ok(b.equals(base), 'only the untouched packet decodes');
  }
});

test('replay guard: fresh once, reordering within the window, replays and old epochs refused, reboot accepted', () => {
  const g = new ReplayGuard(2);
  const e = (epoch: number, counter: number) => ({ epoch, counter });
  assert.equal(g.accept(0, e(10, 5)), true);
  assert.equal(g.accept(0, e(10, 5)), false, 'same packet twice');
  assert.equal(g.accept(0, e(10, 7)), true);
  assert.equal(g.accept(0, e(10, 6)), true, 'late but unseen, within the window');
  assert.equal(g.accept(0, e(10, 6)), false);
  assert.equal(g.accept(0, e(10, 100)), true);
  assert.equal(g.accept(0, e(10, 68)), false, 'older than the window');
  assert.equal(g.accept(0, e(9, 1000)), false, 'an earlier boot');
  assert.equal(g.accept(0, e(11, 1)), true, 'a reboot');
  assert.equal(g.accept(1, e(10, 5)), true, 'senders are independent');
});

test('a STATE without the drained mask (the release before) decodes with no board drained', () => {
  const mine = codec.encode({ type: 'STATE', sender: 1, term: 4, body: { master: 1, linknum: [3, 0, 1], runstate: [1, 1, 0], drained: [true, false, false] } }, env);
  // The same packet as the release before built it: the body without its last byte, the length and the tag made again.
  const bodyLen = mine.readUInt16BE(27) - 1;
  const old = Buffer.concat([mine.subarray(0, HEADER_BYTES + bodyLen), Buffer.alloc(32)]);
  old.writeUInt16BE(bodyLen, 27);
  createHmac('sha256', key)
    .update(old.subarray(0, HEADER_BYTES + bodyLen))
    .digest()
    .copy(old, HEADER_BYTES + bodyLen);
  const d = codec.decode(old);
  assert.ok(d.ok, JSON.stringify(d));
  assert.deepEqual(d.msg.body, { master: 1, linknum: [3, 0, 1], runstate: [1, 1, 0], drained: [false, false, false] });
  const decoded = codec.decode(mine);
  assert.ok(decoded.ok && (decoded.msg.body as { drained: boolean[] }).drained[0] === true);
});
