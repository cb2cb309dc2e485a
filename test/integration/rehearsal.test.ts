// A node rehearses the master's request path (node/http/rehearsal.ts): a private copy of the path
// on its own address, a stand-in board answering at once. The count is exact, the master never
// rehearses, and nothing of it reaches the live cluster's queue or counts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { converged, makeCluster, metric, type TestCluster, waitFor } from './harness.ts';

const REQUESTS = 60;

describe('rehearsal', () => {
  let c: TestCluster;
  before(async () => {
    c = await makeCluster(3, (cfg) => {
      const cluster = cfg.cluster as Record<string, unknown>;
      cluster.rehearseRequests = REQUESTS;
    });
    await converged(c);
  });
  after(async () => {
    await c?.stop();
  });

  test('each node sends exactly rehearseRequests through its copy, answered; the master none, and its queue counts nothing of it', async () => {
    const [master, ...nodes] = c.boards;
    for (const b of nodes) await waitFor(`${b.id} rehearsed`, async () => (await metric(b.url, 'ews_rehearsed_requests_total')) >= REQUESTS, 20_000);
    // A rehearsal that had gone on past its count would show here (each answer is counted as it comes).
    for (const b of nodes) assert.equal(await metric(b.url, 'ews_rehearsed_requests_total'), REQUESTS, b.id);
    assert.equal(await metric(master!.url, 'ews_rehearsed_requests_total'), 0);
    for (const b of c.boards) assert.equal(await metric(b.url, 'ews_requests_total'), 0, `${b.id}: a rehearsal request reached a live queue`);
    // The live path is untouched: a client's request goes through the master and is served.
    const r = await fetch(`${master!.url}/cgi-bin/echo?ms=1`, { headers: c.headers });
    assert.equal(r.status, 200);
    assert.equal(await metric(master!.url, 'ews_requests_total', { outcome: 'served' }), 1);
    for (const [id, log] of c.logs) assert.doesNotMatch(log, /"level":(50|60)/, id);
  });
});
