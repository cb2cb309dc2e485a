// The master's dispatch core on its own: no sockets, no timers; time is an argument.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DispatchCore, type Effect, type JobInfo } from '../../master/dispatch-core.ts';
import { parseConfig } from '../../shared/config.ts';
import { StateTable } from '../../shared/state-table.ts';

function setup(limits: Record<string, number> = {}, boards = 3, masterWork = 'share', qos?: Record<string, unknown>) {
  const cfg = parseConfig({
    cluster: { name: 't', key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4', broadcast: 'peers', heartbeatMs: 100, tmaxMs: 500, tthresholdMs: 500, masterWork },
    boards: Array.from({ length: boards }, (_, i) => ({ id: `b${i}`, address: '127.0.0.1', httpPort: 1000 + i, udpPort: 2000 + i })),
    classes: [
      // The standing queue off (0): these tests are about what comes after it (its own test sets it).
      { name: 'control', priority: 0, deadlineMs: 1000, match: [{ pathPrefix: '/cgi-bin/' }], standingWaitMs: 0 },
      { name: 'page', priority: 1, deadlineMs: 1000, match: [{ pathPrefix: '/' }] },
    ],
    limits: { inFlightPerBoardMax: 2, dispatchAttemptsMax: 2, requestTimeoutMs: 3000, ...limits },
    auth: { disabled: true },
    ...(qos ? { qos } : {}),
  });
  const table = new StateTable(boards);
  for (let i = 0; i < boards; i++) table.join(i, 0);
  return { cfg, table, core: new DispatchCore<string>(cfg, 0, table, () => 0.5) };
}
const info = (over: Partial<JobInfo> = {}): JobInfo => ({ cls: 0, bytes: 0, candidates: undefined, safe: false, page: false, client: 'c', session: false, group: undefined, groupMax: 0, ...over });
/** The HIGH reserve as /metrics shows it: [free slots, slots kept for HIGH]. */
const reserve = (core: DispatchCore<string>) => {
  const q = core.qosState();
  return [q.freeSlots, q.reservedSlots];
};
const dispatches = (e: Effect<string>[]) => e.filter((x) => x.kind === 'dispatch').map((x) => (x.kind === 'dispatch' ? `${x.job.payload}@${x.board}` : ''));

test('least-connected board in ring order; at capacity a job waits, and a completion dispatches it', () => {
  const { core, table } = setup();
  const placed: string[] = [];
  const jobs = [];
  for (let i = 0; i < 7; i++) {
    const s = core.submit(`r${i}`, info(), 0);
    jobs.push(s.job);
    placed.push(...dispatches(s.effects));
  }
  assert.deepEqual(placed, ['r0@0', 'r1@1', 'r2@2', 'r3@0', 'r4@1', 'r5@2'], 'two per board, spread evenly');
  assert.equal(core.queued(), 1);
  assert.deepEqual(
    [0, 1, 2].map((i) => table.linknum(i)),
    [2, 2, 2],
  );
  const first = core.submit('x', info(), 0).job; // queued behind r6
  assert.equal(first.state, 'queued');
  // r1 on board 1 answers: the oldest waiting job takes its slot.
  assert.deepEqual(dispatches(core.finished(jobs[1]!, 10, 20)), ['r6@1']);
  assert.equal(core.service.meanMs[0], 20);
  core.check();
});

test('HIGH before LOW: a control request waiting goes before earlier pages', () => {
  const { core } = setup({}, 1);
  const p0 = core.submit('p0', info({ cls: 1 }), 0).job;
  core.submit('p1', info({ cls: 1 }), 0);
  core.submit('p2', info({ cls: 1 }), 1);
  core.submit('c0', info({ cls: 0 }), 2);
  assert.deepEqual(dispatches(core.finished(p0, 0, 5)), ['c0@0']);
});

test('retry: a safe request, or one never delivered, goes to another board; a delivered action fails as BOARD_FAILED', () => {
  const { core } = setup();
  const safe = core.submit('get', info({ safe: true }), 0).job;
  assert.equal(safe.board, 0);
  assert.deepEqual(dispatches(core.failed(safe, true, 5)), ['get@1'], 'GET: another board');
  const undelivered = core.submit('post1', info(), 6).job;
  const firstBoard = undelivered.board;
  const again = core.failed(undelivered, false, 7);
  assert.equal(again.length, 1);
  assert.ok(again[0]!.kind === 'dispatch' && again[0]!.board !== firstBoard, 'never delivered: retried on another board');
  const delivered = core.submit('post2', info(), 8).job;
  const e = core.failed(delivered, true, 9, 'connection closed: ECONNRESET');
  assert.equal(e.length, 1);
  assert.equal(e[0]!.kind === 'refuse' && e[0]!.code, 'BOARD_FAILED', 'a POST that may have run is not run again');
  assert.match((e[0]!.kind === 'refuse' && e[0]!.message) || '', /failed before answering \(connection closed: ECONNRESET\)$/, 'the answer says what the link saw');
  assert.equal(core.count('failed', 0), 1);
  // Attempts are bounded: the GET already used its two.
  assert.equal(core.failed(safe, true, 10)[0]!.kind, 'refuse');
  // Never delivered, and no attempt left: it did not run, so the refusal is retryable (503), not a failure of the client's command.
  const r = core.failed(undelivered, false, 11);
  assert.equal(r[0]!.kind === 'refuse' && r[0]!.code, 'NO_BOARD');
  core.check();
});

test('a device whose every board is down is refused at once with DEVICE_UNREACHABLE, naming them', () => {
  const { core, table } = setup();
  table.setRunstate(1, -1);
  table.setRunstate(2, -1);
  const { job, effects } = core.submit('dev', info({ candidates: [1, 2] }), 0);
  assert.equal(job.state, 'done');
  assert.deepEqual(
    effects.map((e) => (e.kind === 'refuse' ? [e.code, e.message, e.retryAfterS] : e.kind)),
    [['DEVICE_UNREACHABLE', 'every board it is attached to is down (b1, b2)', 2]],
  );
  assert.equal(core.count('refused', 0), 1);
  // Silent past Tthreshold counts as down before the cluster core says so.
  const late = setup();
  assert.equal(late.core.submit('dev', info({ candidates: [1] }), 600).effects[0]?.kind, 'refuse');
});

test('a device request goes only to its boards; with none of them running yet (joining) it waits, then expires with QUEUE_TIMEOUT', () => {
  const { core, table } = setup();
  table.setRunstate(2, 0);
  const job = core.submit('dev', info({ candidates: [2] }), 0).job;
  assert.equal(job.state, 'queued');
  assert.deepEqual(
    core.tick(999).map((e) => e.kind),
    [],
  );
  const e = core.tick(1000);
  assert.equal(e.length, 1);
  assert.equal(e[0]!.kind === 'refuse' && e[0]!.code, 'QUEUE_TIMEOUT');
  assert.equal(core.count('expired', 0), 1);
});

test('a board silent for Tthreshold gets nothing, even before the cluster core marks it down', () => {
  const { core, table } = setup();
  table.heardFrom(1, 600);
  table.heardFrom(2, 0);
  const placed = [0, 1, 2, 3].flatMap((i) => dispatches(core.submit(`r${i}`, info(), 600).effects));
  assert.deepEqual(placed, ['r0@0', 'r1@1', 'r2@0', 'r3@1'], 'board 2 last heard 600 ms ago');
});

test('deadline prediction: a job that can no longer finish in time is refused at once instead of run', () => {
  const { core } = setup({}, 1);
  const a = core.submit('a', info(), 0).job;
  core.submit('b', info(), 0);
  core.submit('c', info(), 0);
  // The class's service time is learned from a slow answer (900 ms); c has waited 900 ms already.
  const e = core.finished(a, 0, 900);
  assert.deepEqual(
    e.map((x) => (x.kind === 'refuse' ? x.code : x.kind)),
    ['QUEUE_TIMEOUT'],
  );
  assert.equal(core.count('expired', 0), 1);
});

test('DISPATCH_TIMEOUT: a board that never answers frees its slot after requestTimeoutMs', () => {
  const { core, table } = setup({}, 1);
  const j = core.submit('slow', info(), 0).job;
  assert.equal(table.linknum(0), 1);
  assert.deepEqual(core.tick(2999), []);
  const e = core.tick(3000);
  assert.equal(e[0]!.kind === 'refuse' && e[0]!.code, 'DISPATCH_TIMEOUT');
  assert.equal(table.linknum(0), 0);
  assert.deepEqual(core.finished(j, 0, 3100), [], 'a late answer changes nothing');
  core.check();
});

test('DISPATCH_TIMEOUT: one tick ends every dispatch past the timeout, oldest first, and only those', () => {
  const { core, table } = setup({ inFlightPerBoardMax: 3 }, 1);
  core.submit('a', info(), 0);
  core.submit('b', info(), 500);
  core.submit('c', info(), 1000);
  assert.equal(table.linknum(0), 3);
  const e = core.tick(3500);
  assert.deepEqual(
    e.map((x) => x.kind === 'refuse' && `${x.job.payload} ${x.code}`),
    ['a DISPATCH_TIMEOUT', 'b DISPATCH_TIMEOUT'],
  );
  assert.equal(table.linknum(0), 1, 'c has 500 ms left');
  assert.deepEqual(
    core.tick(4000).map((x) => x.kind === 'refuse' && x.job.payload),
    ['c'],
  );
  core.check();
});

test('cancel: a queued job leaves the queue; a running one keeps its slot until the board answers', () => {
  const { core } = setup({}, 1);
  const running = core.submit('r', info(), 0).job;
  core.submit('r2', info(), 0);
  const queued = core.submit('q', info(), 0).job;
  assert.equal(core.cancel(queued), true);
  assert.equal(core.queued(), 0);
  assert.equal(core.count('gone', 0), 1);
  assert.equal(core.cancel(running), false);
  assert.equal(running.state, 'running');
});

test('masterWork spill: the master (board 0) runs only what the other boards have no room for', () => {
  const { core } = setup({}, 3, 'spill');
  const placed = [0, 1, 2, 3, 4, 5].flatMap((i) => dispatches(core.submit(`r${i}`, info(), 0).effects));
  assert.deepEqual(placed, ['r0@1', 'r1@2', 'r2@1', 'r3@2', 'r4@0', 'r5@0']);
});

test('masterWork forward: the master runs nothing another running board could serve; alone, it serves', () => {
  const { core, table } = setup({}, 3, 'forward');
  const placed = [0, 1, 2, 3, 4].flatMap((i) => dispatches(core.submit(`r${i}`, info(), 0).effects));
  assert.deepEqual(placed, ['r0@1', 'r1@2', 'r2@1', 'r3@2'], 'the fifth waits for a board');
  assert.deepEqual(dispatches(core.submit('dev', info({ candidates: [0] }), 0).effects), ['dev@0'], 'a device only the master has');
  table.setRunstate(1, -1);
  table.setRunstate(2, -1);
  assert.deepEqual(dispatches(core.submit('alone', info(), 1).effects), ['r4@0'], 'no other board running: the master serves (up to its capacity of 2)');
  assert.equal(core.queued(), 1);
});

test('OVERLOADED: content adaptation at its lowest level sheds pages, never device control', () => {
  // Every answer priced far over capacity: the controller lowers the content level to 0 (no level).
  const { core } = setup({}, 3, 'share', { periodMs: 100, adaptation: { levels: 3, targetUtilization: 0.5, k: 1, a: 1, b: 0 } });
  let t = 0;
  for (let p = 0; p < 50 && (core.qosState().G as number) > 0; p++) {
    const { job } = core.submit('warm', info({ cls: 1, page: true }), t);
    core.finished(job, 100, t + 1);
    t += 100;
    core.period(t);
  }
  assert.equal(core.qosState().G, 0, 'the content level reached 0');
  const page = core.submit('page', info({ cls: 1, page: true }), t);
  assert.deepEqual(
    page.effects.map((e) => (e.kind === 'refuse' ? e.code : e.kind)),
    ['OVERLOADED'],
  );
  const control = core.submit('cmd', info({ cls: 0 }), t);
  assert.equal(dispatches(control.effects).length, 1, 'device control is never adapted away');
});

test('step-down hand-off: drain returns every waiting job in arrival order (the new master classifies them again) and leaves nothing behind', () => {
  const { core } = setup({ inFlightPerBoardMax: 1 }, 1);
  core.submit('busy', info(), 0);
  for (const [name, cls] of [
    ['p1', 1],
    ['c1', 0],
    ['p2', 1],
    ['c2', 0],
  ] as const)
    core.submit(name, info({ cls }), 1);
  const drained = core.drain();
  assert.deepEqual(
    drained.map((j) => j.payload),
    ['p1', 'c1', 'p2', 'c2'],
  );
  assert.ok(
    drained.every((j) => j.state === 'done'),
    "a drained job is no longer the core's",
  );
  assert.equal(core.queued(), 0);
});

test("a run group (a CGI program's concurrencyMax): at most groupMax per board; the rest wait, others pass; a full queue refuses", () => {
  const { core } = setup({ inFlightPerBoardMax: 8, queueMax: 2 });
  const prog = (over: Partial<JobInfo> = {}) => info({ candidates: [1, 2], group: 'pump.sh', groupMax: 2, ...over });
  const placed: string[] = [];
  const jobs = [];
  for (let i = 0; i < 6; i++) {
    const s = core.submit(`p${i}`, prog(), 0);
    jobs.push(s.job);
    placed.push(...dispatches(s.effects));
    core.check();
  }
  assert.equal(placed.length, 4, 'two per board on the two boards that have it');
  assert.deepEqual(
    [1, 2].map((b) => placed.filter((p) => p.endsWith(`@${b}`)).length),
    [2, 2],
  );
  assert.equal(core.queued(), 2, 'the fifth and sixth wait');
  // Another program and an ungrouped request are not held up behind them.
  assert.deepEqual(dispatches(core.submit('other', info({ cls: 1, candidates: [1], group: 'valve.sh', groupMax: 1 }), 1).effects), ['other@1']);
  assert.equal(dispatches(core.submit('page', info({ cls: 1 }), 1).effects).length, 1);
  // The queue (2 per class) is full: the next is refused at once, with a Retry-After.
  const refused = core.submit('p6', prog(), 1).effects.find((e) => e.kind === 'refuse');
  assert.ok(refused?.kind === 'refuse' && refused.code === 'QUEUE_FULL' && refused.retryAfterS >= 1);
  // A run of the group ends: the next waiting one takes its board, and only that one.
  const onBoard2 = jobs.find((j) => j.state === 'running' && j.board === 2)!;
  assert.deepEqual(dispatches(core.finished(onBoard2, 0, 2)), ['p4@2']);
  core.check();
  const failed = jobs.find((j) => j.state === 'running' && j.board === 1)!;
  assert.deepEqual(dispatches(core.failed(failed, false, 3)), ['p5@1'], 'a failure frees its slot too');
  core.check();
});

test("a queued job starts only if it is likely to finish within its class deadline: waited + the class's mean service time + twice its mean deviation", () => {
  const { core } = setup({ inFlightPerBoardMax: 1 }, 1, 'share', { highReserve: 0 });
  // Pages answered in 100 and 140 ms: mean 108, mean deviation 10, likely 128.
  core.finished(core.submit('p1', info({ cls: 1 }), 0).job, 0, 100);
  core.finished(core.submit('p2', info({ cls: 1 }), 100).job, 0, 240);
  assert.deepEqual([core.service.meanMs[1], core.service.devMs[1], core.service.likelyMs(1)], [108, 10, 128]);
  const h = core.submit('h', info({ cls: 0 }), 240).job; // holds the only slot until 1130
  core.submit('q', info({ cls: 1 }), 250);
  core.submit('q2', info({ cls: 1 }), 280);
  const next = core.finished(h, 0, 1130).map((e) => (e.kind === 'refuse' ? `${e.job.payload}:${e.code}` : `${e.job.payload}@${e.board}`));
  assert.deepEqual(next, ['q:QUEUE_TIMEOUT', 'q2@0'], 'q waited 880 ms: 880 + 108 fits 1000 but 880 + 128 does not; q2 waited 850: 978, started');
  core.check();
});

test("qos.highReserve is a trunk reservation: while HIGH is active, LOW leaves that share of the cluster's slots free; a HIGH arrival finds one at once", () => {
  // Never waived (qos.highWaitMs 0): the reserve alone; the waiver has its own test.
  const { core, table } = setup({ inFlightPerBoardMax: 4 }, 3, 'share', { highReserve: 0.25, highWaitMs: 0 });
  // No HIGH yet: LOW may fill every slot.
  const low: string[] = [];
  for (let i = 0; i < 13; i++) low.push(...dispatches(core.submit(`l${i}`, info({ cls: 1 }), 0).effects));
  assert.equal(low.length, 12, 'no first-class arrival yet: no reserve');
  assert.equal(core.queued(1), 1);
  // HIGH arrives (it waits: every slot is taken); from now on 3 of the 12 slots (0.25) stay free for it.
  const h0 = core.submit('h0', info({ cls: 0 }), 10);
  assert.equal(h0.job.state, 'queued');
  assert.deepEqual(reserve(core), [0, 3], '3 of the 12 slots (0.25) kept for HIGH, none free');
  core.check();
  const fresh = setup({ inFlightPerBoardMax: 4 }, 3, 'share', { highReserve: 0.25, highWaitMs: 0 });
  fresh.core.submit('h', info({ cls: 0 }), 0); // HIGH active
  const lows = Array.from({ length: 12 }, (_, i) => fresh.core.submit(`l${i}`, info({ cls: 1 }), 1));
  assert.equal(lows.filter((l) => l.job.state === 'running').length, 8, '12 slots, one taken by HIGH, 3 kept free: LOW takes 8');
  assert.deepEqual(reserve(fresh.core), [3, 3]);
  const high = [1, 2, 3].flatMap((i) => dispatches(fresh.core.submit(`h${i}`, info({ cls: 0 }), 2).effects));
  assert.equal(high.length, 3, 'three HIGH arrivals find a slot at once, while 4 LOW wait');
  assert.equal(fresh.core.queued(1), 4);
  // A LOW completion frees a slot that LOW may not take: the reserve is short by one.
  assert.deepEqual(dispatches(fresh.core.finished(lows[0]!.job, 0, 3)), [], 'its slot stays free');
  assert.deepEqual(reserve(fresh.core), [1, 3]);
  // A second without HIGH arrivals: the reserve lapses (the waiting LOW are past their deadline by then), a new LOW takes the free slot.
  for (const b of [1, 2]) fresh.table.heardFrom(b, 1000);
  assert.deepEqual(dispatches(fresh.core.submit('late', info({ cls: 1 }), 1003).effects), ['late@1']);
  fresh.core.check();
  assert.deepEqual(
    [0, 1, 2].map((i) => fresh.table.linknum(i)),
    [4, 4, 4],
  );
  assert.deepEqual(
    [0, 1, 2].map((i) => table.linknum(i)),
    [4, 4, 4],
  );
});

test('qos.paceFill: while HIGH is active, pages fill idle slots no faster than slots empty (slots over the mean service time); a freed slot is refilled at once; unpaced, they take every slot', () => {
  const flood = (paceFill: boolean, highReserve?: number) => {
    const { core } = setup({ inFlightPerBoardMax: 4 }, 3, 'share', { paceFill, highWaitMs: 0, ...(highReserve === undefined ? {} : { highReserve }) });
    // One answer teaches the core the service time, 120 ms (no HIGH yet: nothing is paced).
    const first = core.submit('first', info({ cls: 1 }), 0).job;
    core.finished(first, 0, 120);
    // HIGH arrives, then a flood of pages onto the idle cluster (12 slots, 1 kept for HIGH).
    core.submit('h', info({ cls: 0 }), 200);
    const lows = Array.from({ length: 20 }, (_, i) => core.submit(`l${i}`, info({ cls: 1 }), 200).job);
    return { core, lows, started: () => lows.filter((j) => j.state === 'running').length };
  };
  const off = flood(false);
  assert.equal(off.started(), 10, 'unpaced: HIGH has a slot, one is kept free, pages take the other 10 at once');
  assert.equal(off.core.highReserve.wakeAtMs, undefined);
  const on = flood(true);
  assert.equal(on.started(), 2, 'paced: what idle slots earned (at most one more than the jobs in service)');
  assert.equal(on.core.highReserve.wakeAtMs, 210, 'the next start is due one slot-time later: 120 ms / 12 slots');
  assert.equal(flood(true, 0).started(), 2, 'the pace holds without a reserve too');
  const names = (e: Effect<string>[]) => dispatches(e).map((d) => d.split('@')[0]);
  assert.deepEqual(names(on.core.pump(210)), ['l2']);
  assert.deepEqual(names(on.core.pump(215)), [], 'half a slot-time: not yet');
  assert.deepEqual(names(on.core.pump(220)), ['l3']);
  // A page answered: its slot is refilled at once, the pace holds no replacement.
  assert.deepEqual(names(on.core.finished(on.lows[0]!, 0, 221)), ['l4']);
  for (let t = 230; t <= 300; t += 10) on.core.pump(t);
  assert.equal(on.started(), 10, "by one service time after the flood, every slot but HIGH's and the reserve is taken");
  assert.deepEqual(dispatches(on.core.pump(400)), [], 'all full: nothing more, paced or not');
  on.core.check();
});

test("qos.highWaitMs: the reserve is waived for a page when a job in service is due to answer within HIGH's wait budget, and not while HIGH's recent longest wait (decaying by e per second) is over it", () => {
  // 3 boards × 2 slots, 1 kept for HIGH; each class learns a 100 ms service time first. Deadlines far off: no job here expires.
  const base = setup({}, 3, 'share', { highWaitMs: 10, paceFill: false });
  const table = base.table;
  const core = new DispatchCore<string>({ ...base.cfg, classes: base.cfg.classes.map((k) => ({ ...k, deadlineMs: 60_000 })) }, 0, table, () => 0.5);
  for (const cls of [0, 1]) core.finished(core.submit(`learn${cls}`, info({ cls }), 0).job, 0, 100);
  const alive = (t: number) => {
    for (const b of [1, 2]) table.heardFrom(b, t); // Tthreshold 500
  };
  const names = (e: Effect<string>[]) => dispatches(e).map((d) => d.split('@')[0]);
  alive(1000);
  core.submit('h', info({ cls: 0 }), 1000); // HIGH active, served at once: due at 1100
  const p = Array.from({ length: 5 }, (_, i) => core.submit(`p${i}`, info({ cls: 1 }), 1000).job);
  assert.deepEqual(
    p.map((j) => j.state),
    ['running', 'running', 'running', 'running', 'queued'],
    '6 slots: HIGH 1, pages 4, 1 kept: the next answer is due at 1100, 100 ms away',
  );
  assert.deepEqual(names(core.pump(1089)), [], 'due in 11 ms: held');
  assert.deepEqual(names(core.pump(1091)), ['p4'], 'due within 10 ms: waived');
  const h2 = core.submit('h2', info({ cls: 0 }), 1095).job;
  assert.equal(h2.state, 'queued', 'every slot taken: the HIGH that arrives waits');
  core.submit('more', info({ cls: 1 }), 1096);
  assert.deepEqual(names(core.finished(p[0]!, 0, 1100)), ['h2'], 'for the slot the due page frees, 5 ms');
  // A HIGH waits 19 ms, over the budget: nothing is waived until that wait has decayed under it (ln 1.9 s).
  core.submit('h3', info({ cls: 0 }), 1101);
  assert.deepEqual(names(core.finished(p[1]!, 0, 1120)), ['h3']);
  assert.equal(core.qosState().highWaitS, 0.019, 'on /metrics as ews_high_wait_seconds');
  alive(1185);
  assert.deepEqual(names(core.finished(p[2]!, 0, 1185)), [], 'p4 is due at 1191, but HIGH waited 19 ms (17.8 now): held');
  alive(1660);
  assert.deepEqual(names(core.submit('h4', info({ cls: 0 }), 1660).effects), ['h4'], 'HIGH takes the reserve at once; due at 1760');
  alive(1765);
  assert.deepEqual(names(core.finished(p[3]!, 0, 1765)), ['more'], '19 ms decayed to 9.97 by 1765, and h4 is due: waived');
  // A job overdue by more than the budget is not trusted to answer soon.
  core.submit('late', info({ cls: 1 }), 1766);
  assert.deepEqual(names(core.finished(h2, 0, 1790)), [], 'every job left is overdue by more than 10 ms (h4 by 30) or due more than 10 ms from now: held');
  core.check();
});

test('classes[].standingWaitMs: in a queue that has stood for qos.standingMs, a request that waited past it is refused OVERLOADED; a burst that empties is served', () => {
  const cfg = (standingWaitMs?: number) => {
    const c = setup({ inFlightPerBoardMax: 1 }, 1, 'share', { standingMs: 100, highReserve: 0 });
    const classes = c.cfg.classes.map((k, i) => (i === 0 ? { ...k, standingWaitMs } : k));
    const core = new DispatchCore<string>({ ...c.cfg, classes }, 0, c.table, () => 0.5);
    return core;
  };
  // One slot, a job every 10 ms, each served in 20 ms: the queue never empties.
  const run = (core: DispatchCore<string>) => {
    const refused: string[] = [];
    const served: Array<[string, number]> = [];
    let running: { job: ReturnType<typeof core.submit>['job']; at: number } | undefined;
    const apply = (effects: Effect<string>[], t: number) => {
      for (const e of effects) {
        if (e.kind === 'refuse') refused.push(`${e.job.payload}:${e.code}`);
        else {
          running = { job: e.job, at: t };
          served.push([e.job.payload, t - e.job.enqueuedMs]);
        }
      }
    };
    for (let t = 0; t <= 400; t += 10) {
      if (running && t - running.at >= 20) {
        const j = running.job;
        running = undefined;
        apply(core.finished(j, 0, t), t);
      }
      apply(core.submit(`r${t}`, info({ cls: 0 }), t).effects, t);
      core.check();
    }
    return { refused, served };
  };
  const off = run(cfg());
  assert.equal(off.refused.length, 0, 'without it every request waits its turn');
  assert.ok(off.served.at(-1)![1] > 150, `and the waits grow: the last served waited ${off.served.at(-1)![1]} ms`);
  const on = run(cfg(50));
  assert.ok(on.refused.length > 5 && on.refused.every((r) => r.endsWith(':OVERLOADED')), `refused: ${on.refused.join(' ')}`);
  const late = on.served.filter(([, w]) => w > 50);
  // Before the queue has stood for 100 ms waits may pass 50 ms; after, none served waited longer.
  assert.ok(
    late.every(([name]) => Number(name.slice(1)) < 150),
    `served stale after the queue stood: ${late.map((x) => x.join('@')).join(' ')}`,
  );
  // A burst: 5 at once, then nothing; the queue empties within 100 ms of standing: nothing refused.
  const burst = cfg(10);
  const effects: Effect<string>[] = [];
  const jobs = [0, 1, 2, 3, 4].map((i) => burst.submit(`b${i}`, info({ cls: 0 }), 0));
  for (const j of jobs) effects.push(...j.effects);
  for (let i = 0; i < 4; i++) effects.push(...burst.finished(jobs[i]!.job, 0, 20 * (i + 1)));
  assert.equal(effects.filter((e) => e.kind === 'refuse').length, 0, 'the queue stood 80 ms < 100: a burst, served');
});

test('a drained board gets no new work; a job bound to drained (or down) boards only is refused MAINTENANCE at once', () => {
  const { core, table } = setup({ inFlightPerBoardMax: 4 }, 3, 'share');
  table.setDrained(1, true);
  const placed = Array.from({ length: 6 }, (_, i) => dispatches(core.submit(`r${i}`, info({ cls: 1 }), 0).effects)).flat();
  assert.equal(placed.length, 6);
  assert.ok(
    placed.every((p) => !p.endsWith('@1')),
    placed.join(' '),
  );
  // A device on boards 1 and 2: it runs on 2. On board 1 only: refused, naming it.
  assert.deepEqual(dispatches(core.submit('d', info({ cls: 0, candidates: [1, 2] }), 0).effects), ['d@2']);
  const only = core.submit('m', info({ cls: 0, candidates: [1] }), 0).effects[0];
  assert.ok(only?.kind === 'refuse' && only.code === 'MAINTENANCE' && only.message?.includes('b1') && only.retryAfterS === 30, JSON.stringify(only));
  // Board 2 down too: a device on 1 and 2 is in maintenance (1) and down (2).
  table.setRunstate(2, -1);
  const both = core.submit('x', info({ cls: 0, candidates: [1, 2] }), 0).effects[0];
  assert.ok(both?.kind === 'refuse' && both.code === 'MAINTENANCE' && /b1.*down \(b2\)/.test(both.message ?? ''), JSON.stringify(both));
  // Undrained: board 1 takes work again.
  table.setDrained(1, false);
  assert.deepEqual(dispatches(core.submit('y', info({ cls: 0, candidates: [1] }), 0).effects), ['y@1']);
  core.check();
});

test('a service estimate past the deadline does not refuse its class for good: with none of the class in service, the next job goes and renews it', () => {
  const { core } = setup({ inFlightPerBoardMax: 2 }, 1, 'share', { highReserve: 0 });
  // Two control answers that took 2.5 s (a board in trouble): likely 2 500 ms, past the 1 000 ms deadline.
  core.finished(core.submit('s1', info(), 0).job, 0, 2500);
  core.finished(core.submit('s2', info(), 2500).job, 0, 5000);
  assert.equal(core.service.likelyMs(0), 2500);
  // None of the class in service: a new one is dispatched, not refused at once.
  const probe = core.submit('p', info(), 5000);
  assert.deepEqual(dispatches(probe.effects), ['p@0']);
  // While it runs, the estimate still refuses the class (a free slot, waited 0 + 2 500 > 1 000).
  const q = core.submit('q', info(), 5001);
  assert.deepEqual(
    q.effects.map((e) => (e.kind === 'refuse' ? e.code : e.kind)),
    ['QUEUE_TIMEOUT'],
  );
  // The probe's quick answer renews the estimate.
  core.finished(probe.job, 0, 5010);
  assert.deepEqual([core.service.meanMs[0], core.service.devMs[0]], [2002, 622.5]);
  core.check();
});
