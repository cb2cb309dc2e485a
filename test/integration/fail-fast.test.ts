// A command for a device whose only board is gone is answered at once, never queued until its
// deadline: right after a SIGKILL (the dispatch finds nobody listening) and once the cluster has
// marked the board down (refused before it is queued, naming the board).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { demoDevices } from '../../dev/demo.ts';
import { type ClusterJson, converged, getJson, makeCluster, type TestCluster, waitFor } from './harness.ts';

describe("fail fast when a device's boards are down", () => {
  let c: TestCluster;
  before(async () => {
    c = await makeCluster(
      3,
      (cfg) => {
        cfg.devices = demoDevices(['b1', 'b2', 'b3']);
      },
      { args: ['--simulate-devices'] },
    );
    await converged(c);
    await waitFor('devices online', async () => (await getJson<Array<{ online: boolean }>>(`${c.boards[0]!.url}/api/devices`)).every((d) => d.online));
  });
  after(() => c.stop());

  // The request deadline is 10 s: an answer inside the 5 s abort means it was not queued.
  const command = async () => {
    const r = await fetch(`${c.boards[2]!.url}/cgi-bin/devices/pump1/start`, { method: 'POST', signal: AbortSignal.timeout(5000) });
    return { status: r.status, retry: r.headers.get('retry-after'), error: ((await r.json()) as { error: { code: string; message: string } }).error };
  };

  test("SIGKILL the pump's board: the next command is 503 at once; once the board is marked down, DEVICE_UNREACHABLE names it", async () => {
    await c.kill('b2');
    const first = await command();
    assert.equal(first.status, 503);
    assert.ok(['NO_BOARD', 'DEVICE_UNREACHABLE'].includes(first.error.code), first.error.code);
    assert.ok(Number(first.retry) >= 1);
    await waitFor('b2 down in the table', async () => (await getJson<ClusterJson>(`${c.boards[0]!.url}/api/cluster`)).boards[1]!.runstate === -1);
    const later = await command();
    assert.deepEqual([later.status, later.error.code, later.retry], [503, 'DEVICE_UNREACHABLE', '2']);
    assert.match(later.error.message, /\(b2\)/);
    // The device attached to two boards still works through the one that is up.
    const room = await fetch(`${c.boards[2]!.url}/cgi-bin/devices/room`, { signal: AbortSignal.timeout(5000) });
    assert.equal(room.status, 200);
  });
});
