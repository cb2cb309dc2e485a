// A node rehearses the master's request path (node/http/rehearsal.ts): a private copy of the path
// on its own address, a stand-in board answering a moment later. The count is exact, the master
// never rehearses, nothing of it reaches the live cluster's queue or counts, and a node that
// becomes master stops rehearsing at once.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { converged, makeCluster, metric, type TestCluster, waitFor } from './harness.ts';

const rehearsing = (requests: number) => (cfg: Record<string, unknown>) => {
  (cfg.cluster as Record<string, unknown>).rehearseRequests = requests;
};

describe('rehearsal', () => {
  const clusters: TestCluster[] = [];
  after(async () => {
    for (const c of clusters) await c.stop();
  });

  test('each node sends exactly rehearseRequests through its copy, answered; the master none, and its queue counts nothing of it', async () => {
    const REQUESTS = 60;
    const c = await makeCluster(3, rehearsing(REQUESTS));
    clusters.push(c);
    await converged(c);
    const [master, ...nodes] = c.boards;
    for (const b of nodes) await waitFor(`${b.id} rehearsed`, async () => (await metric(b.url, 'ews_rehearsed_requests_total')) >= REQUESTS, 20_000);
    // A rehearsal that had gone on past its count would show here.
    for (const b of nodes) assert.equal(await metric(b.url, 'ews_rehearsed_requests_total'), REQUESTS, b.id);
    assert.equal(await metric(master!.url, 'ews_rehearsed_requests_total'), 0);
    for (const b of c.boards) assert.equal(await metric(b.url, 'ews_requests_total'), 0, `${b.id}: a rehearsal request reached a live queue`);
    // The live path is untouched: a client's request goes through the master and is served.
    const r = await fetch(`${master!.url}/cgi-bin/echo?ms=1`, { headers: c.headers });
    assert.equal(r.status, 200);
    assert.equal(await metric(master!.url, 'ews_requests_total', { outcome: 'served' }), 1);
    for (const [id, log] of c.logs) assert.doesNotMatch(log, /"level":(40|50|60)/, id);
  });

  test('a node that takes over mid-rehearsal stops it: what it sent is counted, short of the count', async () => {
    const REQUESTS = 10_000; // about 50 s at the stand-in's pace
    const c = await makeCluster(2, rehearsing(REQUESTS));
    clusters.push(c);
    await converged(c);
    const [b1, b2] = c.boards;
    await waitFor('b2 rehearsing', async () => (await metric(b2!.url, 'ews_rehearsing')) === 1, 20_000);
    await c.kill(b1!.id, 'SIGKILL');
    await waitFor('b2 master', async () => ((await (await fetch(`${b2!.url}/healthz`)).json()) as { role: string }).role === 'master', 10_000);
    await waitFor('b2 stopped rehearsing', async () => (await metric(b2!.url, 'ews_rehearsing')) === 0, 5_000);
    const sent = await metric(b2!.url, 'ews_rehearsed_requests_total');
    assert.ok(sent > 0 && sent < REQUESTS, `sent ${sent}`);
  });
});
