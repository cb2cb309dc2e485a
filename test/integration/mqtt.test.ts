// The MQTT bridge against a real mosquitto: retained state, last will, commands, broker outage.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { demoDevices } from '../../dev/demo.ts';
import { hashPassword } from '../../node/auth/password.ts';
import { type Broker, mosquitto } from '../peers/mosquitto.ts';
import { freePorts, makeCluster, type TestCluster, waitFor } from './harness.ts';

const P = 'ews/test';

describe('MQTT bridge', () => {
  let c: TestCluster, broker: Broker, sub: MqttClient;
  let auth: Record<string, string> = {};
  const seen = new Map<string, string>();
  const got = (topic: string, pred: (v: string) => boolean = () => true, ms = 10_000) =>
    waitFor(
      `${topic}`,
      async () => {
        const v = seen.get(topic);
        return v !== undefined && pred(v) ? v : undefined;
      },
      ms,
    ).catch((e: Error) => {
      throw new Error(`${e.message}; last message on ${topic}: ${seen.get(topic) ?? 'none'}`);
    });
  before(async () => {
    const [port] = await freePorts(1);
    broker = await mosquitto(port!);
    const passwordHash = await hashPassword('operator-pass-1');
    // Login is on: MQTT commands still go through, as the bridge (the broker decides who may publish).
    c = await makeCluster(
      3,
      (cfg) => {
        cfg.devices = demoDevices(['b1', 'b2', 'b3']);
        cfg.mqtt = { url: broker.url, prefix: P };
        cfg.auth = { users: [{ name: 'op', role: 'operator', passwordHash }] };
        // The test follows b1 as master until it kills it: under a loaded CI machine, b1 loading the
        // mqtt library through tsx at boot could stall it past a 300 ms Tmax and hand mastership on.
        Object.assign(cfg.cluster as object, { tmaxMs: 1200, tthresholdMs: 1200 });
      },
      { args: ['--simulate-devices'] },
    );
    const { token } = await waitFor('login', async () => {
      const r = await fetch(`${c.boards[0]!.url}/api/login`, { method: 'POST', body: JSON.stringify({ name: 'op', password: 'operator-pass-1' }) });
      return r.ok ? ((await r.json()) as { token: string }) : undefined;
    });
    auth = { authorization: `Bearer ${token}` };
    // Every board up and agreeing (a board still booting refuses connections).
    await waitFor('cluster up', async () => (await Promise.all(c.boards.map(async (b) => ((await (await fetch(`${b.url}/healthz`)).json()) as { master: string }).master))).every((m) => m === 'b1'));
    sub = mqtt.connect(broker.url, { reconnectPeriod: 200 });
    sub.on('message', (t, m) => seen.set(t, m.toString()));
    sub.on('connect', () => sub.subscribe([`${P}/#`, 'homeassistant/#']));
  });
  after(async () => {
    await sub.endAsync(true);
    await c.stop();
    await broker.stop();
  });

  test('retained board status, cluster and device state', async () => {
    for (const b of ['b1', 'b2', 'b3']) await got(`${P}/boards/${b}/status`, (v) => v === 'online');
    await got(`${P}/cluster`, (v) => JSON.parse(v).master === 'b1');
    await fetch(`${c.boards[0]!.url}/cgi-bin/devices/pump1`, { headers: auth });
    const st = JSON.parse(await got(`${P}/devices/pump1/state`, (v) => JSON.parse(v).updatedAt !== null));
    assert.deepEqual([st.id, st.online, st.boards], ['pump1', true, ['b2']]);
  });

  test('a command on .../set goes through the dispatch; the result is published; bad payloads are refused', async () => {
    sub.publish(`${P}/devices/pump1/set-speed/set`, JSON.stringify({ value: 2100 }));
    const r = JSON.parse(await got(`${P}/devices/pump1/set-speed/result`));
    assert.deepEqual([r.status, r.ok, r.board, r.result], [200, true, 'b2', { speed: 2100 }]);
    await got(`${P}/devices/pump1/state`, (v) => JSON.parse(v).points.speed === 2100);
    sub.publish(`${P}/devices/pump1/set-speed/set`, '99999');
    const bad = JSON.parse(await got(`${P}/devices/pump1/set-speed/result`, (v) => JSON.parse(v).status === 400));
    assert.match(bad.error.message, /above the maximum/);
    sub.publish(`${P}/devices/valve3/open/set`, '');
    assert.equal(JSON.parse(await got(`${P}/devices/valve3/open/result`)).status, 200);
    // Refusals carry their own code from the error table, not BAD_REQUEST for all.
    sub.publish(`${P}/devices/valve3/close/set`, 'x'.repeat(5000));
    const big = JSON.parse(await got(`${P}/devices/valve3/close/result`, (v) => JSON.parse(v).status !== 200));
    assert.deepEqual([big.status, big.error.code], [413, 'BODY_TOO_LARGE']);
    sub.publish(`${P}/devices/valve3/close/set`, '{not json');
    const bad2 = JSON.parse(await got(`${P}/devices/valve3/close/result`, (v) => JSON.parse(v).status === 400));
    assert.equal(bad2.error.code, 'BAD_REQUEST');
  });

  test('Home Assistant discovery: every point and action is announced, and a client pressing its button drives the pump', async () => {
    const cfg = (name: string) => got(name).then((v) => JSON.parse(v) as Record<string, any>);
    const speed = await cfg('homeassistant/sensor/ews_test/pump1_speed/config');
    assert.deepEqual(
      [speed.state_topic, speed.value_template, speed.unit_of_measurement, speed.unique_id],
      [`${P}/devices/pump1/state`, '{{ value_json.points.speed }}', 'rpm', 'ews_test_pump1_speed'],
    );
    assert.deepEqual(speed.availability, [{ topic: `${P}/boards/b2/status` }]);
    assert.deepEqual(speed.device.identifiers, ['ews_test_pump1']);
    const running = await cfg('homeassistant/binary_sensor/ews_test/pump1_running/config');
    assert.equal(running.value_template, "{{ 'ON' if value_json.points.running else 'OFF' }}");
    const setSpeed = await cfg('homeassistant/number/ews_test/pump1_set-speed/config');
    assert.deepEqual([setSpeed.command_topic, setSpeed.min, setSpeed.max], [`${P}/devices/pump1/set-speed/set`, 0, 3000]);
    const room = await cfg('homeassistant/sensor/ews_test/room_temp/config');
    assert.deepEqual(room.availability, [{ topic: `${P}/boards/b1/status` }, { topic: `${P}/boards/b2/status` }], 'a device on two boards is there while either is');
    // What Home Assistant does when the user presses "stop": publish the button's payload to its command topic.
    const stop = await cfg('homeassistant/button/ews_test/pump1_stop/config');
    sub.publish(stop.command_topic as string, stop.payload_press as string);
    await got(`${P}/devices/pump1/state`, (v) => JSON.parse(v).points.running === false);
  });

  test('alarms are published retained; a board going down raises its alarm there', async () => {
    const list = JSON.parse(await got(`${P}/alarms`)) as Array<{ id: string; active: boolean }>;
    assert.ok(list.some((a) => a.id === 'board-down-b3' && !a.active));
    assert.ok(list.some((a) => a.id === 'device-offline-pump1'));
  });

  test('a broker outage never blocks HTTP control; the bridge reconnects', async () => {
    await broker.stop();
    // With the broker gone, control still answers (the fetch's own timeout would throw otherwise).
    const r = await fetch(`${c.boards[1]!.url}/cgi-bin/devices/pump1/stop`, { method: 'POST', headers: auth, signal: AbortSignal.timeout(5000) });
    assert.equal(r.status, 200);
    seen.delete(`${P}/boards/b3/status`);
    seen.delete(`${P}/devices/pump1/state`);
    await broker.start();
    await got(`${P}/boards/b3/status`, (v) => v === 'online');
    await got(`${P}/devices/pump1/state`, (v) => JSON.parse(v).points.running === false);
  });

  test('a killed board goes offline by its last will; the new master publishes the cluster', async () => {
    await c.kill('b1');
    await got(`${P}/boards/b1/status`, (v) => v === 'offline');
    await got(`${P}/cluster`, (v) => JSON.parse(v).master === 'b2');
    sub.publish(`${P}/devices/pump1/start/set`, '');
    await got(`${P}/devices/pump1/start/result`, (v) => JSON.parse(v).status === 200);
    // The new master publishes the alarms: b1 down (raised after holding for 3 s).
    await got(`${P}/alarms`, (v) => (JSON.parse(v) as Array<{ id: string; active: boolean }>).some((a) => a.id === 'board-down-b1' && a.active), 15_000);
  });

  test('a stale retained cluster message (a deposed master publishing last) is corrected by the master', async () => {
    sub.publish(`${P}/cluster`, JSON.stringify({ cluster: 'test', master: 'b9', term: 1, boards: [] }), { retain: true });
    await got(`${P}/cluster`, (v) => JSON.parse(v).master === 'b9', 3000);
    await got(`${P}/cluster`, (v) => JSON.parse(v).master === 'b2', 8000);
  });
});
