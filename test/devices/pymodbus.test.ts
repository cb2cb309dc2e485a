// Our Modbus RTU driver against a third-party peer: pymodbus's RTU server on a real pty.

import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DeviceManager } from '../../node/devices/device-manager.ts';
import { openRealPort } from '../../node/devices/serial-line.ts';
import { silentLogger } from '../../node/log.ts';
import { parseConfig } from '../../shared/config.ts';
import type { EwsError } from '../../shared/errors.ts';
import { type PtyPair, ptyPair, until } from './pty.ts';

const PY = '/usr/bin/python3'; // Debian's python3 has python3-pymodbus; the one on PATH may not
const SERVER = resolve(import.meta.dirname, '../peers/pymodbus_server.py');

describe('Modbus RTU driver against pymodbus', () => {
  let pty: PtyPair, py: ChildProcess, m: DeviceManager;
  before(async () => {
    pty = await ptyPair();
    py = spawn(PY, [SERVER, pty.b], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    py.stdout!.on('data', (d) => (out += d));
    py.stderr!.on('data', (d) => (out += d));
    const cfg = parseConfig({
      cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' },
      boards: [{ id: 'b1', address: '127.0.0.1' }],
      devices: [
        {
          id: 'plc',
          driver: 'modbus-rtu',
          attach: [{ board: 'b1', port: pty.a }],
          unitId: 1,
          timeoutMs: 300,
          retries: 0,
          points: {
            c0: { coil: 0 },
            c3: { coil: 3 },
            d0: { discrete: 0 },
            d1: { discrete: 1 },
            h0: { holding: 0 },
            speed: { holding: 1, scale: 0.1 },
            h2: { holding: 2 },
            temp: { input: 0, scale: 0.1 },
            neg: { input: 1, signed: true },
            f32: { holding: 3, type: 'float32' },
            i32: { holding: 5, type: 'int32', wordOrder: 'little' },
            setpoint: { holding: 8, type: 'float32', unit: 'bar' },
          },
          actions: { 'c3-on': { write: 'c3', value: true }, 'set-h2': { write: 'h2', from: 'value' }, 'set-point': { write: 'setpoint', from: 'value' } },
        },
        { id: 'beyond', driver: 'modbus-rtu', attach: [{ board: 'b1', port: pty.a }], unitId: 1, timeoutMs: 300, retries: 0, points: { h16: { holding: 16 } } },
      ],
    });
    m = new DeviceManager(cfg.devices, 0, openRealPort, silentLogger, { queueMax: 8, backoffMaxMs: 200 });
    m.start();
    // pymodbus opens the port a moment after it starts: wait until it answers.
    await until(`pymodbus answering (${out})`, () => py.exitCode === null && m.snapshots()[0]!.online, 10_000);
    const deadline = Date.now() + 15_000;
    for (;;) {
      try {
        await m.read('plc', 'control');
        break;
      } catch (e) {
        if (Date.now() > deadline) throw new Error(`pymodbus never answered: ${(e as Error).message}\n${out}`);
      }
    }
  });
  after(async () => {
    m.stop();
    py.kill();
    await pty.kill();
  });

  test('reads coils, discrete inputs, holding and input registers (scaled, signed) in grouped requests', async () => {
    const r = await m.read('plc', 'control');
    assert.deepEqual(r.result, { c0: false, c3: false, d0: true, d1: false, h0: 7, speed: 150, h2: 0, temp: 21.5, neg: -1, f32: 123.456, i32: -2, setpoint: 0 });
  });

  test('writes a coil and a register and reads them back', async () => {
    await m.act('plc', 'c3-on', true, 'control');
    await m.act('plc', 'set-h2', 4321, 'control');
    const r = await m.read('plc', 'control');
    assert.equal(r.result.c3, true);
    assert.equal(r.result.h2, 4321);
  });

  test('a float32 setpoint is one FC16 write of two registers, read back whole; a value a float32 cannot hold is refused before the bus', async () => {
    const before = m.worker(pty.a)!.transactions;
    const w = await m.act('plc', 'set-point', 2.75, 'control');
    assert.deepEqual(w.result, { setpoint: 2.75 });
    assert.equal(m.worker(pty.a)!.transactions, before + 1, 'one exchange for both registers');
    assert.equal((await m.read('plc', 'control')).result.setpoint, 2.75);
    const sent = m.worker(pty.a)!.transactions;
    await assert.rejects(m.act('plc', 'set-point', 1.23456789, 'control'), (e: EwsError) => e.code === 'BAD_REQUEST' && /does not survive the round trip through a float32/.test(e.message));
    assert.equal(m.worker(pty.a)!.transactions, sent, 'nothing sent');
  });

  test("an illegal address gets the peer's exception 2 as a clear device error", async () => {
    await assert.rejects(m.read('beyond', 'control'), (e: EwsError) => e.code === 'DEVICE_ERROR' && e.status === 502 && /^exception 2, illegal data address$/.test(e.message));
  });
});
