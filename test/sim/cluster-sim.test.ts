// Seeded runs of the whole cluster on the runtime's adapters (plane, UDP link, mirror, dispatch core),
// with HIGH and LOW requests, loss, duplication, reordering, partitions, crashes and stalled threads.
// A failure prints `seed=N`; reproduce with SIM_SEED=N npm test.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClusterSim, HIGH, LOW, rng, type SimOptions } from './simulator.ts';

const timing = { heartbeatMs: 100, tmaxMs: 500, tthresholdMs: 500, staggerMs: 200, stateMinGapMs: 10 };
const SEEDS = Number(process.env.SIM_SEEDS ?? 500);

interface Outcome {
  violations: string[];
  dispatched: number;
}

/** Safety phase with faults, then heal and check liveness and convergence. */
async function runSeed(seed: number): Promise<Outcome> {
  const r = rng(seed);
  const n = 2 + Math.floor(r() * 4); // 2..5 boards
  const opts: SimOptions = { boards: n, loss: r() * 0.3, dup: r() * 0.2, delayMaxMs: Math.floor(r() * 30), timing, capacity: 8 };
  const sim = new ClusterSim(opts, r);
  for (let i = 0; i < n; i++) sim.start(i);

  const faultEnd = 12_000;
  let t = 0;
  while (t < faultEnd) {
    // Client arrivals.
    const gap = 2 + Math.floor(r() * 20);
    t += gap;
    await sim.runUntil(t);
    sim.request(5 + Math.floor(r() * 200), r() < 0.5 ? HIGH : LOW);
    // Faults, now and then.
    if (r() < 0.01) {
      const i = Math.floor(r() * n);
      const k = r();
      if (k < 0.2) sim.crash(i);
      else if (k < 0.25) sim.stall(i, r() < 0.5 ? 'plane' : 'request', Math.floor(r() * 2 * timing.tmaxMs), r() < 0.5 ? 'now' : 'before-immediates');
      else if (k < 0.5) sim.start(i);
      else if (k < 0.65) sim.setLink(i, !sim.boards[i]!.linkUp);
      else if (k < 0.85) sim.partition(sim.boards.map(() => Math.floor(r() * 2)));
      else if (k < 0.9) {
        // all but one board dead
        for (let j = 0; j < n; j++) if (j !== i) sim.crash(j);
      } else sim.partition(sim.boards.map(() => 0));
    }
  }
  // Heal: everyone up, one network, no loss.
  sim.heal();
  for (let i = 0; i < n; i++) sim.start(i);
  const v: string[] = [];
  // Liveness: one master some bounded time after healing, everyone agreeing, everyone running.
  const bound = timing.tmaxMs + n * timing.staggerMs + timing.tthresholdMs + 4 * timing.heartbeatMs;
  t = faultEnd + bound;
  while (sim.now < t) {
    await sim.runUntil(Math.min(t, sim.now + 10));
    sim.request(20);
  }
  const masters = sim.masters();
  if (masters.length !== 1) v.push(`after healing ${bound} ms: masters [${masters.join(',')}]`);
  else {
    const m = sim.boards[masters[0]!]!.mirror!;
    sim.boards.forEach((b, i) => {
      if (b.mirror!.master !== masters[0] || b.mirror!.term !== m.term) v.push(`board ${i} follows ${b.mirror!.master}@${b.mirror!.term}, master is ${masters[0]}@${m.term}`);
      if (m.table.runstate(i) !== 1) v.push(`after healing board ${i} has runstate ${m.table.runstate(i)}`);
    });
    // Idle: every linknum back to 0 once the work drains and reports arrive.
    await sim.runUntil(t + 1000);
    for (let i = 0; i < n; i++) {
      if (m.table.linknum(i) !== 0) v.push(`idle but linknum[${i}] = ${m.table.linknum(i)}`);
      if (sim.boards[i]!.mirror!.load !== 0) v.push(`idle but board ${i} load ${sim.boards[i]!.mirror!.load}`);
    }
  }
  return { violations: [...new Set([...sim.violations, ...v])], dispatched: sim.dispatchedTotal };
}

test(`cluster simulator: ${SEEDS} seeds with loss, duplication, reordering, partitions, crashes, stalls`, async () => {
  const only = process.env.SIM_SEED;
  const seeds = only ? [Number(only)] : Array.from({ length: SEEDS }, (_, i) => i + 1);
  let dispatched = 0;
  for (const seed of seeds) {
    const o = await runSeed(seed);
    dispatched += o.dispatched;
    if (o.violations.length > 0) assert.fail(`seed=${seed} (SIM_SEED=${seed} to reproduce):\n  ${o.violations.slice(0, 8).join('\n  ')}`);
  }
  assert.ok(dispatched > seeds.length * 100, `workload ran (${dispatched} dispatches)`);
});
