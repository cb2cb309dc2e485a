// The master's queue with real processes: priority order when full, explicit shedding at the bound.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ClusterJson, converged, getJson, makeCluster, type TestCluster, waitFor } from './harness.ts';

const busy = async (c: TestCluster, n: number) =>
  waitFor(`${n} boards busy`, async () => (await getJson<ClusterJson>(`${c.boards[0]!.url}/api/cluster`)).boards.filter((b) => b.linknum > 0).length >= n);

describe('priority queue with one request per board', () => {
  let c: TestCluster;
  before(async () => {
    c = await makeCluster(3, (cfg) => {
      cfg.limits = { inFlightPerBoardMax: 1 };
      Object.assign(cfg.cluster as object, { masterWork: 'share' }); // three slots: the master's too
    });
    await converged(c);
  });
  after(() => c.stop());

  test('a full queue serves HIGH before LOW, in arrival order within each class', async () => {
    const base = c.boards[0]!.url;
    // Two boards busy for the whole test, the third for a short while: afterwards one board serves the queue alone, in order.
    const long1 = fetch(`${base}/cgi-bin/echo?ms=4000`);
    await busy(c, 1);
    const long2 = fetch(`${base}/cgi-bin/echo?ms=4000`);
    await busy(c, 2);
    const short = fetch(`${base}/cgi-bin/echo?ms=2000`); // long enough to queue all eight behind it
    await busy(c, 3);
    const order: string[] = [];
    const pending: Promise<void>[] = [];
    const send = (name: string, path: string) => {
      pending.push(
        fetch(`${base}${path}`).then(async (r) => {
          assert.equal(r.status, 200);
          await r.text();
          order.push(name);
        }),
      );
    };
    // One at a time, each only once the master has queued the previous one: the arrival order is
    // the one the test sends, not a race between sockets.
    const queued = async () => (await getJson<{ classes: Array<{ queued: number }> }>(`${base}/api/stats`)).classes.reduce((n, c) => n + c.queued, 0);
    const names = [1, 2, 3, 4].map((i) => [`L${i}`, `/echo?ms=20&n=${i}`]).concat([1, 2, 3, 4].map((i) => [`H${i}`, `/cgi-bin/echo?ms=20&n=${i}`]));
    for (const [k, [name, path]] of names.entries()) {
      send(name!, path!);
      await waitFor(`${name} queued`, async () => (await queued()) === k + 1);
    }
    await Promise.all([...pending, short]);
    assert.deepEqual(order, ['H1', 'H2', 'H3', 'H4', 'L1', 'L2', 'L3', 'L4']);
    await Promise.all([long1, long2]);
  });
});

describe("fifo scheduler (the paper's baseline)", () => {
  let c: TestCluster;
  before(async () => {
    c = await makeCluster(1, (cfg) => {
      cfg.limits = { inFlightPerBoardMax: 1 };
      cfg.qos = { scheduler: 'fifo' };
    });
    await converged(c);
  });
  after(() => c.stop());

  test('serves in plain arrival order, classes ignored', async () => {
    const base = c.boards[0]!.url;
    const block = fetch(`${base}/cgi-bin/echo?ms=500`);
    await busy(c, 1);
    const order: string[] = [];
    const pending: Promise<void>[] = [];
    const send = (name: string, path: string) =>
      pending.push(
        fetch(`${base}${path}`).then(async (r) => {
          await r.text();
          order.push(name);
        }),
      );
    send('L1', '/echo?ms=10');
    await waitFor('L1 queued', async () => (await (await fetch(`${base}/metrics`)).text()).includes('ews_queue_length{class="browse"} 1'));
    send('H1', '/cgi-bin/echo?ms=10');
    await Promise.all([...pending, block]);
    assert.deepEqual(order, ['L1', 'H1']);
  });
});

describe('bounded queue', () => {
  let c: TestCluster;
  before(async () => {
    c = await makeCluster(1, (cfg) => {
      cfg.limits = { inFlightPerBoardMax: 1, queueMax: 3 };
    });
    await converged(c);
  });
  after(() => c.stop());

  test('past the bound: 503 with Retry-After and a JSON error, never a silent timeout; the queued ones are served', async () => {
    const base = c.boards[0]!.url;
    const rs = await Promise.all(
      Array.from({ length: 10 }, () =>
        fetch(`${base}/cgi-bin/echo?ms=150`, { signal: AbortSignal.timeout(10_000) }).then(async (r) => ({ status: r.status, retry: r.headers.get('retry-after'), body: await r.text() })),
      ),
    );
    const ok = rs.filter((r) => r.status === 200);
    const shed = rs.filter((r) => r.status === 503);
    assert.equal(ok.length, 4, 'one running + three queued');
    assert.equal(shed.length, 6);
    for (const s of shed) {
      assert.equal(s.retry, '1');
      assert.equal(JSON.parse(s.body).error.code, 'QUEUE_FULL');
    }
  });

  test('a client that goes away leaves the queue', async () => {
    const base = c.boards[0]!.url;
    const block = fetch(`${base}/cgi-bin/echo?ms=800`);
    await busy(c, 1);
    const ac = new AbortController();
    const gone = fetch(`${base}/cgi-bin/echo?ms=5000`, { signal: ac.signal }).catch(() => 'aborted');
    await waitFor('queued', async () => (await (await fetch(`${base}/metrics`)).text()).includes('ews_queue_length{class="control"} 1'));
    ac.abort();
    assert.equal(await gone, 'aborted');
    await waitFor('removed', async () => (await (await fetch(`${base}/metrics`)).text()).includes('ews_queue_length{class="control"} 0'));
    await block;
  });
});
