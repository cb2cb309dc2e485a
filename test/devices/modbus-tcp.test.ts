// The modbus-tcp driver against a third-party peer: pymodbus's TCP server (MBAP, and RTU frames
// over TCP as a serial-to-Ethernet server sends them): float32 and int32 in both word orders, an
// FC16 write seen in the server's own datastore, an exception named, the server gone (503
// DEVICE_OFFLINE at once) and back (reconnected with backoff).

import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { DeviceManager } from '../../node/devices/device-manager.ts';
import { openRealPort } from '../../node/devices/serial-line.ts';
import { silentLogger } from '../../node/log.ts';
import { parseConfig } from '../../shared/config.ts';
import type { EwsError } from '../../shared/errors.ts';
import { freePorts } from '../integration/harness.ts';
import { until } from './pty.ts';

const PY = '/usr/bin/python3'; // Debian's python3 has python3-pymodbus; the one on PATH may not
const SERVER = resolve(import.meta.dirname, '../peers/pymodbus_tcp_server.py');

function server(port: number, framing: 'tcp' | 'rtu'): { py: ChildProcess; out: () => string } {
  const py = spawn(PY, [SERVER, String(port), framing], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  py.stdout!.on('data', (d) => (out += d));
  py.stderr!.on('data', (d) => (out += d));
  return { py, out: () => out };
}

const stopped = (p: ChildProcess) =>
  new Promise<void>((r) => {
    if (p.exitCode !== null || p.signalCode !== null) return r();
    p.once('exit', () => r());
    p.kill('SIGKILL');
  });

function manager(port: number, framing: 'tcp' | 'rtu'): DeviceManager {
  const cfg = parseConfig({
    cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' },
    boards: [{ id: 'b1', address: '127.0.0.1' }],
    devices: [
      {
        id: 'meter',
        driver: 'modbus-tcp',
        host: '127.0.0.1',
        port,
        framing,
        unitId: 1,
        attach: [{ board: 'b1' }],
        timeoutMs: 500,
        retries: 0,
        pollMs: 0,
        points: {
          fBig: { holding: 0, type: 'float32' },
          fLittle: { holding: 2, type: 'float32', wordOrder: 'little' },
          iBig: { holding: 4, type: 'int32' },
          iLittle: { holding: 6, type: 'int32', wordOrder: 'little' },
          setpoint: { holding: 8, type: 'float32' },
          small: { holding: 10, scale: 0.5, offset: 1 },
          energy: { input: 0, type: 'uint32', unit: 'Wh' },
        },
        actions: { set: { write: 'setpoint', from: 'value' } },
      },
      { id: 'beyond', driver: 'modbus-tcp', host: '127.0.0.1', port, framing, attach: [{ board: 'b1' }], timeoutMs: 500, retries: 0, pollMs: 0, points: { h30: { holding: 30 } } },
    ],
  });
  const m = new DeviceManager(cfg.devices, 0, openRealPort, silentLogger, { queueMax: 8, backoffMaxMs: 200 });
  m.start();
  return m;
}

for (const framing of ['tcp', 'rtu'] as const)
  describe(`Modbus TCP driver (framing ${framing}) against pymodbus`, () => {
    let s: ReturnType<typeof server>;
    let m: DeviceManager;
    let port = 0;
    const ready = async () => {
      await until('pymodbus answering', () => m.snapshots()[0]!.online, 10_000).catch((e: Error) => {
        throw new Error(`${e.message}: ${s.out()}`);
      });
    };
    after(async () => {
      m?.stop();
      if (s) await stopped(s.py);
    });

    test('reads float32 and int32 in both word orders, a scaled register and a uint32 input', async () => {
      port = (await freePorts(1))[0]!;
      s = server(port, framing);
      m = manager(port, framing);
      await ready();
      const r = await m.read('meter', 'control');
      assert.deepEqual(r.result, { fBig: 123.456, fLittle: 123.456, iBig: -2, iLittle: -100000, setpoint: 0, small: 4.5, energy: 70000 });
    });

    test("a float32 setpoint is one FC16 write, seen in the server's datastore", async () => {
      const at = s.out().length;
      const w = await m.act('meter', 'set', 2.5, 'control');
      assert.deepEqual(w.result, { setpoint: 2.5 });
      // 2.5 as a float32 is 0x40200000: high word first.
      await until('the write in the datastore', () => s.out().slice(at).includes('{"set": 8, "values": [16416, 0]}'), 5000);
      assert.equal(s.out().slice(at).match(/"set"/g)?.length, 1, 'one write of both registers');
      assert.equal((await m.read('meter', 'control')).result.setpoint, 2.5);
    });

    test("an illegal address is the server's exception 2, named", async () => {
      await assert.rejects(m.read('beyond', 'control'), (e: EwsError) => e.code === 'DEVICE_ERROR' && e.status === 502 && e.message === 'exception 2, illegal data address');
    });

    test('the server gone: 503 DEVICE_OFFLINE at once, never a hang; back: reconnected and read again', async () => {
      await stopped(s.py);
      await until('offline', () => !m.snapshots()[0]!.online, 5000);
      const t0 = Date.now();
      await assert.rejects(m.read('meter', 'control'), (e: EwsError) => e.code === 'DEVICE_OFFLINE' && e.status === 503);
      assert.ok(Date.now() - t0 < 1000, 'refused at once');
      s = server(port, framing);
      await ready();
      assert.equal((await m.read('meter', 'control')).result.iLittle, -100000);
    });
  });
