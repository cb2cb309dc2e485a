// The QoS controllers: equations against hand-computed values, and closed loops against simulated
// servers (time is just the loop counter: no clocks, no sleeps).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { calibrate, clientPosition, LoadMonitor, levelFor, UtilizationController } from '../../master/qos/adaptation.ts';
import { AdmissionController } from '../../master/qos/admission.ts';
import { MISS, QuotaController } from '../../master/qos/quota.ts';
import { rng } from '../sim/simulator.ts';

test('admission: target_in = in + q0·e(t) + q1·e(t−T) (in = admitted), p = target_in / predicted', () => {
  const a = new AdmissionController(1, { targetQueue: [5], q0: 0.5, q1: 0.2, alpha: 0.5, refuseAfterPeriods: 3, probeGrowth: 1 }, () => 0);
  for (let i = 0; i < 10; i++) a.arrive(0, false);
  // first period: in 10, q 6 → e = −1, e(t−T) = 0: target_in = 10 − 0.5 = 9.5; predicted 10
  a.period([6], [0]);
  assert.deepEqual([a.classes[0]!.targetIn, a.classes[0]!.p], [9.5, 0.95]);
  for (let i = 0; i < 10; i++) a.arrive(0, false);
  // second: in 10, q 8 → e = −3, e(t−T) = −1: 10 − 1.5 − 0.2 = 8.3; predicted .5·10 + .5·10 = 10
  a.period([8], [0]);
  assert.equal(+a.classes[0]!.targetIn.toFixed(6), 8.3);
  assert.equal(+a.classes[0]!.p.toFixed(6), 0.83);
});

test("admission: the reserve is served first from the new period's target_in; newcomers get what is left; verified sessions always pass", () => {
  const a = new AdmissionController(1, { targetQueue: [0], q0: 1, q1: 0, alpha: 1, refuseAfterPeriods: 3, probeGrowth: 1 }, () => 0);
  for (let i = 0; i < 10; i++) assert.equal(a.arrive(0, false), 'admit', 'the first period admits all (nothing learned yet)');
  // in 10, q 4 → e = −4: target_in = 10 − 4 = 6. Five wait in the reserve: all five go first.
  assert.deepEqual(a.period([4], [5]), [5]);
  // What is left of the budget for newcomers: 6 − 5 = 1 of a predicted 10 → p = 0.1, at most one.
  assert.equal(+a.classes[0]!.p.toFixed(6), 0.1);
  const got = Array.from({ length: 10 }, () => a.arrive(0, false));
  assert.deepEqual(got, ['admit', ...Array(9).fill('reserve')]);
  assert.equal(a.arrive(0, true), 'admit', 'a verified session passes over the budget');
  // A reserve larger than the budget: only target_in of it, floored.
  assert.deepEqual(a.period([0], [20]), [7], 'in 7 (1 + 5 reserved + 1 session), q 0 → target_in 7');
});

test('admission closed loop: the queue settles near its target under a steady overload', () => {
  const a = new AdmissionController(1, { targetQueue: [20], q0: 0.8, q1: -0.5, alpha: 0.5, refuseAfterPeriods: 3, probeGrowth: 1.25 }, rng(9));
  let q = 0,
    reserve = 0;
  const service = 80; // per period; 120 offered
  const qs: number[] = [];
  for (let t = 0; t < 60; t++) {
    for (let i = 0; i < 120; i++) a.arrive(0, false) === 'admit' ? q++ : reserve++;
    q = Math.max(0, q - service);
    // The queue as the controller measures it, at the period's end (before the reserve's release).
    qs.push(q);
    const up = a.period([q], [reserve])[0]!;
    reserve -= up;
    q += up;
    reserve = 0; // refused after their periods (here: at once) — explicitly, with 503
  }
  const tail = qs.slice(-20);
  const mean = tail.reduce((s, x) => s + x, 0) / tail.length;
  assert.ok(Math.abs(mean - 20) < 2 && tail.every((x) => Math.abs(x - 20) <= 6), `queue ${mean.toFixed(1)} vs target 20 (${tail.join(',')})`);
});

test('admission probe: an empty queue with a waiting reserve grows the budget to at least probeGrowth × admitted; the law alone by (q0 + q1)·e', () => {
  const budgets = [1, 1.25].map((probeGrowth) => {
    const a = new AdmissionController(1, { targetQueue: [8], q0: 0.8, q1: -0.5, alpha: 0.5, refuseAfterPeriods: 3, probeGrowth }, () => 0);
    for (let i = 0; i < 100; i++) a.arrive(0, false);
    // in 100, q 0, nothing reserved (not starved): 100 + 0.8·8 = 106.4
    assert.deepEqual(a.period([0], [0]), [0]);
    assert.equal(+a.classes[0]!.targetIn.toFixed(6), 106.4);
    // 200 arrive: 107 pass (while admitted < 106.4), 93 wait; the queue ends empty
    const got = Array.from({ length: 200 }, () => a.arrive(0, false)).filter((x) => x === 'admit').length;
    assert.equal(got, 107);
    // law: 107 + 0.8·8 − 0.5·8 = 109.4; starved: max(109.4, 1.25·107 = 133.75); the reserve goes first
    assert.deepEqual(a.period([0], [93]), [93]);
    return +a.classes[0]!.targetIn.toFixed(6);
  });
  assert.deepEqual(budgets, [109.4, 133.75]);
  // Anything in the queue: the paper's law alone, probe or not.
  const b = new AdmissionController(1, { targetQueue: [8], q0: 0.8, q1: -0.5, alpha: 0.5, refuseAfterPeriods: 3, probeGrowth: 2 }, () => 0);
  for (let i = 0; i < 100; i++) b.arrive(0, false);
  b.period([3], [50]);
  assert.equal(+b.classes[0]!.targetIn.toFixed(6), 104);
});

/** A load step from half to 1.5× a server of 400 per period, noisy; what admission lets through after it. */
function stepRun(probeGrowth: number): { servedPerPeriod: number; refused: number; excess: number } {
  const a = new AdmissionController(1, { targetQueue: [8], q0: 0.8, q1: -0.5, alpha: 0.5, refuseAfterPeriods: 2, probeGrowth }, rng(3));
  const noise = rng(7);
  let q = 0;
  let reserve: number[] = []; // the period each waiting request arrived in
  let served = 0,
    refused = 0,
    offered = 0;
  for (let t = 0; t < 60; t++) {
    const n = Math.round((t < 12 ? 200 : 600) * (0.9 + 0.2 * noise()));
    const cap = Math.round(400 * (0.9 + 0.2 * noise()));
    let s = 0;
    for (let i = 0; i < n; i++) {
      if (a.arrive(0, false) === 'admit') q++;
      else reserve.push(t);
      const k = Math.min(q, Math.floor(((i + 1) * cap) / n) - Math.floor((i * cap) / n)); // served as the period goes
      q -= k;
      s += k;
    }
    const up = a.period([q], [reserve.length])[0]!;
    reserve.splice(0, up);
    q += up;
    const stale = reserve.filter((at) => t + 1 - at >= 2).length; // refused after 2 periods, with 503
    reserve = reserve.filter((at) => t + 1 - at < 2);
    if (t >= 12) {
      served += s;
      refused += stale;
      offered += n;
    }
  }
  return { servedPerPeriod: served / 48, refused: refused / offered, excess: 1 - (400 * 48) / offered };
}

test('admission after a load step: the probe refuses only the excess and keeps the server busy; the law alone starves it', () => {
  const probe = stepRun(1.25);
  assert.ok(probe.servedPerPeriod >= 0.95 * 400, `served ${probe.servedPerPeriod.toFixed(0)} of 400 per period`);
  assert.ok(probe.refused <= probe.excess + 0.03, `refused ${(100 * probe.refused).toFixed(1)}% against an excess of ${(100 * probe.excess).toFixed(1)}%`);
  const law = stepRun(1);
  assert.ok(law.servedPerPeriod < 0.7 * 400, `the law alone served ${law.servedPerPeriod.toFixed(0)} of 400 per period`);
});

test('adaptation: U = a·R + b·W; G ← clamp(G + k(U* − U), 0, M); fractional G by client hash', () => {
  const m = new LoadMonitor();
  for (let i = 0; i < 50; i++) m.record(2000);
  const { U, R, W } = m.take(1000, 0.004, 0.000002); // 50 req/s, 100 kB/s
  assert.deepEqual([R, W, +U.toFixed(6)], [50, 100_000, 0.4]);
  const c = new UtilizationController(3, 0.85, 2);
  assert.equal(+c.step(1.35).toFixed(6), 2); // 3 + 2·(.85 − 1.35)
  assert.equal(+c.step(2.85).toFixed(6), 0); // clamped
  assert.equal(+c.step(-1).toFixed(6), 3); // clamped at M
  // G = 2.3: 30% of clients on level 3, the rest on level 2, each always the same
  const clients = Array.from({ length: 2000 }, (_, i) => `10.0.${i >> 8}.${i & 255}`);
  const on3 = clients.filter((cl) => levelFor(2.3, cl, 3) === 3).length / clients.length;
  assert.ok(Math.abs(on3 - 0.3) < 0.04, `${on3}`);
  assert.equal(levelFor(2.3, '10.0.0.7', 3), levelFor(2.3, '10.0.0.7', 3));
  assert.equal(levelFor(2.3, '10.0.0.7', 3), clientPosition('10.0.0.7') < 0.3 ? 3 : 2);
  assert.equal(levelFor(0, 'x', 3), 0, 'G = 0 refuses');
});

test('calibration: a and b by least squares from (Rmax, Wmax) at several sizes', () => {
  // A server with a = 2 ms/request and b = 10 µs/byte: at size x, Rmax = 1/(a + b·x), Wmax = x·Rmax.
  const pts = [500, 5000, 20000, 80000].map((x) => ({ R: 1 / (0.002 + 0.00001 * x), W: x / (0.002 + 0.00001 * x) }));
  const { a, b } = calibrate(pts);
  assert.ok(Math.abs(a - 0.002) < 1e-9 && Math.abs(b - 0.00001) < 1e-12, `${a} ${b}`);
  assert.throws(() => calibrate([{ R: 1, W: 1 }]), /two or more/);
});

test('adaptation closed loop: U settles within ±5% of 85% after a 3× overload step', () => {
  const a = 0.004,
    b = 0.0000005,
    M = 3;
  const size = [0, 1000, 20000, 200000]; // bytes per request at each level level (0 = refused)
  const c = new UtilizationController(M, 0.85, 0.8);
  const clients = Array.from({ length: 500 }, (_, i) => `c${i}`);
  let U = 0;
  const trace: number[] = [];
  for (let t = 0; t < 120; t++) {
    const perClient = t < 30 ? 0.15 : 0.45; // requests/s per client: a 3× step at t = 30
    let R = 0,
      W = 0;
    for (const cl of clients) {
      const level = levelFor(c.G, cl, M);
      if (level === 0) continue;
      R += perClient;
      W += perClient * size[level]!;
    }
    U = Math.min(1, a * R + b * W); // a saturated server measures 100%
    c.step(U);
    trace.push(U);
  }
  assert.ok(trace[25]! < 0.85, 'below the target before the step: full content');
  const settled = trace.slice(-20);
  for (const u of settled) assert.ok(Math.abs(u - 0.85) <= 0.05, `U ${u.toFixed(3)} (G ${c.G.toFixed(2)})`);
});

test('quota: a class missing its target takes ⌈gain·e·quota⌉ from the classes below it, lowest first; never from above; comfortable classes give extra back', () => {
  const q = new QuotaController(
    [
      { targetMs: 5, priority: 0 },
      { targetMs: 10, priority: 1 },
      { targetMs: 15, priority: 2 },
    ],
    75,
    0.5,
  );
  assert.deepEqual(q.quotas, [25, 25, 25]);
  // Class 0 at 10 (e = +1.0): ⌈.5·1·25⌉ = 13 slots, from class 2 (the lowest) first.
  assert.deepEqual(q.period([10, 10, 7.5]), [38, 25, 12]);
  // Saturated (everyone late, e = .2/.2/1): only the highest class missing takes this period:
  // class 0, ⌈.5·.2·38⌉ = 4, from class 2. Class 1 waits its turn (it would lose them to class 0).
  assert.deepEqual(q.period([6, 12, 30]), [42, 25, 8]);
  assert.equal(q.canRun(2, 7), true);
  assert.equal(q.canRun(2, 8), false);
  // Class 0 within its target now: class 1 takes ⌈.5·.2·25⌉ = 3 from class 2; class 2 (+100%) has
  // nobody below it and takes nothing from above.
  assert.deepEqual(q.period([5, 12, 30]), [42, 28, 5]);
  // Pressure gone for class 0 (wait 1 against 5): nothing moves for two periods (hysteresis in time);
  // on the third calm one it needs ⌈1·42 / (5·0.9)⌉ = 10 slots and gives ⌈.5·(42 − 10)⌉ = 16, all to
  // the highest class below that misses its target: class 2 (wait 30 against 15). Class 1 (wait 5
  // against 10) needs ⌈5·28 / 9⌉ = 16 and gives its 3 extra to class 2 too. Class 1 itself,
  // comfortable, is given nothing.
  assert.deepEqual(q.period([1, 5, 30]), [42, 28, 5]);
  assert.deepEqual(q.period([1, 5, 30]), [42, 28, 5]);
  assert.deepEqual(q.period([1, 5, 30]), [26, 25, 24]);
  // A class that would miss again without them keeps its slots. Class 0 takes ⌈.5·1·25⌉ = 13, capped
  // at 20% of 50 = 10 per period → [35, 15]; at wait 3.4 against 5 it needs ⌈3.4·35/4.5⌉ = 27, so
  // after three calm periods it gives back ⌈.5·(35 − 27)⌉ = 4 of its 10 extra, not all.
  const r = new QuotaController(
    [
      { targetMs: 5, priority: 0 },
      { targetMs: 10, priority: 1 },
    ],
    50,
    0.5,
  );
  assert.deepEqual(r.period([10, 5]), [35, 15]);
  for (let i = 0; i < 2; i++) assert.deepEqual(r.period([3.4, 9]), [35, 15]);
  assert.deepEqual(r.period([3.4, 9]), [31, 19], 'to class 1, near its target (a class comfortable itself gets none)');
  // Inside the hysteresis band (−0.3 ≤ e ≤ 0.05): nothing moves.
  assert.deepEqual(q.period([4, 9.5, 15.5]), [26, 25, 24]);
  assert.equal(
    q.quotas.reduce((a, b) => a + b, 0),
    75,
    'slots are conserved',
  );
});

test('quota closed loop (003): class 0 reaches its target and no quota changes direction more than twice', () => {
  const q = new QuotaController(
    [
      { targetMs: 5000, priority: 0 },
      { targetMs: 10000, priority: 1 },
      { targetMs: 15000, priority: 2 },
    ],
    75,
    0.5,
  );
  // Backlogs 130/90/50 requests of 1 s work: a class with s slots waits ≈ backlog/s seconds.
  const backlog = [130, 90, 50];
  const history: number[][] = [[...q.quotas]];
  let r: number[] = [];
  for (let t = 0; t < 30; t++) {
    r = backlog.map((n, i) => (1000 * n) / q.quotas[i]!);
    history.push(q.period(r));
  }
  assert.ok(r[0]! <= 5000 * (1 + MISS), `class 0 at ${r[0]} ms, quotas ${q.quotas}`);
  for (let c = 0; c < 3; c++) {
    const steps = history.map((h) => h[c]!).flatMap((v, i, a) => (i > 0 && v !== a[i - 1] ? [Math.sign(v - a[i - 1]!)] : []));
    const turns = steps.filter((s, i) => i > 0 && s !== steps[i - 1]).length;
    assert.ok(turns <= 2, `class ${c} changed direction ${turns} times: ${history.map((h) => h[c]).join(' ')}`);
  }
});
