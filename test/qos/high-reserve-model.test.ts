// Table 1's hardest point (3 boards × 4 slots, 100 ms of service plus up to 6 ms of jitter, an
// open-loop load at 3× capacity, every 4th request HIGH) as a discrete-event model run on the real
// dispatch core: virtual time, a seeded jitter, no sockets. What the HIGH reserve and its wait
// budget (qos.highWaitMs) buy HIGH and cost LOW, in a form a change to either would show.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DispatchCore, type Effect, type Job, type JobInfo } from '../../master/dispatch-core.ts';
import { parseConfig } from '../../shared/config.ts';
import { StateTable } from '../../shared/state-table.ts';
import { rng } from '../sim/simulator.ts';

const BOARDS = 4; // b0 only forwards; b1-b3 serve
const RATE = 360; // 3 × 12 slots / 100 ms
const RUN_MS = 6000;

function model(qos: Record<string, unknown>, seed: number): { highWaitP99: number; lowServed: number } {
  const cfg = parseConfig({
    cluster: { name: 't', key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4', broadcast: 'peers', heartbeatMs: 100, tmaxMs: 1000, tthresholdMs: 1000, masterWork: 'forward' },
    boards: Array.from({ length: BOARDS }, (_, i) => ({ id: `b${i}`, address: '127.0.0.1', httpPort: 1000 + i, udpPort: 2000 + i })),
    classes: [
      { name: 'control', priority: 0, deadlineMs: 2000, match: [{ pathPrefix: '/cgi-bin/' }] },
      { name: 'page', priority: 1, deadlineMs: 2000, match: [{ pathPrefix: '/' }] },
    ],
    limits: { inFlightPerBoardMax: 4, queueMax: 5000 },
    auth: { disabled: true },
    qos,
  });
  const table = new StateTable(BOARDS);
  for (let i = 0; i < BOARDS; i++) table.join(i, 0);
  const rand = rng(seed);
  const core = new DispatchCore<number>(cfg, 0, table, rand);
  const info = (cls: number): JobInfo => ({ cls, bytes: 0, candidates: undefined, safe: false, page: false, client: 'c', session: false, group: undefined, groupMax: 0 });
  // Events in time order (a sorted array: a few thousand of them).
  type Ev = { t: number; kind: 'arrive' | 'answer' | 'wake'; job?: Job<number> };
  const events: Ev[] = [];
  const at = (e: Ev) => {
    let i = events.length;
    events.push(e);
    while (i > 0 && events[i - 1]!.t > e.t) events[i] = events[--i]!;
    events[i] = e;
  };
  // The core has served before (the bench's earlier points): each class knows its service time.
  for (const cls of [0, 1]) core.finished(core.submit(-1, info(cls), -3000).job, 0, -2897);
  for (let i = 0; i * (1000 / RATE) < RUN_MS; i++) at({ t: i * (1000 / RATE), kind: 'arrive' });
  const highWaits: number[] = [];
  let lowServed = 0;
  let wakeAt = -1;
  const apply = (effects: Effect<number>[], now: number) => {
    for (const e of effects) {
      if (e.kind !== 'dispatch') continue;
      if (e.job.cls === 0 && e.job.enqueuedMs >= 1000) highWaits.push(now - e.job.enqueuedMs); // after the step from nothing
      at({ t: now + 102 + rand() * 6, kind: 'answer', job: e.job });
    }
    const w = core.highReserve.wakeAtMs;
    if (w !== undefined && wakeAt <= now) {
      wakeAt = w;
      at({ t: w, kind: 'wake' });
    }
  };
  let n = 0;
  let beat = 0;
  while (events.length > 0) {
    const e = events.shift()!;
    for (; beat + 100 <= e.t; beat += 100) for (let b = 1; b < BOARDS; b++) table.heardFrom(b, beat + 100);
    if (e.kind === 'arrive') apply(core.submit(n, info(n++ % 4 === 0 ? 0 : 1), e.t).effects, e.t);
    else if (e.kind === 'wake') apply(core.pump(e.t), e.t);
    else {
      if (e.job!.cls === 1 && e.t - e.job!.enqueuedMs <= 2000) lowServed++;
      apply(core.finished(e.job!, 0, e.t), e.t);
    }
  }
  core.check();
  highWaits.sort((a, b) => a - b);
  return { highWaitP99: highWaits[Math.floor(0.99 * highWaits.length)]!, lowServed };
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

test("Table 1 at 3×, 25 % HIGH, modelled on the dispatch core: the whole reserve keeps HIGH from waiting; the 10 ms wait budget gives pages part of it back and keeps HIGH's waits near the budget", () => {
  const seeds = [1, 2, 3];
  const runs = (qos: Record<string, unknown>) => seeds.map((s) => model(qos, s));
  const none = runs({ highReserve: 0, paceFill: false });
  const whole = runs({ highWaitMs: 0 });
  const budget = runs({}); // the defaults: 1 of 12 slots, a 10 ms budget, the fill pace
  for (let i = 0; i < seeds.length; i++) {
    assert.ok(none[i]!.highWaitP99 > 30, `without a reserve HIGH waits behind pages (seed ${seeds[i]}: p99 ${none[i]!.highWaitP99.toFixed(1)} ms)`);
    assert.ok(whole[i]!.highWaitP99 < 5, `with the whole reserve HIGH finds a slot (seed ${seeds[i]}: p99 ${whole[i]!.highWaitP99.toFixed(1)} ms)`);
    assert.ok(budget[i]!.highWaitP99 < 20, `with the budget HIGH waits about 10 ms at most (seed ${seeds[i]}: p99 ${budget[i]!.highWaitP99.toFixed(1)} ms)`);
  }
  const low = (r: typeof none) => sum(r.map((x) => x.lowServed));
  assert.ok(low(whole) < 0.9 * low(none), `the whole reserve costs pages over a tenth (${low(whole)} against ${low(none)})`);
  assert.ok(low(budget) > 1.05 * low(whole), `the budget gives pages back part of it (${low(budget)} against ${low(whole)})`);
});
