// A node rehearses the master's request path (node/http/rehearsal.ts): a private copy of the path
// on its own address, a stand-in board answering a moment later. The count is exact, the master
// never rehearses, nothing of it reaches the live cluster's queue or counts, a node that
// becomes master stops rehearsing at once, and a board still joining when its first rehearsal is
// due rehearses once it has joined, not a whole period later.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { REHEARSAL_FIRST_MS } from '../../node/http/rehearsal.ts';
import { type ClusterJson, converged, getJson, makeCluster, metric, type TestCluster, waitFor } from './harness.ts';

const rehearsing = (requests: number) => (cfg: Record<string, unknown>) => {
  (cfg.cluster as Record<string, unknown>).rehearseRequests = requests;
};
const health = (url: string) => getJson<{ role: string; state: string }>(`${url}/healthz`);

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

  test('a rehearsal counts its answers as they come; a node that takes over mid-rehearsal stops it, short of the count', async () => {
    const REQUESTS = 10_000; // about 50 s at the stand-in's pace
    const c = await makeCluster(2, rehearsing(REQUESTS));
    clusters.push(c);
    await converged(c);
    const [b1, b2] = c.boards;
    await waitFor('b2 rehearsing', async () => (await metric(b2!.url, 'ews_rehearsing')) === 1, 20_000);
    // The count moves while the rehearsal runs, not only when it ends.
    await waitFor('b2 counting as it goes', async () => (await metric(b2!.url, 'ews_rehearsed_requests_total')) > 0, 20_000);
    assert.equal(await metric(b2!.url, 'ews_rehearsing'), 1, 'still rehearsing');
    await c.kill(b1!.id, 'SIGKILL');
    await waitFor('b2 master', async () => (await health(b2!.url)).role === 'master', 10_000);
    await waitFor('b2 stopped rehearsing', async () => (await metric(b2!.url, 'ews_rehearsing')) === 0, 5_000);
    const sent = await metric(b2!.url, 'ews_rehearsed_requests_total');
    assert.ok(sent > 0 && sent < REQUESTS, `sent ${sent}`);
  });

  test('a board still joining when its first rehearsal is due rehearses soon after it joins as a node, not a period later', async () => {
    const REQUESTS = 30;
    // No master for 12 s (Tmax of silence), and a period far longer than the test.
    const c = await makeCluster(2, (cfg) => {
      Object.assign(cfg.cluster as Record<string, unknown>, { tmaxMs: 12_000, rehearseRequests: REQUESTS, rehearseEveryMs: 600_000 });
    });
    clusters.push(c);
    await waitFor('b2 answers', async () => (await health(c.boards[1]!.url)).state === 'joining', 20_000, 50);
    const b2UpAt = Date.now();
    const states = await waitFor(
      'one master, one node',
      async () => {
        const s = await Promise.all(c.boards.map((b) => health(b.url)));
        return s.some((x) => x.state === 'joining') ? undefined : s.map((x) => x.state);
      },
      40_000,
      100,
    );
    // Both joined well after their first rehearsal was due (3 s after each started), so that one found them joining.
    assert.ok(Date.now() - b2UpAt > REHEARSAL_FIRST_MS + 5000, `joined ${Date.now() - b2UpAt} ms after b2 answered`);
    assert.deepEqual([...states].sort(), ['master', 'node']);
    const node = c.boards[states.indexOf('node')]!;
    await waitFor(`${node.id} rehearsed`, async () => (await metric(node.url, 'ews_rehearsed_requests_total')) >= REQUESTS, 3 * REHEARSAL_FIRST_MS + 10_000);
  });

  test('a rehearsal whose board stalls past Tthreshold (SIGSTOP) still has every request answered: its stand-in is never taken for silent', async () => {
    const REQUESTS = 600; // about 3 s at the stand-in's pace
    // A Tmax longer than the stall, so the node stays a node through it.
    const c = await makeCluster(2, (cfg) => {
      Object.assign(cfg.cluster as Record<string, unknown>, { tmaxMs: 5000, rehearseRequests: REQUESTS });
    });
    clusters.push(c);
    await converged(c);
    const b2 = c.boards[1]!;
    await waitFor('b2 rehearsing', async () => (await metric(b2.url, 'ews_rehearsing')) === 1, 20_000);
    const pid = c.procs.get(b2.id)!.pid!;
    process.kill(pid, 'SIGSTOP');
    try {
      // The stall lasts until the master counts b2 silent past Tthreshold, the stage's own threshold.
      await waitFor('b1 counts b2 silent', async () => (await getJson<ClusterJson>(`${c.boards[0]!.url}/api/cluster`)).boards.find((b) => b.id === b2.id)?.runstate === -1, 10_000);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await waitFor('b2 done rehearsing', async () => (await metric(b2.url, 'ews_rehearsing')) === 0, 30_000);
    assert.equal(await metric(b2.url, 'ews_rehearsed_requests_total'), REQUESTS);
  });
});
