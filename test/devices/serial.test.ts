// Drivers through serialport on real ptys (socat) against the simulators, with every fault.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ValveSimulator } from '../../dev/simulators/line-devices.ts';
import { PumpSimulator } from '../../dev/simulators/pump.ts';
import { DeviceManager } from '../../node/devices/device-manager.ts';
import { openRealPort } from '../../node/devices/serial-line.ts';
import { silentLogger } from '../../node/log.ts';
import { parseConfig } from '../../shared/config.ts';
import { EwsError } from '../../shared/errors.ts';
import { type PtyPair, ptyPair, ptyWire, until } from './pty.ts';

const KEY = 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4';
const pumpDevice = (port: string, extra: Record<string, unknown> = {}) => ({
  id: 'pump1',
  driver: 'modbus-rtu',
  attach: [{ board: 'b1', port }],
  unitId: 1,
  timeoutMs: 150,
  retries: 1,
  points: { running: { coil: 0 }, speed: { holding: 1, min: 0, max: 3000, unit: 'rpm' }, temp: { input: 0, scale: 0.1, unit: '°C' }, hot: { discrete: 0 } },
  actions: { start: { write: 'running', value: true }, stop: { write: 'running', value: false }, 'set-speed': { write: 'speed', from: 'value' } },
  ...extra,
});
const valveDevice = (port: string) => ({
  id: 'valve3',
  driver: 'line',
  attach: [{ board: 'b1', port }],
  eol: '\n',
  ok: '^OK',
  timeoutMs: 150,
  retries: 0,
  points: { position: { query: 'POS?', parse: '^OK pos=(\\d+)', unit: '%' } },
  actions: { open: { send: 'OPEN' }, close: { send: 'CLOSE' }, set: { send: 'POS {value}', min: 0, max: 100 }, bogus: { send: 'FLY' } },
});
const manager = (devices: unknown[], limits: Record<string, number> = {}) => {
  const cfg = parseConfig({ cluster: { key: KEY }, boards: [{ id: 'b1', address: '127.0.0.1' }], devices, limits: { serialBackoffMaxMs: 200, ...limits } });
  const m = new DeviceManager(cfg.devices, 0, openRealPort, silentLogger, { queueMax: cfg.limits.serialQueueMax, backoffMaxMs: cfg.limits.serialBackoffMaxMs });
  m.start();
  return m;
};
const online = (m: DeviceManager, id: string) => until(`${id} online`, () => m.snapshots().find((s) => s.id === id)?.online === true);
const code = async (p: Promise<unknown>) => {
  try {
    await p;
    return 'ok';
  } catch (e) {
    return e instanceof EwsError ? e.code : String(e);
  }
};

describe('Modbus RTU pump over a pty', () => {
  let pty: PtyPair, sim: PumpSimulator, m: DeviceManager, dev: Awaited<ReturnType<typeof ptyWire>>;
  before(async () => {
    pty = await ptyPair();
    dev = await ptyWire(pty.b);
    sim = new PumpSimulator(1).attach(dev.wire);
    m = manager([pumpDevice(pty.a)]);
    await online(m, 'pump1');
  });
  after(async () => {
    m.stop();
    await dev.close();
    await pty.kill();
  });

  test('reads every point with scale; actions drive the device', async () => {
    const r = await m.read('pump1', 'control');
    assert.deepEqual(r.result, { running: false, speed: 1200, temp: 20, hot: false });
    await m.act('pump1', 'start', true, 'control');
    await m.act('pump1', 'set-speed', 2500, 'control');
    assert.equal(sim.running, true);
    assert.equal(sim.speed, 2500);
    const again = await m.read('pump1', 'control');
    assert.equal(again.result.running, true);
    assert.equal(m.snapshots()[0]!.points.speed, 2500);
  });

  test('a device refusal (Modbus exception) is a 502 with its meaning, not retried', async () => {
    const before = sim.requests;
    await assert.rejects(m.act('pump1', 'set-speed', 6000, 'control'), (e: EwsError) => e.code === 'DEVICE_ERROR' && /^exception 3, illegal data value$/.test(e.message));
    assert.equal(sim.requests, before + 1);
  });

  test('silence once is retried; silence past the retries is a 504; the port is not wedged', async () => {
    sim.faults.drop = 1;
    assert.equal(await code(m.read('pump1', 'control')), 'ok');
    sim.faults.drop = 2 * 4; // every request of a 4-request read, twice
    assert.equal(await code(m.read('pump1', 'control')), 'DEVICE_TIMEOUT');
    sim.faults.drop = 0;
    assert.equal(await code(m.read('pump1', 'control')), 'ok');
  });

  test('garbage and partial frames become errors or timeouts, retried, and never wedge the port', async () => {
    sim.faults.garbage = 1;
    assert.equal(await code(m.read('pump1', 'control')), 'ok', 'garbage once: retried');
    sim.faults.partial = 1;
    assert.equal(await code(m.read('pump1', 'control')), 'ok', 'partial once: timed out, retried');
    sim.faults.badCrc = 1;
    assert.equal(await code(m.read('pump1', 'control')), 'ok', 'bad CRC once: retried');
    sim.faults.badCrc = 10;
    await assert.rejects(m.read('pump1', 'control'), (e: EwsError) => e.code === 'DEVICE_ERROR' && e.status === 502 && /bad CRC/.test(e.message));
    sim.faults.badCrc = 0;
    sim.faults.garbage = 10;
    assert.equal(await code(m.read('pump1', 'control')), 'DEVICE_ERROR');
    sim.faults.garbage = 0;
    assert.equal(await code(m.read('pump1', 'control')), 'ok');
  });

  test('a late answer (after the timeout) is discarded, not taken for the next request', async () => {
    // Both attempts (150 ms each) time out; their answers arrive at ~400 and ~575 ms, between transactions.
    let late = 0;
    m.worker(pty.a)!.line.on('data', (d) => (late += d.length));
    sim.faults.delayMs = 400;
    assert.equal(await code(m.act('pump1', 'set-speed', 1000, 'control')), 'DEVICE_TIMEOUT');
    sim.faults.delayMs = 0;
    await until('both late answers arrived, with nobody listening', () => late >= 16, 2000);
    const r = await m.read('pump1', 'control');
    assert.equal(r.result.speed, 1000, 'the write did land on the device');
    assert.deepEqual(Object.keys(r.result).sort(), ['hot', 'running', 'speed', 'temp']);
  });

  test('control goes before queued scheduled reads; one request at a time', async () => {
    sim.faults.delayMs = 30;
    const order: string[] = [];
    const jobs = [
      m.read('pump1', 'scheduled').then(() => order.push('s1')),
      m.read('pump1', 'scheduled').then(() => order.push('s2')),
      m.read('pump1', 'scheduled').then(() => order.push('s3')),
      m.act('pump1', 'stop', false, 'control').then(() => order.push('c')),
    ];
    await Promise.all(jobs);
    sim.faults.delayMs = 0;
    assert.deepEqual(order, ['s1', 'c', 's2', 's3']);
  });
});

describe('port loss and the bounded queue', () => {
  test('socat killed mid-request: offline (503), reopened with backoff, back by itself', async () => {
    const pty = await ptyPair();
    let dev = await ptyWire(pty.b);
    const sim = new PumpSimulator(1);
    sim.attach(dev.wire);
    const m = manager([pumpDevice(pty.a, { timeoutMs: 1000 })]);
    try {
      await online(m, 'pump1');
      sim.faults.drop = 1;
      const seen = sim.requests;
      const pending = code(m.read('pump1', 'control'));
      await until('the request reached the device (and was left unanswered)', () => sim.requests > seen);
      await pty.kill();
      assert.equal(await pending, 'DEVICE_OFFLINE');
      await until('offline', () => m.snapshots()[0]!.online === false);
      const e = await m.read('pump1', 'control').catch((x: EwsError) => x);
      assert.ok(e instanceof EwsError && e.code === 'DEVICE_OFFLINE' && e.status === 503 && e.retryAfterS !== undefined);
      await dev.close();
      await pty.restart();
      dev = await ptyWire(pty.b);
      sim.attach(dev.wire);
      await online(m, 'pump1');
      assert.equal(await code(m.read('pump1', 'control')), 'ok');
    } finally {
      m.stop();
      await dev.close();
      await pty.kill();
    }
  });

  test('past serialQueueMax: DEVICE_BUSY at once', async () => {
    const pty = await ptyPair();
    const dev = await ptyWire(pty.b);
    const sim = new PumpSimulator(1).attach(dev.wire);
    const m = manager([pumpDevice(pty.a)], { serialQueueMax: 2 });
    try {
      await online(m, 'pump1');
      sim.faults.delayMs = 20;
      const rs = await Promise.all([1, 2, 3, 4].map(() => code(m.read('pump1', 'control'))));
      assert.deepEqual(rs, ['ok', 'ok', 'ok', 'DEVICE_BUSY'], 'one running + two queued');
    } finally {
      m.stop();
      await dev.close();
      await pty.kill();
    }
  });
});

describe('line-protocol valve over a pty', () => {
  test('query and parse, actions with {value}, refusals, garbage', async () => {
    const pty = await ptyPair();
    const dev = await ptyWire(pty.b);
    let t = 0;
    const sim = new ValveSimulator('\n', () => t).attach(dev.wire);
    const m = manager([valveDevice(pty.a)]);
    try {
      await online(m, 'valve3');
      assert.deepEqual((await m.read('valve3', 'control')).result, { position: 0 });
      assert.deepEqual((await m.act('valve3', 'set', 40, 'control')).result, { reply: 'OK' });
      t = 400; // 50 %/s: 20 % after 0.4 s
      assert.deepEqual((await m.read('valve3', 'control')).result, { position: 20 });
      t = 2000;
      assert.deepEqual((await m.read('valve3', 'control')).result, { position: 40 });
      await assert.rejects(m.act('valve3', 'bogus', undefined, 'control'), (e: EwsError) => e.code === 'DEVICE_ERROR' && /ERR unknown command FLY/.test(e.message));
      sim.faults.garbage = 1;
      assert.equal(await code(m.read('valve3', 'control')), 'DEVICE_ERROR');
      assert.equal(await code(m.read('valve3', 'control')), 'ok');
      assert.equal(sim.commands, 1);
    } finally {
      m.stop();
      await dev.close();
      await pty.kill();
    }
  });

  test('a late reply to an action is never answered by sending the command again (it ran); a read is retried', async () => {
    const pty = await ptyPair();
    const dev = await ptyWire(pty.b);
    const sim = new ValveSimulator('\n', () => 0).attach(dev.wire);
    const m = manager([{ ...valveDevice(pty.a), retries: 2 }]);
    try {
      await online(m, 'valve3');
      sim.faults.delayMs = 400; // past timeoutMs (150): the device runs the command, the reply comes late
      assert.equal(await code(m.act('valve3', 'open', undefined, 'control')), 'DEVICE_TIMEOUT');
      assert.equal(sim.commands, 1, 'OPEN reached the device once');
      sim.faults.delayMs = 0;
      sim.faults.drop = 1; // a read's lost reply is asked again
      assert.equal(await code(m.read('valve3', 'control')), 'ok');
    } finally {
      m.stop();
      await dev.close();
      await pty.kill();
    }
  });
});
