// The dispatch link's frames: every field survives, nothing can be altered unnoticed, a stream
// splits into frames at any chunk boundary, and the size bound holds.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FrameCodec, FrameSplitter, TAG_BYTES } from '../../shared/dispatch-frame.ts';
import { headerLines, headerPairs } from '../../shared/header-lines.ts';

const key = Buffer.alloc(32, 5);
const codec = new FrameCodec(key, 4096);
const req = {
  id: 42,
  master: 0,
  term: 9,
  target: 2,
  epoch: 1_796_036_716_449,
  cls: 1,
  level: 2,
  origin: 'schedule' as const,
  method: 'POST',
  url: '/cgi-bin/devices/pump1/read?x=1',
  headers: ['idempotency-key', 'k1', 'cookie', 'a=b'],
  body: Buffer.from('{"value":1}'),
};

test('a request frame round-trips every field, a scheduled origin included (it keeps its low priority on the device board)', () => {
  const f = codec.decode(codec.request(req));
  assert.ok(typeof f !== 'string' && f.type === 'request');
  assert.deepEqual({ ...f, body: f.body.toString() }, { type: 'request', ...req, body: '{"value":1}' });
  const head = headerLines(['x-ews-board', 'b3', 'content-length', '99', 'set-cookie', 'a=1', 'set-cookie', 'b=2', 'x-bad', 'v\r\nx-injected: 1']);
  assert.equal(head.toString(), 'x-ews-board: b3\r\nset-cookie: a=1\r\nset-cookie: b=2\r\n', 'framing headers and unsafe values are left out');
  const a = codec.decode(codec.answer({ id: 42, load: 3, status: 201, refused: false, head, body: Buffer.from('ok') }));
  assert.ok(typeof a !== 'string' && a.type === 'answer');
  assert.deepEqual([a.id, a.load, a.status, a.refused, headerPairs(a.head), a.body.toString()], [42, 3, 201, false, ['x-ews-board', 'b3', 'set-cookie', 'a=1', 'set-cookie', 'b=2'], 'ok']);
  // A refusal, and an answer the board gave up on (status 0), cross the link as what they are.
  const r = codec.decode(codec.answer({ id: 43, load: 0, status: 403, refused: true, head: headerLines([]), body: Buffer.from('no') }));
  assert.ok(typeof r !== 'string' && r.type === 'answer' && r.refused && r.status === 403);
  const g = codec.decode(codec.answer({ id: 44, load: 0, status: 0, refused: false, head: headerLines([]), body: Buffer.alloc(0) }));
  assert.ok(typeof g !== 'string' && g.type === 'answer' && g.status === 0);
  // A head that does not end a line would run into the master's own lines: refused.
  assert.equal(codec.decode(codec.answer({ id: 45, load: 0, status: 200, refused: false, head: Buffer.from('x: 1'), body: Buffer.alloc(0) })), 'malformed');
  assert.deepEqual(codec.decode(codec.cancel(42)), { type: 'cancel', id: 42 });
});

test('any altered byte, or another key, fails the tag', () => {
  const good = codec.request(req);
  for (let i = 4; i < good.length - TAG_BYTES; i++) {
    const bad = Buffer.from(good);
    bad[i]! ^= 0x01;
    assert.equal(codec.decode(bad), 'auth', `byte ${i}`);
  }
  assert.equal(new FrameCodec(Buffer.alloc(32, 6), 4096).decode(good), 'auth');
  assert.equal(codec.decode(good.subarray(0, 10)), 'malformed');
});

test('the splitter finds frames at any chunk boundary and refuses one over the bound', () => {
  const a = codec.request(req),
    b = codec.cancel(7),
    stream = Buffer.concat([a, b]);
  for (let cut = 1; cut < stream.length; cut += 7) {
    const s = new FrameSplitter(4096);
    const got = [...(s.push(stream.subarray(0, cut)) as Buffer[]), ...(s.push(stream.subarray(cut)) as Buffer[])];
    assert.deepEqual(
      got.map((f) => f.length),
      [a.length, b.length],
      `cut at ${cut}`,
    );
  }
  const big = Buffer.alloc(8);
  big.writeUInt32BE(5000, 0);
  assert.equal(new FrameSplitter(4096).push(big), 'oversized');
  assert.equal(new FrameCodec(key, 64).decode(a), 'oversized');
});

test('a frame in many small writes is joined once, byte for byte; a length prefix over the bound is refused on its own, before any body; the prefix may itself be split', () => {
  const body = Buffer.alloc(3000, 7);
  const frame = codec.request({ ...req, body });
  const s = new FrameSplitter(4096);
  let got: Buffer[] = [];
  for (let i = 0; i < frame.length; i += 200) {
    const r = s.push(frame.subarray(i, i + 200));
    assert.notEqual(r, 'oversized');
    got = got.concat(r as Buffer[]);
    if (i + 200 < frame.length) assert.equal(s.partial, true);
  }
  assert.equal(got.length, 1);
  assert.ok(got[0]!.equals(frame));
  assert.equal(s.partial, false);
  const claim = Buffer.alloc(4);
  claim.writeUInt32BE(2 * 1024 * 1024, 0);
  const t = new FrameSplitter(4096);
  assert.deepEqual(t.push(claim.subarray(0, 2)), [], 'half a prefix: nothing known yet');
  assert.equal(t.push(claim.subarray(2)), 'oversized', 'refused the moment the prefix is whole');
});

test('a batch carries its frames under one tag: every frame comes back, any altered byte fails the whole batch, a batch in a batch is refused', () => {
  const parts = [codec.request(req, false), codec.cancel(7, false), codec.answer({ id: 9, load: 1, status: 200, refused: false, head: headerLines(['x-a', '1']), body: Buffer.from('b') }, false)];
  const sealed = codec.sealBatch(parts);
  const d = codec.decode(sealed);
  assert.ok(typeof d !== 'string' && d.type === 'batch');
  assert.deepEqual(
    d.frames.map((f) => [f.type, f.id]),
    [
      ['request', 42],
      ['cancel', 7],
      ['answer', 9],
    ],
  );
  assert.equal(sealed.length, parts.reduce((n, p) => n + p.length, 0) + 5 + TAG_BYTES, 'one tag for all of them');
  for (let i = 4; i < sealed.length - TAG_BYTES; i += 3) {
    const bad = Buffer.from(sealed);
    bad[i]! ^= 0x01;
    assert.equal(codec.decode(bad), 'auth', `byte ${i}`);
  }
  // One frame alone is sealed as itself, byte for byte what the single-frame encoder makes.
  assert.deepEqual(codec.sealBatch([codec.cancel(7, false)]), codec.cancel(7));
  assert.equal(codec.decode(codec.sealBatch([sealed.subarray(0, sealed.length - TAG_BYTES), codec.cancel(1, false)])), 'malformed');
});

test('a tagged frame whose field lengths do not add up is malformed, whichever length is off and by how much', () => {
  const frame = codec.request(req, false);
  const lineAt = 5 + 19;
  const headersAt = lineAt + 2 + frame.readUInt16BE(lineAt);
  const bodyAt = headersAt + 2 + frame.readUInt16BE(headersAt);
  const answer = codec.answer({ id: 9, load: 1, status: 200, refused: false, head: headerLines(['x-a', '1']), body: Buffer.from('b') }, false);
  const headAt = 5 + 9;
  const answerBodyAt = headAt + 2 + answer.readUInt16BE(headAt);
  const cases: Array<[Buffer, number, 2 | 4]> = [
    [frame, lineAt, 2],
    [frame, headersAt, 2],
    [frame, bodyAt, 4],
    [answer, headAt, 2],
    [answer, answerBodyAt, 4],
  ];
  for (const [good, at, width] of cases) {
    for (const delta of [1, -1, 1000]) {
      const bad = Buffer.from(good);
      const n = width === 2 ? bad.readUInt16BE(at) : bad.readUInt32BE(at);
      if (n + delta < 0) continue;
      if (width === 2) bad.writeUInt16BE(n + delta, at);
      else bad.writeUInt32BE(n + delta, at);
      assert.equal(codec.decode(codec.sealBatch([bad])), 'malformed', `length at ${at} off by ${delta}`);
    }
    assert.notEqual(codec.decode(codec.sealBatch([good])), 'malformed', 'the unaltered frame decodes');
  }
  // Too short to hold its fixed fields at all.
  assert.equal(codec.decode(codec.sealBatch([frame.subarray(0, 20)])), 'malformed');
  assert.equal(codec.decode(codec.sealBatch([answer.subarray(0, 12)])), 'malformed');
});
