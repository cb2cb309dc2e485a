import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { createCodec, HEADER_BYTES, type Message } from '../../shared/protocol.ts';
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
    assert.deepEqual(d.env, env);
  }
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
