// A node stopped (SIGTERM) while it relays a client's request to the master answers that request
// first: its relay connections are not cut under it (they were: 503 NO_MASTER "master b1
// unreachable"). What a board that exits after an upgrade's handover relays last.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { converged, httpGet, makeCluster, metric, type TestCluster, waitFor } from './harness.ts';

describe('a node stopping answers what it relays first', () => {
  let c: TestCluster;
  before(async () => {
    c = await makeCluster(2, (cfg) => {
      // The master may run the page itself (share) or send it back to b2: either way b2 relays it, and answers it before it stops.
      (cfg.cluster as Record<string, unknown>).masterWork = 'share';
    });
    await converged(c);
  });
  after(() => c.stop());

  test('SIGTERM b2 while it relays a 1 s page to b1: the client gets the page', async () => {
    const before = await metric(c.boards[0]!.url, 'ews_inflight_requests');
    const page = httpGet(`${c.boards[1]!.url}/echo?ms=1000`, { timeoutMs: 8000 });
    await waitFor('the page in service at the master', async () => (await metric(c.boards[0]!.url, 'ews_inflight_requests')) > before, 5000);
    const stopped = c.kill('b2', 'SIGTERM');
    const r = await page;
    assert.equal(r.status, 200, r.text);
    await stopped;
  });
});
