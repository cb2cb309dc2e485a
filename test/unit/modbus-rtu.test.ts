import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LineSplitter } from '../../node/devices/line-splitter.ts';
import { crc16, parseRtuRequest, readRtuReply, rtuFrame, rtuReply, rtuRequest } from '../../node/devices/modbus-rtu.ts';
import { mbapFrame, readMbapReply } from '../../node/devices/modbus-tcp.ts';
import { planReads } from '../../shared/modbus-config.ts';
import { encodeReply, encodeRequest, exceptionText, parseReply, parseRequest, type Reply, type Request, responseLength } from '../../shared/modbus-pdu.ts';

test('CRC-16/Modbus of the textbook frame 01 03 00 00 00 0A is C5CD (sent CD C5)', () => {
  assert.equal(crc16(Buffer.from([1, 3, 0, 0, 0, 10])), 0xcdc5);
  assert.deepEqual([...rtuRequest(1, { fc: 3, address: 0, count: 10 })], [1, 3, 0, 0, 0, 10, 0xc5, 0xcd]);
});

const cases: Array<{ req: Request; reply: Reply }> = [
  { req: { fc: 1, address: 0, count: 10 }, reply: { kind: 'bits', values: [true, false, true, true, false, false, false, false, true, true] } },
  { req: { fc: 4, address: 2, count: 3 }, reply: { kind: 'registers', values: [0, 65535, 1234] } },
  { req: { fc: 6, address: 1, value: 1500 }, reply: { kind: 'written', address: 1, value: 1500 } },
  { req: { fc: 5, address: 0, value: true }, reply: { kind: 'written', address: 0, value: 0xff00 } },
  { req: { fc: 16, address: 10, values: [0x42f6, 0xe979] }, reply: { kind: 'written', address: 10, value: 2 } },
  { req: { fc: 15, address: 3, values: [true, false, true] }, reply: { kind: 'written', address: 3, value: 3 } },
  { req: { fc: 3, address: 9, count: 1 }, reply: { kind: 'exception', code: 2 } },
];

test('replies round-trip for every function in RTU and MBAP frames, also when they arrive one byte at a time', () => {
  for (const { req, reply } of cases) {
    for (const [name, bytes, read] of [
      ['rtu', rtuReply(7, req.fc, reply), (b: Buffer) => readRtuReply(7, req.fc, b)],
      ['mbap', mbapFrame(513, 7, encodeReply(req.fc, reply)), (b: Buffer) => readMbapReply(513, 7, req.fc, b)],
    ] as const) {
      for (let n = 0; n < bytes.length; n++) assert.equal(read(bytes.subarray(0, n)).status, 'more', `${name}: prefix ${n} of fc ${req.fc}`);
      const r = read(bytes);
      assert.equal(r.status, 'frame', `${name} fc ${req.fc}: ${JSON.stringify(r)}`);
      assert.deepEqual(r.status === 'frame' && parseReply(req, r.pdu), reply);
    }
  }
  assert.equal(exceptionText(2), 'exception 2, illegal data address');
  assert.equal(exceptionText(11), 'exception 11, gateway target device failed to respond');
});

test('bad CRC, wrong unit, transaction or function, wrong byte count and trailing garbage are errors, not guesses', () => {
  const req: Request = { fc: 3, address: 0, count: 2 };
  const good = rtuReply(1, 3, { kind: 'registers', values: [1, 2] });
  const bad = (b: Buffer) => {
    const r = readRtuReply(1, 3, b);
    return r.status === 'error' ? r.message : r.status === 'frame' ? JSON.stringify(parseReply(req, r.pdu)) : r.status;
  };
  const flipped = Buffer.from(good);
  flipped[4] = flipped[4]! ^ 0xff;
  assert.match(bad(flipped), /bad CRC/);
  assert.match(bad(Buffer.from([2, ...good.subarray(1)])), /unit 2/);
  assert.match(bad(rtuFrame(1, Buffer.from([4, 4, 0, 1, 0, 2]))), /function 4/);
  assert.match(bad(rtuFrame(1, Buffer.from([3, 2, 0, 1]))), /2 data bytes, expected 4/);
  assert.match(bad(Buffer.concat([good, Buffer.from([0x55])])), /trailing/);
  const m = mbapFrame(9, 1, encodeReply(3, { kind: 'registers', values: [1, 2] }));
  const mb = (b: Buffer, tid = 9) => {
    const r = readMbapReply(tid, 1, 3, b);
    return r.status === 'error' ? r.message : r.status;
  };
  assert.match(mb(m, 10), /transaction 9, expected 10/);
  const proto = Buffer.from(m);
  proto[3] = 1;
  assert.match(mb(proto), /protocol id 1/);
  assert.match(mb(Buffer.concat([m, Buffer.from([0])])), /trailing/);
  assert.deepEqual(responseLength(3, Buffer.from([0x83])), 2);
  assert.deepEqual(responseLength(3, Buffer.from([0x84])), { error: 'reply with function 132, expected 3' });
});

test('server side: requests parse at the PDU limits; a bad one is the exception to answer; RTU line noise is skipped byte by byte', () => {
  for (const { req } of cases) assert.deepEqual(parseRequest(encodeRequest(req)), { req });
  assert.deepEqual(parseRequest(encodeRequest({ fc: 3, address: 0, count: 125 })), { req: { fc: 3, address: 0, count: 125 } });
  assert.deepEqual(parseRequest(encodeRequest({ fc: 3, address: 0, count: 126 })), { exception: 3 });
  assert.deepEqual(parseRequest(encodeRequest({ fc: 1, address: 0, count: 2001 })), { exception: 3 });
  assert.deepEqual(parseRequest(encodeRequest({ fc: 16, address: 0, values: new Array(124).fill(1) })), { exception: 3 });
  assert.deepEqual(parseRequest(Buffer.from([43, 14, 1, 0])), { exception: 1 });
  assert.deepEqual(parseRequest(Buffer.from([5, 0, 1, 0x12, 0x34])), { exception: 3 });
  const frame = rtuRequest(1, { fc: 6, address: 1, value: 42 });
  assert.deepEqual(parseRtuRequest(frame), { status: 'request', unit: 1, length: 8, req: { fc: 6, address: 1, value: 42 } });
  assert.deepEqual(parseRtuRequest(Buffer.concat([Buffer.from([0x00]), frame])), { status: 'skip', length: 1 });
  assert.deepEqual(parseRtuRequest(frame.subarray(0, 5)), { status: 'more' });
});

test('reads are grouped by kind and nearness, a value of several registers read whole, within the PDU limits', () => {
  assert.deepEqual(
    planReads([
      { kind: 'holding', address: 1, words: 1 },
      { kind: 'input', address: 0, words: 2 },
      { kind: 'holding', address: 3, words: 2 },
      { kind: 'holding', address: 100, words: 4 },
      { kind: 'coil', address: 0, words: 1 },
    ]),
    [
      { kind: 'coil', address: 0, count: 1 },
      { kind: 'holding', address: 1, count: 4 },
      { kind: 'holding', address: 100, count: 4 },
      { kind: 'input', address: 0, count: 2 },
    ],
  );
  // 63 float32s side by side: 125 registers in one request, the last one in a second.
  const many = Array.from({ length: 63 }, (_, i) => ({ kind: 'holding' as const, address: 2 * i, words: 2 }));
  assert.deepEqual(planReads(many), [
    { kind: 'holding', address: 0, count: 124 },
    { kind: 'holding', address: 124, count: 2 },
  ]);
  const bits = Array.from({ length: 2001 }, (_, i) => ({ kind: 'coil' as const, address: i, words: 1 }));
  assert.deepEqual(
    planReads(bits).map((s) => s.count),
    [2000, 1],
  );
});

test('line splitter: eol across chunks, CR stripped, bounded', () => {
  const s = new LineSplitter('\n', 16);
  assert.deepEqual(s.push('OK po'), []);
  assert.deepEqual(s.push('s=12\r\nOK\nOK x'), ['OK pos=12', 'OK']);
  assert.throws(() => s.push('y'.repeat(20)), /longer than 16/);
  assert.deepEqual(s.push('fresh\n'), ['fresh']);
});
