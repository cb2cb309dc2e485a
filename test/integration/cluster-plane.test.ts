// The cluster protocol runs on a thread of its own: a master whose request thread is stuck in a
// long synchronous task keeps beating (no takeover), and one stuck past requestThreadDeadMs steps
// down on purpose, then rejoins as a node.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ClusterJson, converged, getJson, makeCluster, metric, type TestCluster, waitFor } from './harness.ts';

describe('the cluster plane', () => {
  let c: TestCluster;
  const view = (i: number) => getJson<ClusterJson>(`${c.boards[i]!.url}/api/cluster`);
  /** Stall a board's request thread for `ms`; resolves once it answers HTTP again. */
  const block = async (id: string, ms: number) => {
    const b = c.boards.find((x) => x.id === id)!;
    c.procs.get(id)!.send({ block: ms });
    await waitFor(`${id} answering after the stall`, async () => (await fetch(`${b.url}/healthz`, { signal: AbortSignal.timeout(ms + 2000) })).ok, ms + 10_000, 50);
  };
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
    // A window of 100 keep-alive REPORTs heard (about a second at 2 nodes × 50 a second).
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
