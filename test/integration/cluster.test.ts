// Three real board processes on loopback, talking real UDP and HTTP.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { FrameCodec, FrameSplitter, LINK_MAGIC } from '../../shared/dispatch-frame.ts';
import { createCodec } from '../../shared/protocol.ts';
import { type ClusterJson, converged, getJson, makeCluster, metric, type TestCluster, waitFor } from './harness.ts';

async function get(url: string, init: RequestInit = {}): Promise<{ status: number; headers: Headers; body: string }> {
  const r = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) });
  return { status: r.status, headers: r.headers, body: await r.text() };
}

describe('a 3-board cluster', () => {
  let c: TestCluster;
  before(async () => {
    // The paper's dispatch rule (the master serves its share too), whose spread these tests check.
    c = await makeCluster(3, (cfg) => Object.assign(cfg.cluster as object, { masterWork: 'share' }));
    await converged(c);
  });
  after(() => c.stop());

  test('every board shows the same table: first board master, all running; /healthz answers locally', async () => {
    const views = await Promise.all(c.boards.map((b) => getJson<ClusterJson>(`${b.url}/api/cluster`)));
    for (const v of views) {
      assert.equal(v.master, 'b1');
      assert.equal(v.term, views[0]!.term);
      assert.deepEqual(
        v.boards.map((b) => [b.id, b.runstate, b.role]),
        [
          ['b1', 1, 'master'],
          ['b2', 1, 'node'],
          ['b3', 1, 'node'],
        ],
      );
    }
    const h = await getJson<{ board: string; role: string; master: string }>(`${c.boards[1]!.url}/healthz`);
    assert.deepEqual([h.board, h.role, h.master], ['b2', 'node', 'b1']);
  });

  test("every board's health (CPU, memory, uptime, version) shows on any board, the others' from their HEALTH packets", async () => {
    type Health = { cpuPct: number; rssBytes: number; uptimeS: number; version: string; tempC: number | null; at: number };
    const v = await waitFor('health of all three on b3', async () => {
      const x = await getJson<{ boards: Array<{ id: string; health: Health | null }> }>(`${c.boards[2]!.url}/api/cluster`);
      return x.boards.every((b) => b.health !== null) ? x : undefined;
    });
    for (const b of v.boards) {
      assert.equal(b.health!.version, '0.1.0');
      assert.ok(b.health!.rssBytes > 10e6 && b.health!.rssBytes < 1e9, `${b.id} rss ${b.health!.rssBytes}`);
      assert.ok(b.health!.uptimeS >= 0 && b.health!.cpuPct >= 0);
    }
  });

  test('concurrent slow requests spread across boards by linknum; responses carry X-EWS-Board and X-EWS-Class', async () => {
    const rs = await Promise.all(Array.from({ length: 9 }, () => get(`${c.boards[0]!.url}/cgi-bin/echo?ms=400`)));
    const perBoard: Record<string, number> = {};
    for (const r of rs) {
      assert.equal(r.status, 200, r.body);
      assert.equal(r.headers.get('x-ews-class'), 'control');
      const b = r.headers.get('x-ews-board')!;
      perBoard[b] = (perBoard[b] ?? 0) + 1;
    }
    assert.deepEqual(perBoard, { b1: 3, b2: 3, b3: 3 });
    const page = await get(`${c.boards[0]!.url}/`);
    assert.equal(page.headers.get('x-ews-class'), 'browse');
    // Idle again: every linknum back to 0.
    await waitFor('linknum back to 0', async () => (await getJson<ClusterJson>(`${c.boards[2]!.url}/api/cluster`)).boards.every((b) => b.linknum === 0));
  });

  test('a request sent to a non-master board goes through the master, not executed directly', async () => {
    const before = await metric(c.boards[0]!.url, 'ews_requests_total', { class: 'control', outcome: 'served' });
    const r = await get(`${c.boards[2]!.url}/cgi-bin/echo?ms=1`);
    assert.equal(r.status, 200);
    assert.equal(await metric(c.boards[0]!.url, 'ews_requests_total', { class: 'control', outcome: 'served' }), before + 1);
  });

  test('the dispatch link refuses a forged frame (connection closed) and a frame addressed to another board (403)', async () => {
    const port = c.boards[1]!.httpPort;
    // One frame out, the first whole frame back (or the board closing the connection without one).
    const exchange = (frame: Buffer) =>
      new Promise<{ answer?: Buffer }>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => s.write(Buffer.concat([Buffer.of(LINK_MAGIC), frame])));
        const split = new FrameSplitter(1 << 20);
        s.on('data', (d: Buffer) => {
          const frames = split.push(d);
          if (frames !== 'oversized' && frames.length > 0) {
            s.destroy();
            resolve({ answer: frames[0] });
          }
        });
        s.on('close', () => resolve({}));
      });
    const frame = {
      id: 99,
      master: 0,
      term: 3,
      target: 1,
      epoch: 2 ** 48 - 1,
      cls: 0,
      level: 3,
      origin: 'client' as const,
      method: 'GET',
      url: '/cgi-bin/echo?ms=1',
      headers: [],
      body: Buffer.alloc(0),
    };
    const forged = await exchange(new FrameCodec(Buffer.alloc(32, 9), 1 << 16).request(frame));
    assert.equal(forged.answer, undefined, 'no answer to a frame with a wrong tag');
    assert.equal(await metric(c.boards[1]!.url, 'ews_link_dropped_total', { reason: 'auth' }), 1);
    const codec = new FrameCodec(Buffer.from(c.key, 'hex'), 1 << 16);
    const misaddressed = await exchange(codec.request({ ...frame, target: 2 }));
    const a = codec.decode(misaddressed.answer!);
    assert.ok(typeof a !== 'string' && a.type === 'answer');
    assert.equal(a.status, 403);
    assert.equal(JSON.parse(a.body.toString()).error.code, 'NOT_FROM_MASTER');
    assert.equal(await metric(c.boards[1]!.url, 'ews_forward_rejected_total', { reason: 'target' }), 1);
    // A valid frame runs once; the same frame again is a replay; an older term is stale; a frame
    // claiming to come from the board itself is refused.
    const { term } = await getJson<ClusterJson>(`${c.boards[1]!.url}/api/cluster`);
    const status = async (f: Buffer) => {
      const a = codec.decode((await exchange(f)).answer!);
      return typeof a !== 'string' && a.type === 'answer' ? a.status : 0;
    };
    const valid = codec.request({ ...frame, id: 7001, term });
    assert.equal(await status(valid), 200);
    assert.equal(await status(valid), 403);
    assert.equal(await metric(c.boards[1]!.url, 'ews_forward_rejected_total', { reason: 'replay' }), 1);
    assert.equal(await status(codec.request({ ...frame, id: 7002, term: term - 1 })), 403);
    assert.equal(await metric(c.boards[1]!.url, 'ews_forward_rejected_total', { reason: 'stale' }), 1);
    assert.equal(await status(codec.request({ ...frame, id: 7003, term, master: 1 })), 403);
    assert.equal(await metric(c.boards[1]!.url, 'ews_forward_rejected_total', { reason: 'self' }), 1);
    // A frame made for an earlier boot of this board (captured before it restarted) is refused.
    assert.equal(await status(codec.request({ ...frame, id: 7004, term, epoch: 1 })), 403);
    assert.equal(await metric(c.boards[1]!.url, 'ews_forward_rejected_total', { reason: 'old-boot' }), 1);
  });

  test('forged, replayed, truncated, oversized, other-cluster and random UDP packets are dropped and counted; nothing changes', async () => {
    const target = c.boards[1]!;
    const beforeView = await getJson<ClusterJson>(`${target.url}/api/cluster`);
    const sock = dgram.createSocket('udp4');
    const send = (buf: Buffer) => new Promise<void>((r) => sock.send(buf, target.udpPort, '127.0.0.1', () => r()));
    const real = createCodec({ key: Buffer.from(c.key, 'hex'), cluster: 'test', boards: 3, packetBytesMax: 1400 });
    const wrongKey = createCodec({ key: randomBytes(32), cluster: 'test', boards: 3, packetBytesMax: 1400 });
    const otherCluster = createCodec({ key: Buffer.from(c.key, 'hex'), cluster: 'other', boards: 3, packetBytesMax: 1400 });
    const coup = { type: 'STATE' as const, sender: 2, term: 999, body: { master: 2, linknum: [0, 0, 0], runstate: [1, 1, 1] as (1 | 0 | -1)[] } };
    const forged = wrongKey.encode(coup, { epoch: Date.now() + 1e6, counter: 1 });
    // A genuine packet from an earlier boot of b1 (an older epoch) is what a captured-and-replayed one looks like.
    const replayed = real.encode({ ...coup, sender: 0, body: { ...coup.body, master: 0 } }, { epoch: 1000, counter: 5 });
    const packets = [forged, replayed, forged.subarray(0, 20), Buffer.alloc(2000, 0x45), otherCluster.encode(coup, { epoch: Date.now() + 1e6, counter: 1 }), randomBytes(64), Buffer.alloc(0)];
    for (let k = 0; k < 20; k++) for (const p of packets) await send(p);
    sock.close();
    const reasons = ['auth', 'replay', 'truncated', 'oversized', 'cluster', 'garbage'];
    await waitFor('drops counted', async () => {
      for (const reason of reasons) if ((await metric(target.url, 'ews_udp_dropped_total', { reason })) < 20) return false;
      return true;
    });
    const v = await getJson<ClusterJson>(`${target.url}/api/cluster`);
    assert.equal(v.master, beforeView.master);
    assert.equal(v.term, beforeView.term);
    assert.equal((await get(`${target.url}/healthz`)).status, 200);
  });

  test('heartbeats keep flowing while the master is saturated: no false takeover', async () => {
    const { term } = await getJson<ClusterJson>(`${c.boards[0]!.url}/api/cluster`);
    const until = Date.now() + 3000;
    let sent = 0;
    const worker = async () => {
      while (Date.now() < until) {
        await get(`${c.boards[0]!.url}/cgi-bin/echo?ms=0`).catch(() => undefined);
        sent++;
      }
    };
    await Promise.all(Array.from({ length: 64 }, worker));
    assert.ok(sent > 100, `load was applied (${sent} requests)`);
    const after = await Promise.all(c.boards.map((b) => getJson<ClusterJson>(`${b.url}/api/cluster`)));
    for (const v of after) assert.deepEqual([v.master, v.term], ['b1', term]);
  });
});

describe('failover with real processes', () => {
  let c: TestCluster;
  before(async () => {
    c = await makeCluster(3);
    await converged(c);
  });
  after(() => c.stop());

  test('SIGKILL the master: the adjacent board answers as master within Tmax plus a margin; restarted, the old master rejoins as a node with linknum 0, never master on the way', async () => {
    const tmaxMs = 300;
    const killedAt = Date.now();
    await c.kill('b1');
    const v = await converged(c, ['b2', 'b3'], ['b2', 'b3'], (x) => x.master !== 'b1');
    const r = await get(`${c.boards[2]!.url}/cgi-bin/echo?ms=1`);
    const elapsed = Date.now() - killedAt;
    assert.equal(v.master, 'b2');
    assert.equal(r.status, 200);
    assert.ok(elapsed < tmaxMs + 2000, `new master answered after ${elapsed} ms`);
    assert.equal(v.boards[0]!.runstate, -1);

    const restartedAt = Date.now();
    c.start('b1');
    const back = await converged(c, ['b1', 'b2', 'b3']);
    assert.equal(back.master, 'b2', 'the returning old master does not take over');
    assert.equal(back.term, v.term);
    assert.deepEqual([back.boards[0]!.role, back.boards[0]!.runstate, back.boards[0]!.linknum], ['node', 1, 0]);
    const h = await getJson<{ role: string }>(`${c.boards[0]!.url}/healthz`);
    assert.equal(h.role, 'node');
    const log = await getJson<Array<{ at: number; kind: string; text: string }>>(`${c.boards[0]!.url}/api/log`);
    assert.deepEqual(
      log.filter((e) => e.kind === 'master' && e.text.startsWith('b1 ') && e.at >= restartedAt),
      [],
      'the restarted first board was never master, not even for a round trip',
    );
  });
});
