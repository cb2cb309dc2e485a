// Schedules run on the master through the dispatch path, follow a failover, never run twice.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { demoDevices } from '../../dev/demo.ts';
import { converged, makeCluster, metric, type TestCluster, waitFor } from './harness.ts';

describe('schedules', () => {
  let c: TestCluster;
  const runs = (i: number, schedule?: number) => metric(c.boards[i]!.url, 'ews_schedule_runs_total', schedule === undefined ? { status: '200' } : { schedule: String(schedule), status: '200' });
  before(async () => {
    c = await makeCluster(
      3,
      (cfg) => {
        cfg.devices = demoDevices(['b1', 'b2', 'b3']);
        cfg.schedules = [
          { cron: '* * * * * *', device: 'pump1', action: 'read' },
          { cron: '* * * * * *', device: 'valve3', action: 'set', value: 40 },
        ];
      },
      { args: ['--simulate-devices'] },
    );
    await converged(c);
  });
  after(() => c.stop());

  test("only the master runs them, through dispatch to the device's board", async () => {
    // Each schedule twice (a total of 4 could be three reads and one set: the first tick after boot
    // can find a device's board not yet alive).
    await waitFor('the master ran each schedule twice', async () => (await runs(0, 0)) >= 2 && (await runs(0, 1)) >= 2, 10_000);
    assert.equal(await runs(1), 0);
    assert.equal(await runs(2), 0);
    // They went through the master's queue like any control request, and ran on the devices' boards.
    // The master counts a request it ran itself when the answer's stream closes, which can come a
    // turn after the schedule read the answer: wait for it rather than race it.
    await waitFor('the master counted them served', async () => (await metric(c.boards[0]!.url, 'ews_requests_total', { class: 'control', outcome: 'served' })) >= 4, 5_000);
    assert.ok((await metric(c.boards[2]!.url, 'ews_device_actions_total', { device: 'valve3', action: 'set' })) >= 2);
  });

  test('they follow a failover to the new master, once per tick', async () => {
    await c.kill('b1');
    await converged(c, ['b2', 'b3'], ['b2', 'b3'], (v) => v.master === 'b2');
    const t0 = Date.now();
    const start = await runs(1);
    await waitFor('the new master runs them', async () => (await runs(1)) >= start + 6, 10_000);
    const seconds = (Date.now() - t0) / 1000;
    const done = (await runs(1)) - start;
    assert.equal(await runs(2), 0, 'the other node never runs them');
    assert.ok(done <= 2 * (Math.ceil(seconds) + 1), `${done} runs of 2 schedules in ${seconds.toFixed(1)} s: no tick ran twice`);
  });
});
