import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClusterCore, FLOOD_HOLD_TMAX, nextTerm, type Ready, ringDistance, support } from '../../shared/election.ts';
import type { Message } from '../../shared/protocol.ts';

const cfg = (self: number, boards = 3) => ({ self, boards, heartbeatMs: 100, tmaxMs: 500, tthresholdMs: 500, staggerMs: 200, stateMinGapMs: 10 });
const states = (r: Ready) => r.send.filter((o) => o.msg.type === 'STATE');
const report = (sender: number, load: number, id = 0): Message => ({ type: 'REPORT', sender, term: 3, body: { id, load } });
/** A board that booted alone long enough ago that its tick(0) makes it master: Tmax + 1 ms for the first board, i × max(stagger, Tmax) more for board i. */
const alone = (config: ReturnType<typeof cfg>): ClusterCore => {
  const bootedAt = -config.tmaxMs - 1 - config.self * Math.max(config.staggerMs, config.tmaxMs);
  const c = new ClusterCore(config, bootedAt);
  c.start(bootedAt);
  return c;
};

test('terms: each board claims only its own residue, so no two boards ever claim the same term', () => {
  assert.equal(nextTerm(0, 0, 3), 3);
  assert.equal(nextTerm(3, 1, 3), 4);
  assert.equal(nextTerm(3, 2, 3), 5);
  assert.equal(nextTerm(4, 1, 3), 7);
  assert.equal(nextTerm(9, 0, 1), 10);
  const seen = new Map<number, number>();
  for (let cur = 0; cur < 50; cur++)
    for (let b = 0; b < 5; b++) {
      const t = nextTerm(cur, b, 5);
      assert.ok(t > cur);
      assert.equal(seen.get(t) ?? b, b);
      seen.set(t, b);
    }
  assert.equal(ringDistance(2, 0, 3), 1);
  assert.equal(ringDistance(0, 2, 3), 2);
});

test('every board JOINs at boot and listens; the first board, hearing no master for Tmax, becomes master and broadcasts at once', () => {
  const m = new ClusterCore(cfg(0), 0);
  assert.deepEqual(
    m.start(0).send.map((o) => o.msg.type),
    ['JOIN'],
  );
  assert.equal(m.role, 'joining');
  assert.deepEqual(
    m.tick(500).send.map((o) => o.msg.type),
    ['JOIN'],
    'Tmax not yet passed: it announces itself again',
  );
  assert.equal(m.role, 'joining');
  const r = m.tick(501);
  assert.equal(m.role, 'master');
  assert.equal(m.term, 3);
  assert.equal(states(r).length, 1);
  const n = new ClusterCore(cfg(1), 0);
  n.start(0);
  n.tick(1000);
  assert.equal(n.role, 'joining', 'board 1 waits max(stagger, Tmax) more than board 0');
  n.receive(states(r)[0]!.msg, 501);
  assert.equal(n.role, 'node');
  assert.equal(n.master, 0);
});

test('a first board restarting into a running cluster follows its master: never master, no new term', () => {
  const b1 = alone(cfg(1));
  const s = states(b1.tick(0))[0]!.msg;
  assert.equal(b1.term, 1);
  const b0 = new ClusterCore(cfg(0), 10);
  b0.start(10);
  b0.receive(s, 60);
  assert.equal(b0.role, 'node');
  assert.equal(b0.term, 1);
  assert.equal(b0.master, 1);
});

test('master: heartbeat every heartbeatMs; membership changes at once but coalesced by stateMinGapMs; dispatch load only on the heartbeat', () => {
  const m = alone(cfg(0));
  m.tick(0);
  assert.equal(states(m.receive({ type: 'JOIN', sender: 1, term: 0, body: {} }, 0)).length, 0, 'within the gap of the boot STATE');
  assert.equal(m.nextWakeMs(), 10);
  assert.equal(states(m.tick(10)).length, 1, 'the coalesced change');
  assert.equal(states(m.tick(50)).length, 0, 'nothing due');
  assert.equal(states(m.tick(110)).length, 1, 'heartbeat');
  m.table.dispatched(1);
  m.table.dispatched(1);
  assert.equal(states(m.observeLoad(1, 2, 120)).length, 0, 'a load carried on an answer: no STATE of its own');
  assert.equal(states(m.receive(report(1, 2), 125)).length, 0, 'nor a REPORT');
  assert.equal(m.nextWakeMs(), 210, 'next heartbeat');
  const r = m.tick(210);
  assert.equal(states(r).length, 1);
  assert.deepEqual((r.send[0]!.msg.body as { linknum: number[] }).linknum, [0, 2, 0]);
});

test('linknum: own dispatches exact, drift corrected from REPORTs, JOIN resets to 0', () => {
  const m = alone(cfg(0));
  m.tick(0);
  m.receive({ type: 'JOIN', sender: 1, term: 3, body: {} }, 1);
  m.receive({ type: 'JOIN', sender: 2, term: 3, body: {} }, 1);
  m.table.dispatched(1);
  m.table.dispatched(1);
  assert.equal(m.table.linknum(1), 2);
  m.receive(report(2, 4), 20); // board 2 busy with work from an earlier master
  assert.equal(m.table.linknum(2), 4);
  m.observeLoad(2, 3, 25); // the load carried on an answer
  assert.equal(m.table.linknum(2), 3);
  m.table.completed(1);
  assert.equal(m.table.linknum(1), 1);
  m.receive({ type: 'JOIN', sender: 2, term: 3, body: {} }, 40);
  assert.deepEqual([m.table.runstate(2), m.table.linknum(2)], [1, 0]);
  m.table.completed(1);
  assert.equal(m.table.linknum(1), 0);
  assert.throws(() => m.table.completed(1), /invariant/);
});

test('a board silent for Tthreshold becomes -1; only a JOIN brings it back', () => {
  const m = alone(cfg(0));
  m.tick(0);
  m.receive({ type: 'JOIN', sender: 1, term: 3, body: {} }, 0);
  m.receive({ type: 'JOIN', sender: 2, term: 3, body: {} }, 0);
  for (let t = 100; t <= 600; t += 100) {
    m.receive(report(1, 0), t);
    m.tick(t);
  }
  assert.equal(m.table.runstate(1), 1);
  assert.equal(m.table.runstate(2), -1);
  m.receive(report(2, 0), 650);
  assert.equal(m.table.runstate(2), -1, 'a REPORT does not revive a dead board');
  m.receive({ type: 'JOIN', sender: 2, term: 3, body: {} }, 700);
  assert.equal(m.table.runstate(2), 1);
});

test('takeover is staggered by ring distance: the adjacent board first', () => {
  const m = alone(cfg(0));
  const s = m.tick(0).send[0]!.msg;
  const b1 = new ClusterCore(cfg(1), 0),
    b2 = new ClusterCore(cfg(2), 0);
  b1.receive(s, 0);
  b2.receive(s, 0);
  assert.deepEqual(
    b1.tick(0).send.map((o) => [o.msg.type, o.to]),
    [['REPORT', 0]],
    'keep-alive to the master',
  );
  b1.tick(500);
  b2.tick(500);
  assert.equal(b1.role, 'node', 'not before Tmax has passed');
  b1.tick(501);
  assert.equal(b1.role, 'master');
  assert.equal(b1.term, 4);
  b2.tick(701);
  assert.equal(b2.role, 'master', 'b2 would take over only after one more stagger');
  assert.equal(b2.term, 5);
});

test('a flood holds a takeover on silence alone back while it lasts, and never past FLOOD_HOLD_TMAX × Tmax after the master was last heard', () => {
  const m = alone(cfg(0));
  const s = m.tick(0).send[0]!.msg;
  const b1 = new ClusterCore(cfg(1), 0);
  b1.receive(s, 0);
  b1.holdTakeover(900);
  b1.tick(501);
  assert.equal(b1.role, 'node', 'Tmax passed, but junk was being counted');
  b1.tick(899);
  assert.equal(b1.role, 'node');
  b1.tick(901);
  assert.equal(b1.role, 'master', 'the flood is over and the master is still silent');
  const b2 = new ClusterCore(cfg(1), 0);
  b2.receive(s, 0);
  b2.holdTakeover(1_000_000);
  b2.tick(FLOOD_HOLD_TMAX * 500);
  assert.equal(b2.role, 'node');
  b2.tick(FLOOD_HOLD_TMAX * 500 + 1);
  assert.equal(b2.role, 'master', 'a master that really died is replaced even under a flood that never ends');
});

test('a node answers a STATE that does not count it as running with a JOIN, and reports to a new master at once', () => {
  const n = new ClusterCore(cfg(1), 0);
  const r = n.receive({ type: 'STATE', sender: 0, term: 3, body: { master: 0, linknum: [0, 0, 0], runstate: [1, 0, 1] } }, 1000);
  assert.deepEqual(
    r.send.map((o) => o.msg.type),
    ['JOIN'],
  );
  const r2 = n.receive({ type: 'STATE', sender: 2, term: 5, body: { master: 2, linknum: [0, 0, 0], runstate: [-1, 1, 1] } }, 1050);
  assert.deepEqual(
    r2.send.map((o) => [o.msg.type, o.to]),
    [['REPORT', 2]],
  );
  assert.equal(n.master, 2);
});

test('a master with more support outbids a returning isolated master; with less or equal, it steps down', () => {
  const m = alone(cfg(0));
  m.tick(0);
  m.receive({ type: 'JOIN', sender: 1, term: 3, body: {} }, 0);
  const loner = { type: 'STATE' as const, sender: 2, term: 5, body: { master: 2, linknum: [0, 0, 0], runstate: [-1, -1, 1] as (1 | 0 | -1)[] } };
  assert.equal(support(loner.body), 1);
  const r = m.receive(loner, 10);
  assert.equal(m.role, 'master');
  assert.equal(m.term, 6);
  assert.ok(r.events.some((e) => e.kind === 'stale-master'));
  assert.equal(states(r).length, 1, 'answered at once');
  const strong = { type: 'STATE' as const, sender: 2, term: 8, body: { master: 2, linknum: [0, 0, 0], runstate: [1, 1, 1] as (1 | 0 | -1)[] } };
  const r2 = m.receive(strong, 20);
  assert.equal(m.role, 'node');
  assert.equal(m.master, 2);
  assert.ok(r2.events.some((e) => e.kind === 'role' && e.previous === 'master'));
});

test('a master back from its own pulled cable steps down to the new master, even before Tthreshold expired its table', () => {
  // Tthreshold longer than the pull: the isolated master still lists everyone as running.
  const m = alone({ ...cfg(0), tmaxMs: 120, tthresholdMs: 5000 });
  m.tick(0);
  m.receive({ type: 'JOIN', sender: 1, term: 3, body: {} }, 0);
  m.receive({ type: 'JOIN', sender: 2, term: 3, body: {} }, 0);
  assert.equal(m.table.support(), 3);
  // Pulled at 10 ms; board 1 took over with board 2 behind it; the cable comes back at 430 ms.
  const successor = { type: 'STATE' as const, sender: 1, term: 4, body: { master: 1, linknum: [0, 0, 0], runstate: [-1, 1, 1] as (1 | 0 | -1)[] } };
  const r = m.receive(successor, 430);
  assert.equal(m.role, 'node', 'it holds nobody it has heard within Tmax: it follows');
  assert.equal(m.master, 1);
  assert.ok(!r.events.some((e) => e.kind === 'stale-master'));
});

test('drain: the master marks a board drained, its STATEs carry it, a node that takes over keeps it; a node cannot drain', () => {
  const m = alone(cfg(0));
  m.tick(0);
  for (const b of [1, 2]) m.receive({ type: 'JOIN', sender: b, term: 0, body: {} }, 0);
  m.tick(10);
  const r = m.setDrained(2, true, 20);
  assert.deepEqual(r.events, [{ kind: 'drained', board: 2, drained: true }]);
  const sent = states(r);
  assert.equal(sent.length, 1, 'a membership change: its STATE goes at once');
  assert.deepEqual(m.setDrained(2, true, 21), { send: [], events: [] }, 'already drained: nothing changes');
  const body = sent[0]!.msg.body as { drained: boolean[]; runstate: number[] };
  assert.deepEqual(body.drained, [false, false, true]);
  assert.deepEqual(body.runstate, [1, 1, 1], 'drained is not down: it still counts as running');
  assert.equal(m.table.drained(2), true);
  // Board 1 hears it, then the master goes silent: it takes over and keeps board 2 drained.
  const n = new ClusterCore(cfg(1), 0);
  n.start(0);
  n.receive(sent[0]!.msg, 110);
  assert.equal(n.view()?.drained?.[2], true);
  assert.deepEqual(n.setDrained(0, true, 120).events, [], 'a node does not drain');
  let t = 110;
  while (n.role !== 'master' && t < 5000) {
    t += 50;
    n.tick(t);
  }
  assert.equal(n.role, 'master');
  assert.equal(n.table.drained(2), true, 'the new master keeps the drain');
  assert.deepEqual(n.view()?.drained, [false, false, true]);
  assert.deepEqual(n.setDrained(2, false, t + 1).events, [{ kind: 'drained', board: 2, drained: false }]);
  assert.deepEqual(n.view()?.drained, [false, false, false]);
});

test('planned handover: the master asks a board to take over; it does at once with the table, the old master follows it instead of outbidding it', () => {
  const m = alone(cfg(0));
  m.tick(0);
  for (const b of [1, 2]) m.receive({ type: 'JOIN', sender: b, term: 0, body: {} }, 0);
  const n1 = new ClusterCore(cfg(1), 0);
  const n2 = new ClusterCore(cfg(2), 0);
  n1.start(0);
  n2.start(0);
  const deliver = (r: Ready, from: number, at: number) => {
    const out: Array<[number, Ready]> = [];
    for (const o of r.send)
      for (const [i, core] of [
        [0, m],
        [1, n1],
        [2, n2],
      ] as const)
        if (i !== from && (o.to === 'all' || o.to === i)) out.push([i, core.receive(o.msg, at)]);
    return out;
  };
  for (const [, r] of deliver(m.tick(10), 0, 10)) deliver(r, -1, 10);
  assert.deepEqual([n1.role, n2.role, n1.master], ['node', 'node', 0]);
  assert.deepEqual(m.handOver(0, 20).send, [], 'not to itself');
  const asked = m.handOver(1, 20);
  assert.deepEqual(
    asked.send.map((o) => [o.msg.type, o.to]),
    [
      ['STATE', 'all'],
      ['HANDOVER', 1],
    ],
  );
  // A HANDOVER that is not from the board's master in its term is ignored.
  assert.equal(n2.receive({ type: 'HANDOVER', sender: 0, term: m.term, body: { to: 1 } }, 20).events.length, 0, 'one for another board');
  assert.equal(n2.receive({ type: 'HANDOVER', sender: 0, term: m.term - 1, body: { to: 2 } }, 20).events.length, 0, 'one from an older term');
  assert.equal(n1.receive({ type: 'HANDOVER', sender: 2, term: m.term, body: { to: 1 } }, 20).events.length, 0, 'from a board that is not the master');
  let taken: Ready | undefined;
  for (const [i, r] of deliver(asked, 0, 20)) if (i === 1) taken = r;
  assert.equal(n1.role, 'master', 'board 1 takes over at once, no Tmax wait');
  assert.ok(n1.term > m.term);
  assert.deepEqual(taken!.events[0], { kind: 'role', role: 'master', term: n1.term, master: 1, previous: 'node' });
  assert.ok(!taken!.events.some((e) => e.kind === 'runstate'), 'the old master is not marked down');
  assert.deepEqual(n1.view()?.runstate, [1, 1, 1], 'the table as the master held it: everyone running');
  // Its first STATE: the old master follows (it holds more fresh support, yet does not outbid), board 2 too.
  for (const [, r] of deliver(taken!, 1, 21)) deliver(r, -1, 21);
  assert.deepEqual([m.role, m.master, n2.master], ['node', 1, 1]);
  assert.equal(m.term, n1.term);
  // Without a handover under way, the same STATE from a board holding less would be outbid.
  const lone = alone(cfg(0));
  lone.tick(0);
  for (const b of [1, 2]) lone.receive({ type: 'JOIN', sender: b, term: 0, body: {} }, 0);
  lone.receive({ type: 'STATE', sender: 1, term: lone.term + 1, body: { master: 1, linknum: [0, 0, 0], runstate: [-1, 1, 0] } }, 30);
  assert.equal(lone.role, 'master', 'an unplanned higher term with less support is outbid');
});

test('REPORTs: every keepalive; at the next heartbeat after the load changed, unless an answer carried it; a new master hears one at once', () => {
  // The default timings: heartbeat 20, Tmax 120, Tthreshold 500: keepalive max(20, min(500 / 4, 120 / 2)) = 60 ms.
  const timings = { heartbeatMs: 20, tmaxMs: 120, tthresholdMs: 500, staggerMs: 40 };
  const m = alone({ ...cfg(0), ...timings });
  const s = states(m.tick(0))[0]!.msg;
  const b1 = new ClusterCore({ ...cfg(1), ...timings }, 0);
  b1.start(0);
  b1.receive(s, 0);
  assert.equal(b1.role, 'node');
  const sent = (r: Ready) => r.send.map((o) => `${o.msg.type}→${o.to}`);
  const beat = (t: number, load = b1.load, answeredAt?: number) => {
    b1.receive(s, t - 1);
    b1.setLocalLoad(load);
    if (answeredAt !== undefined) b1.answeredMaster(answeredAt);
    return sent(b1.tick(t));
  };
  assert.deepEqual(beat(20), ['REPORT→0']);
  assert.equal(b1.nextWakeMs(), 80, 'idle, a node wakes for the keepalive, not every heartbeat');
  b1.setLocalLoad(1);
  assert.equal(b1.nextWakeMs(), 40, 'a changed load: the next heartbeat');
  b1.setLocalLoad(0);
  assert.deepEqual(beat(40), [], 'idle: nothing new');
  assert.deepEqual(beat(60), []);
  assert.deepEqual(beat(80), ['REPORT→0'], 'the keepalive, 60 ms after the last');
  assert.deepEqual(beat(100, 2), ['REPORT→0'], 'the load changed and no answer carried it');
  assert.deepEqual(beat(120, 3, 110), [], 'an answer since the last heartbeat carried the load');
  assert.deepEqual(beat(140, 3, 130), []);
  assert.deepEqual(beat(160, 3, 150), ['REPORT→0'], 'still answering: the keepalive');
  assert.deepEqual(beat(180, 1), ['REPORT→0'], 'changed, and no answer since the last heartbeat');
  const s2 = { type: 'STATE', sender: 2, term: 5, body: { ...(s.body as object), master: 2 } } as Message;
  assert.deepEqual(sent(b1.receive(s2, 185)), ['REPORT→2'], 'a new master hears it at once');
});
