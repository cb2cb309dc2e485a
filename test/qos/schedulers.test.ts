// The QoS schedulers against hand-computed values.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DwfsScheduler } from '../../master/qos/dwfs.ts';
import { FpdScheduler } from '../../master/qos/fpd.ts';
import { proportions, ResponseLog } from '../../master/qos/response-log.ts';
import { MuPattern, WeaklyHardScheduler } from '../../master/qos/weakly-hard.ts';
import type { QueueItem } from '../../master/scheduler.ts';

interface Item extends QueueItem {
  name: string;
}
const bounds = (n: number) => Array.from({ length: n }, (_, i) => ({ priority: i, queueMax: 1000, deadlineMs: 1e9 }));
const limits = { queueBytesMax: 1 << 30, scanMax: 16 };
const item = (name: string, cls: number, enqueuedMs = 0): Item => ({ name, cls, enqueuedMs, bytes: 0 });
const all = { canRun: () => true };
const outcome = (level: number, met = true) => ({ responseMs: 1, level, levels: 3, deadlineMet: met });

test('response log: sliding absQoS = Σ of the last k qualities; proportions', () => {
  const l = new ResponseLog(3);
  for (const q of [1, 1, 2 / 3]) l.push(q);
  assert.equal(+l.absQoS.toFixed(6), 2.666667);
  l.push(0); // the oldest 1 leaves, a drop arrives
  assert.equal(+l.absQoS.toFixed(6), 1.666667);
  const m = new ResponseLog(3);
  m.push(1);
  assert.deepEqual(
    proportions([l, m]).map((p) => +p.toFixed(4)),
    [0.625, 0.375],
  );
  assert.deepEqual(proportions([new ResponseLog(2), new ResponseLog(2)]), [0.5, 0.5]);
  assert.equal(ResponseLog.quality(2, 3), 2 / 3);
});

test('DWFS: finish tags F = S + P/Φ; service follows the weights 2:1 under backlog', () => {
  const s = new DwfsScheduler<Item>(bounds(2), limits, { weights: [2, 1], beta: 0, periodMs: 1e9 });
  const items: Item[] = [];
  for (let i = 0; i < 30; i++) items.push(item(`a${i}`, 0), item(`b${i}`, 1));
  for (const it of items) s.enqueue(it);
  // a: 0.5, 1, 1.5, … ; b: 1, 2, 3, … (all arrive at virtual time 0)
  assert.equal(s.finishTag(items[0]!), 0.5);
  assert.equal(s.finishTag(items[2]!), 1);
  assert.equal(s.finishTag(items[1]!), 1);
  assert.equal(s.finishTag(items[3]!), 2);
  const first9 = Array.from({ length: 9 }, () => s.take(0, all)!.name);
  // Ties (a1 and b0 at F = 1) go to the earlier arrival: b0 was queued before a1.
  assert.deepEqual(first9, ['a0', 'b0', 'a1', 'a2', 'b1', 'a3', 'a4', 'b2', 'a5']);
  let a = 0,
    b = 0;
  for (let i = 0; i < 21; i++) s.take(0, all)!.name.startsWith('a') ? a++ : b++;
  assert.deepEqual([a, b], [14, 7]);
});

test('DWFS: P is learned per class from service times', () => {
  const s = new DwfsScheduler<Item>(bounds(2), limits, { weights: [1, 1], beta: 0, periodMs: 1e9, initialServiceMs: 10 });
  s.completed(item('x', 1), { responseMs: 500, serviceMs: 60, level: 3, levels: 3, deadlineMet: true });
  assert.deepEqual(s.serviceMs, [10, 0.8 * 10 + 0.2 * 60]);
  const a = item('a', 0),
    b = item('b', 1);
  s.enqueue(a);
  s.enqueue(b);
  assert.deepEqual([s.finishTag(a), s.finishTag(b)], [10, 20], 'F = R + P/Φ: the longer class queues behind');
});

test('DWFS: virtual time runs at C2/ΣΦ(active); weights grow with queue length each period', () => {
  const s = new DwfsScheduler<Item>(bounds(2), limits, { weights: [1, 3], beta: 0.5, periodMs: 100 });
  s.enqueue(item('a', 0, 0));
  s.advance(40); // only class 0 active: R += 40 / 1
  assert.equal(s.virtualTime, 40);
  s.enqueue(item('b', 1, 40));
  s.enqueue(item('b2', 1, 40));
  s.advance(60); // both active: R += 20 / 4
  assert.equal(s.virtualTime, 45);
  s.advance(100); // period: Φ = Φ0 (1 + β q)
  assert.deepEqual(s.weights, [1 * 1.5, 3 * 2]);
});

test('FPD: the runnable class furthest below its target share goes first (hand-computed)', () => {
  const s = new FpdScheduler<Item>(bounds(2), limits, [3, 1], 8);
  const a = item('a', 0),
    b = item('b', 1);
  for (let i = 0; i < 6; i++) s.completed(a, outcome(3));
  s.completed(b, outcome(3));
  // proQoS = [6/7, 1/7] = [.857, .143]; targets [.75, .25]: class 1 lags by .107
  s.enqueue(item('a1', 0));
  s.enqueue(item('b1', 1));
  assert.equal(s.take(0, all)!.name, 'b1');
  for (let i = 0; i < 3; i++) s.completed(b, outcome(3));
  // proQoS = [6/10, 4/10]: now class 0 lags by .15
  s.enqueue(item('b2', 1));
  assert.equal(s.take(0, all)!.name, 'a1');
});

test('FPD closed loop: under overload, relative quality settles in proportion to the shares', () => {
  // One request served per tick, one arrival per class per tick, deadline 4 ticks: late ones are dropped (quality 0).
  const s = new FpdScheduler<Item>(
    bounds(2).map((b) => ({ ...b, deadlineMs: 4 })),
    limits,
    [3, 1],
    20,
  );
  const servedPerClass = [0, 0];
  for (let t = 0; t < 2000; t++) {
    s.enqueue(item(`a${t}`, 0, t));
    s.enqueue(item(`b${t}`, 1, t));
    const served = s.take(t, all);
    if (served) {
      s.completed(served, outcome(3));
      if (t >= 1000) servedPerClass[served.cls]!++;
    }
    for (const late of s.expire(t)) s.completed(late, outcome(0));
  }
  const pro = s.state().proQoS as number[];
  // Neither class starves: over the last 1000 ticks both were served, the high-share one more.
  assert.ok(servedPerClass[1]! > 100 && servedPerClass[0]! > servedPerClass[1]!, `served ${servedPerClass}`);
  assert.ok(Math.abs(pro[0]! - 0.75) < 0.06, `proQoS ${pro}`);
  assert.ok(Math.abs(pro[1]! - 0.25) < 0.06, `proQoS ${pro}`);
});

test('µ-pattern and critical function for (2,4)', () => {
  const p = new MuPattern({ m: 2, k: 4 });
  assert.equal(p.pattern, '1111');
  assert.equal(p.cf, 2); // met(last 3) − m + 1 = 3 − 2 + 1
  p.push(false);
  assert.deepEqual([p.pattern, p.cf], ['1110', 1]);
  p.push(false);
  assert.deepEqual([p.pattern, p.cf], ['1100', 0]); // critical: the next must be met
  assert.equal(p.satisfied, true);
  p.push(false);
  assert.deepEqual([p.pattern, p.cf, p.satisfied], ['1000', -1, false]); // violated
  p.push(true);
  p.push(true);
  assert.deepEqual([p.pattern, p.cf], ['0011', 1]);
});

test('weakly-hard: a class reaching the critical state is promoted above normal-mode classes', () => {
  const s = new WeaklyHardScheduler<Item>(
    bounds(2),
    limits,
    [
      { m: 9, k: 10 },
      { m: 2, k: 4 },
    ],
    [1, 1],
    10,
  );
  for (let i = 0; i < 10; i++) {
    s.enqueue(item(`hi${i}`, 0));
    s.enqueue(item(`lo${i}`, 1));
  }
  // Normal mode, nobody served yet: both below their share → fixed priority: class 0 first.
  assert.equal(s.take(0, all)!.name, 'hi0');
  // Class 1 misses two deadlines (say its requests were late): CF reaches 0 → panic.
  const dummy = item('x', 1);
  s.completed(dummy, outcome(3, false));
  s.completed(dummy, outcome(3, false));
  assert.equal(s.panic(1), true);
  assert.equal(s.take(0, all)!.name, 'lo0', 'promoted above the normal-mode class 0');
  assert.equal(s.promotions, 1);
  s.completed(dummy, outcome(3, true));
  s.completed(dummy, outcome(3, true));
  assert.equal(s.panic(1), false);
});

test('weakly-hard: panic is CF = 0 exactly (a class already violated is not promoted); critical is AbsQoS < SetQoS, served first and undegraded', () => {
  // (2,4): CF = met(last 3) − 2 + 1.
  const s = new WeaklyHardScheduler<Item>(
    bounds(2),
    limits,
    [
      { m: 2, k: 4 },
      { m: 0, k: 1 },
    ],
    [1, 1],
    4,
    [0, 0.5],
  );
  const a = item('a', 0),
    b = item('b', 1);
  s.completed(a, outcome(3, false)); // 1110 → last 3 = 110: CF = 2 − 1 = 1
  assert.deepEqual([s.patterns[0]!.pattern, s.patterns[0]!.cf, s.panic(0)], ['1110', 1, false]);
  s.completed(a, outcome(3, false)); // 1100 → 100: CF = 0: panic
  assert.deepEqual([s.patterns[0]!.pattern, s.patterns[0]!.cf, s.panic(0), s.protect(0)], ['1100', 0, true, false]);
  s.completed(a, outcome(3, false)); // 1000 → 000: CF = −1: violated, no longer promoted
  assert.deepEqual([s.patterns[0]!.pattern, s.patterns[0]!.cf, s.panic(0)], ['1000', -1, false]);
  // Class 1, SetQoS 0.5 of k = 4: AbsQoS 4 × 1/3 = 1.33 < 2 → critical once a full window is in.
  for (let i = 0; i < 3; i++) s.completed(b, outcome(1));
  assert.equal(s.critical(1), false, 'not before k answers');
  s.completed(b, outcome(1));
  assert.deepEqual([+s.logs[1]!.absQoS.toFixed(3), s.critical(1), s.protect(1)], [1.333, true, true]);
  // A critical class goes before a normal-mode class of higher fixed priority.
  s.enqueue(item('a1', 0));
  s.enqueue(item('b1', 1));
  assert.equal(s.take(0, all)!.name, 'b1');
  for (let i = 0; i < 4; i++) s.completed(b, outcome(3));
  assert.equal(s.critical(1), false, 'full quality again: AbsQoS 4 ≥ 2');
});

test('weakly-hard normal mode: a class at or above its share drops to 100 − ProQoS', () => {
  const s = new WeaklyHardScheduler<Item>(
    bounds(2),
    limits,
    [
      { m: 0, k: 1 },
      { m: 0, k: 1 },
    ],
    [1, 1],
    4,
  );
  const a = item('a', 0),
    b = item('b', 1);
  for (let i = 0; i < 3; i++) s.completed(a, outcome(3));
  s.completed(b, outcome(3));
  // proQoS = [0.75, 0.25]: class 0 above its 0.5 share → 100 − 75 = 25; class 1 below → 200 − 1
  assert.equal(s.priority(0), 25);
  assert.equal(s.priority(1), 199);
  s.enqueue(item('a1', 0));
  s.enqueue(item('b1', 1));
  assert.equal(s.take(0, all)!.name, 'b1');
});
