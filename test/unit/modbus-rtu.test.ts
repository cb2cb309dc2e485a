import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LineSplitter } from '../../node/devices/line-splitter.ts';
import { crc16, encodeReply, encodeRequest, parseReply, parseRequest, planReads } from '../../node/devices/modbus-rtu.ts';

test('CRC-16/Modbus of the textbook frame 01 03 00 00 00 0A is C5CD (sent CD C5)', () => {
  assert.equal(crc16(Buffer.from([1, 3, 0, 0, 0, 10])), 0xcdc5);
  assert.deepEqual([...encodeRequest({ unit: 1, fc: 3, address: 0, arg: 10 })], [1, 3, 0, 0, 0, 10, 0xc5, 0xcd]);
});

test('replies round-trip for every function, also when they arrive one byte at a time', () => {
  const cases = [
    { req: { unit: 7, fc: 1, address: 0, arg: 10 }, reply: { kind: 'bits' as const, values: [true, false, true, true, false, false, false, false, true, true] } },
    { req: { unit: 7, fc: 4, address: 2, arg: 3 }, reply: { kind: 'registers' as const, values: [0, 65535, 1234] } },
    { req: { unit: 7, fc: 6, address: 1, arg: 1500 }, reply: { kind: 'written' as const, address: 1, value: 1500 } },
    { req: { unit: 7, fc: 5, address: 0, arg: 0xff00 }, reply: { kind: 'written' as const, address: 0, value: 0xff00 } },
    { req: { unit: 7, fc: 3, address: 9, arg: 1 }, reply: { kind: 'exception' as const, code: 2 } },
  ];
  for (const { req, reply } of cases) {
    const bytes = encodeReply(req, reply);
    for (let n = 0; n < bytes.length; n++) assert.equal(parseReply(req, bytes.subarray(0, n)).status, 'more', `prefix ${n} of fc ${req.fc}`);
    const r = parseReply(req, bytes);
    assert.equal(r.status, 'frame');
    assert.deepEqual(r.status === 'frame' && r.reply, reply);
  }
});

test('bad CRC, wrong unit, wrong function, wrong byte count and trailing garbage are errors, not guesses', () => {
  const req = { unit: 1, fc: 3, address: 0, arg: 2 };
  const good = encodeReply(req, { kind: 'registers', values: [1, 2] });
  const bad = (b: Buffer) => {
    const r = parseReply(req, b);
    return r.status === 'error' ? r.message : r.status;
  };
  const flipped = Buffer.from(good);
  flipped[4] = flipped[4]! ^ 0xff;
  assert.match(bad(flipped), /bad CRC/);
  assert.match(bad(Buffer.from([2, ...good.subarray(1)])), /unit 2/);
  assert.match(bad(Buffer.from([1, 4, 4, 0, 1, 0, 2])), /function 4/);
  assert.match(bad(Buffer.from([1, 3, 2, 0, 1])), /2 data bytes, expected 4/);
  assert.match(bad(Buffer.concat([good, Buffer.from([0x55])])), /trailing/);
});

test('server side: requests parse; line noise is skipped byte by byte', () => {
  const req = encodeRequest({ unit: 1, fc: 6, address: 1, arg: 42 });
  assert.deepEqual(parseRequest(req), { status: 'request', length: 8, req: { unit: 1, fc: 6, address: 1, arg: 42 } });
  assert.deepEqual(parseRequest(Buffer.concat([Buffer.from([0x00]), req])), { status: 'skip', length: 1 });
  assert.deepEqual(parseRequest(req.subarray(0, 5)), { status: 'more' });
});

test('reads are grouped by kind and nearness', () => {
  assert.deepEqual(
    planReads([
      { kind: 'holding', address: 1 },
      { kind: 'input', address: 0 },
      { kind: 'holding', address: 3 },
      { kind: 'holding', address: 100 },
      { kind: 'coil', address: 0 },
    ]),
    [
      { kind: 'coil', address: 0, count: 1 },
      { kind: 'holding', address: 1, count: 3 },
      { kind: 'holding', address: 100, count: 1 },
      { kind: 'input', address: 0, count: 1 },
    ],
  );
});

test('line splitter: eol across chunks, CR stripped, bounded', () => {
  const s = new LineSplitter('\n', 16);
  assert.deepEqual(s.push('OK po'), []);
  assert.deepEqual(s.push('s=12\r\nOK\nOK x'), ['OK pos=12', 'OK']);
  assert.throws(() => s.push('y'.repeat(20)), /longer than 16/);
  assert.deepEqual(s.push('fresh\n'), ['fresh']);
});
