// Idempotency-Key through a real cluster: replays, conflicts, and a retry across a master failover.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { demoDevices } from '../../dev/demo.ts';
import { converged, getJson, makeCluster, metric, type TestCluster, waitFor } from './harness.ts';

const post = async (url: string, key: string, body?: unknown) => {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'idempotency-key': key, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: r.status, replayed: r.headers.get('idempotent-replayed'), board: r.headers.get('x-ews-board'), text: await r.text() };
};
const actions = async (c: TestCluster, ids: string[], device: string) => {
  let n = 0;
  for (const id of ids) n += await metric(c.boards.find((b) => b.id === id)!.url, 'ews_device_actions_total', { device });
  return n;
};

describe('Idempotency-Key', () => {
  let c: TestCluster;
  before(async () => {
    c = await makeCluster(
      3,
      (cfg) => {
        const devs = demoDevices(['b1', 'b2', 'b3']) as Array<Record<string, unknown>>;
        // A pump reachable from two boards, one of them the master.
        devs.push({
          ...devs[0]!,
          id: 'pump2',
          attach: [
            { board: 'b1', port: '/dev/ttyUSB1' },
            { board: 'b2', port: '/dev/ttyUSB1' },
          ],
        });
        cfg.devices = devs;
      },
      { args: ['--simulate-devices'] },
    );
    await converged(c);
    await waitFor('devices online', async () => (await getJson<Array<{ online: boolean }>>(`${c.boards[0]!.url}/api/devices`)).every((d) => d.online));
  });
  after(() => c.stop());

  test('a retried command returns the first result and drives the device once; another body is 409', async () => {
    const u = c.boards[2]!.url;
    const first = await post(`${u}/cgi-bin/devices/pump1/set-speed`, 'retry-1', { value: 1800 });
    assert.equal(first.status, 200);
    assert.equal(first.replayed, null);
    const again = await post(`${c.boards[0]!.url}/cgi-bin/devices/pump1/set-speed`, 'retry-1', { value: 1800 });
    assert.deepEqual([again.status, again.replayed, again.text, again.board], [200, 'true', first.text, 'b2']);
    assert.equal(await actions(c, ['b2'], 'pump1'), 1);
    const other = await post(`${u}/cgi-bin/devices/pump1/set-speed`, 'retry-1', { value: 900 });
    assert.equal(other.status, 409);
    assert.equal(JSON.parse(other.text).error.code, 'IDEMPOTENCY_CONFLICT');
    assert.equal((await post(`${u}/cgi-bin/devices/pump1/stop`, 'retry-1')).status, 409, 'same key, another action');
    assert.equal((await post(`${u}/cgi-bin/devices/pump1/stop`, 'bad key with spaces')).status, 400);
  });

  test('a command retried with its key across a master failover executes once', async () => {
    const first = await post(`${c.boards[2]!.url}/cgi-bin/devices/pump2/start`, 'failover-1');
    assert.equal(first.status, 200);
    const ranOn = first.board!;
    // The record reaches every board before the master dies.
    await waitFor('record replicated to b3', async () => (await metric(c.boards[2]!.url, 'ews_idempotency_keys')) >= 2);
    await c.kill('b1');
    await converged(c, ['b2', 'b3'], ['b2', 'b3'], (v) => v.master === 'b2');
    const retry = await post(`${c.boards[2]!.url}/cgi-bin/devices/pump2/start`, 'failover-1');
    assert.deepEqual([retry.status, retry.replayed, retry.text, retry.board], [200, 'true', first.text, ranOn]);
    assert.equal(await actions(c, ['b2'], 'pump2'), ranOn === 'b2' ? 1 : 0, 'the surviving board did not drive the pump again');
  });
});

describe('the key store at its bound', () => {
  let c: TestCluster;
  before(async () => {
    c = await makeCluster(
      2,
      (cfg) => {
        cfg.devices = demoDevices(['b1', 'b2']);
        cfg.limits = { idempotencyKeysMax: 3, idempotencyTtlMs: 4000 };
      },
      { args: ['--simulate-devices'] },
    );
    await converged(c);
    await waitFor('devices online', async () => (await getJson<Array<{ online: boolean }>>(`${c.boards[0]!.url}/api/devices`)).every((d) => d.online));
  });
  after(() => c.stop());

  test('full of live keys: a new key is refused with Retry-After and never runs; an old key replays; unkeyed commands run; after the TTL there is room again', async () => {
    const u = c.boards[0]!.url;
    const speed = `${u}/cgi-bin/devices/pump1/set-speed`;
    const first = await post(speed, 'bound-1', { value: 1000 });
    assert.equal(first.status, 200);
    for (const k of ['bound-2', 'bound-3']) assert.equal((await post(speed, k, { value: 1100 })).status, 200);
    await waitFor('every record on the master', async () => (await metric(u, 'ews_idempotency_keys')) >= 3);
    const ran = await actions(c, ['b1', 'b2'], 'pump1');
    const r = await fetch(speed, { method: 'POST', headers: { 'idempotency-key': 'bound-4', 'content-type': 'application/json' }, body: JSON.stringify({ value: 2999 }) });
    const body = (await r.json()) as { error: { code: string; message: string } };
    assert.deepEqual([r.status, body.error.code], [503, 'IDEMPOTENCY_STORE_FULL']);
    assert.match(body.error.message, /3 idempotency keys are live|every idempotency key held is still live/);
    assert.ok(Number(r.headers.get('retry-after')) >= 1 && Number(r.headers.get('retry-after')) <= 4, `Retry-After ${r.headers.get('retry-after')}`);
    assert.equal(await actions(c, ['b1', 'b2'], 'pump1'), ran, 'the refused key did not run');
    assert.ok((await metric(u, 'ews_idempotency_refused_total')) >= 1);
    assert.equal(await metric(u, 'ews_idempotency_keys_max'), 3);
    const again = await post(speed, 'bound-1', { value: 1000 });
    assert.deepEqual([again.status, again.replayed, again.text], [200, 'true', first.text], 'the oldest key still replays');
    const unkeyed = await fetch(speed, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ value: 1200 }) });
    assert.equal(unkeyed.status, 200, 'a command without a key is not affected');
    const later = await waitFor('room again after the TTL', async () => {
      const p = await post(speed, 'bound-4', { value: 2999 });
      return p.status === 200 ? p : undefined;
    });
    assert.equal(later.replayed, null, 'it ran now, once');
  });
});
