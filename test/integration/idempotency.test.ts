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
