// The demo's simulated ports (serialport's mock binding): devices answer, and can be unplugged.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { demoDevices } from '../../dev/demo.ts';
import { simulatedPortFactory } from '../../dev/simulated-ports.ts';
import { DeviceManager } from '../../node/devices/device-manager.ts';
import { silentLogger } from '../../node/log.ts';
import { parseConfig } from '../../shared/config.ts';
import type { EwsError } from '../../shared/errors.ts';
import { until } from './pty.ts';

test('simulated pump, valve and sensor answer; an unplugged one is offline (503) until replugged', async () => {
  const cfg = parseConfig({
    cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' },
    boards: [{ id: 'b1', address: '127.0.0.1' }],
    devices: demoDevices(['b1']),
    limits: { serialBackoffMaxMs: 100 },
  });
  const sim = simulatedPortFactory(cfg.devices, 0);
  const m = new DeviceManager(cfg.devices, 0, sim.factory, silentLogger, { queueMax: 8, backoffMaxMs: 100 });
  m.start();
  try {
    await until('all online', () => m.snapshots().every((s) => s.online));
    assert.deepEqual(Object.keys((await m.read('pump1', 'control')).result).sort(), ['overheated', 'running', 'speed', 'temp']);
    assert.equal(typeof (await m.read('room', 'control')).result.temp, 'number');
    await m.act('valve3', 'open', undefined, 'control');
    sim.unplug('/dev/ttyUSB0');
    await until('pump offline', () => m.snapshots().find((s) => s.id === 'pump1')!.online === false);
    await assert.rejects(m.read('pump1', 'control'), (e: EwsError) => e.code === 'DEVICE_OFFLINE' && e.status === 503);
    assert.equal((await m.read('valve3', 'control')).result.position !== undefined, true, 'other ports unaffected');
    sim.plug('/dev/ttyUSB0');
    await until('pump back', () => m.snapshots().find((s) => s.id === 'pump1')!.online === true);
    assert.equal((await m.read('pump1', 'control')).result.running, false);
  } finally {
    m.stop();
  }
});
