import assert from 'node:assert/strict';
import { test } from 'node:test';
import { plainDecimal, resolveAction } from '../../node/devices/action-input.ts';
import { parseConfig } from '../../shared/config.ts';
import { EwsError } from '../../shared/errors.ts';

const cfg = parseConfig({
  cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' },
  boards: [{ id: 'b1', address: '127.0.0.1' }],
  auth: { disabled: true },
  devices: [
    {
      id: 'pump',
      driver: 'modbus-rtu',
      attach: [{ board: 'b1', port: '/dev/x' }],
      unitId: 1,
      points: { speed: { holding: 1, max: 3000 }, temp: { holding: 2, scale: 0.1 }, level: { holding: 3, scale: 0.5, offset: 0.25 } },
      actions: { 'set-speed': { write: 'speed', from: 'value' }, 'set-temp': { write: 'temp', from: 'value' }, 'set-level': { write: 'level', from: 'value' } },
    },
  ],
});
const dev = cfg.devices[0]!;
const code = (f: () => unknown) => {
  try {
    f();
    return 'ok';
  } catch (e) {
    return e instanceof EwsError ? `${e.code}: ${e.message}` : String(e);
  }
};

test('an integer register takes whole units only: 2400.7 is a 400, not silently rounded', () => {
  assert.equal(
    code(() => resolveAction(dev, 'set-speed', Buffer.from('{"value":2400}'))),
    'ok',
  );
  assert.match(
    code(() => resolveAction(dev, 'set-speed', Buffer.from('{"value":2400.7}'))),
    /^BAD_REQUEST: "value" 2400.7 must be a whole multiple of 1/,
  );
  assert.equal(
    code(() => resolveAction(dev, 'set-temp', Buffer.from('{"value":21.5}'))),
    'ok',
    'scale 0.1: tenths are whole units',
  );
  assert.match(
    code(() => resolveAction(dev, 'set-temp', Buffer.from('{"value":21.55}'))),
    /^BAD_REQUEST/,
  );
});

test('numbers go to line devices in plain decimal', () => {
  assert.deepEqual([1e-7, -2.5e-8, 1.5e21, 1e21, 42, 0.25, -3].map(plainDecimal), ['0.0000001', '-0.000000025', '1500000000000000000000', '1000000000000000000000', '42', '0.25', '-3']);
});

test('with an offset, the whole units start from it: 1.25 on scale 0.5 from 0.25 is raw 2, taken (the driver refuses what the registers cannot hold)', () => {
  assert.equal(
    code(() => resolveAction(dev, 'set-level', Buffer.from('{"value":1.25}'))),
    'ok',
  );
});
