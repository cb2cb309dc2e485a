// The cluster protocol runs on a thread of its own: a master whose request thread is stuck in a
// long synchronous task keeps beating (no takeover), and one stuck past requestThreadDeadMs steps
// down on purpose, then rejoins as a node. With cluster.planeThread false it runs on the request
// thread: the cluster still forms and serves, and a stall beyond Tmax is a takeover.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ClusterJson, converged, getJson, makeCluster, metric, type TestCluster, waitFor } from './harness.ts';

/** Stall a board's request thread for `ms`; resolves once it answers HTTP again. */
async function stall(c: TestCluster, id: string, ms: number): Promise<void> {
  const b = c.boards.find((x) => x.id === id)!;
  c.procs.get(id)!.send({ block: ms });
  await waitFor(`${id} answering after the stall`, async () => (await fetch(`${b.url}/healthz`, { signal: AbortSignal.timeout(ms + 2000) })).ok, ms + 10_000, 50);
}

describe('the cluster plane', () => {
  let c: TestCluster;
  const view = (i: number) => getJson<ClusterJson>(`${c.boards[i]!.url}/api/cluster`);
  const block = (id: string, ms: number) => stall(c, id, ms);
  before(async () => {
    // The product's default timings (heartbeat 20 ms, Tmax 120 ms); the request thread may be silent 1500 ms.
    c = await makeCluster(3, (cfg) => {
      const cluster = cfg.cluster as Record<string, unknown>;
      for (const k of ['heartbeatMs', 'tmaxMs', 'tthresholdMs', 'staggerMs']) delete cluster[k];
      cluster.requestThreadDeadMs = 1500;
    });
    await converged(c);
  });
  after(() => c.stop());

  test("a /metrics scrape shows the plane's counters as they are at the scrape", async () => {
    // The plane renders its counters when asked, not on a timer of its own: two scrapes five
    // heartbeats (100 ms) apart see the STATEs heard in between.
    const heard = () => metric(c.boards[1]!.url, 'ews_udp_received_total', { type: 'STATE' });
    const first = await heard();
    await new Promise((r) => setTimeout(r, 100));
    const second = await heard();
    assert.ok(second > first, `STATEs heard: ${first} then ${second}`);
  });

  test('idle, the plane wakes the request thread only when it has news: heard-only states at most every Tthreshold/8', async () => {
    // Default timings: heartbeat 20 ms, Tthreshold 500 ms, so heard-only states at most every 62 ms.
    const count = () => Promise.all([metric(c.boards[0]!.url, 'ews_plane_states_posted_total'), metric(c.boards[0]!.url, 'ews_udp_received_total', { type: 'REPORT' })]);
    const [posted0, heard0] = await count();
    const t0 = Date.now();
    // A window of 100 keep-alive REPORTs heard (about 3 s at 2 nodes × one per 60 ms).
    const [posted1, heard1] = await waitFor('100 REPORTs heard', async () => {
      const v = await count();
      return v[1] - heard0 >= 100 ? v : undefined;
    });
    const s = (Date.now() - t0) / 1000;
    // One post per packet and per tick would be over one per REPORT; heard-only ones come at most
    // every 62 ms (16 a second).
    assert.ok(posted1 - posted0 <= 20 * s, `states posted: ${posted1 - posted0} in ${s} s, ${heard1 - heard0} REPORTs heard`);
  });

  test("the master's request thread stalled 500 ms and 1 s (over 8 × Tmax): it stays master, nobody takes over", async () => {
    const before = await view(1);
    assert.equal(before.master, 'b1');
    await block('b1', 500);
    await block('b1', 1000);
    const after = await view(2);
    assert.deepEqual([after.master, after.term], ['b1', before.term], 'same master, same term');
    assert.equal(await metric(c.boards[0]!.url, 'ews_request_thread_stalls_total'), 0);
  });

  test("a node's request thread stalled 1 s: it stays running in the table", async () => {
    const before = await view(0);
    await block('b3', 1000);
    const after = await view(0);
    assert.equal(after.term, before.term);
    assert.equal(after.boards.find((b) => b.id === 'b3')?.runstate, 1);
  });

  test('stalled past requestThreadDeadMs: the master steps down on purpose, another takes over, and it rejoins as a node', async () => {
    const before = await view(1);
    await block('b1', 3000);
    const v = await converged(c, ['b1', 'b2', 'b3'], ['b1', 'b2', 'b3'], (x) => x.term > before.term);
    assert.notEqual(v.master, 'b1', 'a board that could not serve handed mastership on');
    assert.equal(v.boards.find((b) => b.id === 'b1')?.role, 'node');
    assert.equal(await metric(c.boards[0]!.url, 'ews_request_thread_stalls_total'), 1);
    // Its log, from both threads: JSON lines, each naming the board once (a duplicate key used to appear).
    const lines = (c.logs.get('b1') ?? '').split('\n').filter((l) => l.startsWith('{'));
    assert.ok(
      lines.some((l) => l.includes('"thread":"cluster"') && l.includes('stepping down')),
      'the plane logged its step-down',
    );
    for (const l of lines) {
      assert.equal(JSON.parse(l).board, 'b1');
      assert.equal(l.match(/"board":/g)?.length, 1, l);
    }
  });
});

describe('the cluster plane on the request thread (cluster.planeThread false)', () => {
  let c: TestCluster;
  before(async () => {
    // The least Tmax the config accepts for it (1 s); heartbeats every 100 ms.
    c = await makeCluster(3, (cfg) => Object.assign(cfg.cluster as Record<string, unknown>, { planeThread: false, heartbeatMs: 100, tmaxMs: 1000, tthresholdMs: 1000, staggerMs: 200 }));
    await converged(c);
  });
  after(() => c.stop());

  test('the cluster forms and serves; the plane counts its packets and answers a scrape', async () => {
    const v = await converged(c);
    assert.equal(v.master, 'b1');
    const heard = () => metric(c.boards[0]!.url, 'ews_udp_received_total', { type: 'REPORT' });
    const first = await heard();
    await waitFor('REPORTs heard by the master', async () => (await heard()) > first, 5000, 50);
    const r = await fetch(`${c.boards[0]!.url}/cgi-bin/echo?ms=1`);
    assert.equal(r.status, 200);
  });

  test("a node stalled beyond Tmax reads the master's STATEs that waited in its socket before it judges the master: no takeover", async () => {
    // Its plane stalls with it. Woken, its loop runs timers before it reads sockets: the tick
    // that would find the master silent for 2.5 s comes after the waiting packets are read.
    const before = await getJson<ClusterJson>(`${c.boards[0]!.url}/api/cluster`);
    await stall(c, 'b2', 2500);
    const after = await converged(c);
    assert.deepEqual([after.master, after.term], ['b1', before.term], 'same master, same term');
  });

  test('the trade: a master whose request thread stalls beyond Tmax stops beating; another board takes over and it rejoins as a node', async () => {
    const before = await getJson<ClusterJson>(`${c.boards[1]!.url}/api/cluster`);
    assert.equal(before.master, 'b1');
    c.procs.get('b1')!.send({ block: 2500 });
    const v = await converged(c, ['b2', 'b3'], ['b2', 'b3'], (x) => x.term > before.term && x.master !== 'b1');
    assert.notEqual(v.master, 'b1');
    // Back, b1 hears the newer term and follows it (a returning old master steps down).
    const after = await converged(c, ['b1', 'b2', 'b3'], ['b1', 'b2', 'b3'], (x) => x.master === v.master);
    assert.equal(after.boards.find((b) => b.id === 'b1')?.role, 'node');
  });
});
