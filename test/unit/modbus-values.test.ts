import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeNumber, encodeNumber, type NumberFormat, type NumberType, WORDS } from '../../shared/modbus-values.ts';
import { rng } from '../sim/simulator.ts';

const fmt = (type: NumberType, over: Partial<NumberFormat> = {}): NumberFormat => ({ type, wordOrder: 'big', byteSwap: false, scale: 1, offset: 0, ...over });

test('known registers: float32 123.456 in the four layouts, int32 and uint32, float64', () => {
  // 123.456 as a float32 is 0x42F6E979.
  assert.equal(decodeNumber([0x42f6, 0xe979], fmt('float32')), 123.456);
  assert.equal(decodeNumber([0xe979, 0x42f6], fmt('float32', { wordOrder: 'little' })), 123.456);
  assert.equal(decodeNumber([0xf642, 0x79e9], fmt('float32', { byteSwap: true })), 123.456);
  assert.equal(decodeNumber([0x79e9, 0xf642], fmt('float32', { wordOrder: 'little', byteSwap: true })), 123.456);
  assert.deepEqual(encodeNumber(123.456, fmt('float32')), [0x42f6, 0xe979]);
  assert.deepEqual(encodeNumber(123.456, fmt('float32', { wordOrder: 'little' })), [0xe979, 0x42f6]);
  assert.equal(decodeNumber([0xffff, 0xfffe], fmt('int32')), -2);
  assert.equal(decodeNumber([0xfffe, 0xffff], fmt('int32', { wordOrder: 'little' })), -2);
  assert.equal(decodeNumber([0xffff, 0xfffe], fmt('uint32')), 4294967294);
  assert.equal(decodeNumber([0x0001, 0x0000], fmt('uint32')), 65536);
  assert.equal(decodeNumber([0xffff], fmt('int16')), -1);
  assert.equal(decodeNumber([0xffff], fmt('uint16')), 65535);
  // 1.5 as a float64 is 0x3FF8000000000000.
  assert.equal(decodeNumber([0x3ff8, 0, 0, 0], fmt('float64')), 1.5);
  assert.equal(decodeNumber([0, 0, 0, 0x3ff8], fmt('float64', { wordOrder: 'little' })), 1.5);
});

test('scale and offset: value = raw × scale + offset, and a write inverts it', () => {
  const f = fmt('int16', { scale: 0.1, offset: -40 });
  assert.equal(decodeNumber([615], f), 21.5);
  assert.deepEqual(encodeNumber(21.5, f), [615]);
  assert.deepEqual(encodeNumber(-43.2, f), [0xffe0]); // raw -32
  assert.match(String(encodeNumber(21.55, f)), /not a whole multiple of the scale 0\.1.*nearest/);
  assert.match(String(encodeNumber(4000, f)), /out of range for int16/);
  assert.match(String(encodeNumber(-1, fmt('uint16'))), /out of range for uint16/);
  assert.match(String(encodeNumber(2 ** 32, fmt('uint32'))), /out of range/);
  assert.match(String(encodeNumber(Number.NaN, fmt('float32'))), /not a finite number/);
  assert.match(String(encodeNumber(1e39, fmt('float32'))), /beyond a float32/);
  // A float32 holds 7 significant digits: more does not round-trip.
  assert.match(String(encodeNumber(123.4567891, fmt('float32'))), /does not survive the round trip/);
  assert.deepEqual(encodeNumber(0.1, fmt('float64')), [0x3fb9, 0x9999, 0x9999, 0x999a]);
});

test('every layout round-trips what it can hold (seeded)', () => {
  const r = rng(36);
  for (const type of ['int16', 'uint16', 'int32', 'uint32', 'float32', 'float64'] as const)
    for (const wordOrder of ['big', 'little'] as const)
      for (const byteSwap of [false, true]) {
        const f = fmt(type, { wordOrder, byteSwap });
        for (let k = 0; k < 200; k++) {
          const regs = Array.from({ length: WORDS[type] }, () => Math.floor(r() * 0x10000));
          const v = decodeNumber(regs, f);
          if (!Number.isFinite(v)) continue;
          const back = encodeNumber(v, f);
          assert.ok(Array.isArray(back), `${type} ${wordOrder} ${byteSwap}: ${v}: ${back}`);
          assert.equal(decodeNumber(back, f), v);
        }
      }
});
