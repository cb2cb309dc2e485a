import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LocalPacer } from '../../master/local-pacer.ts';

interface Item {
  name: string;
  costMs: number;
  gone?: boolean;
}

/**
 * A pacer on a fake clock: each start advances it by the item's cost; turns run when the test says.
 * `onDropped` stands for the core's reaction to a dropped job (it may hand the pacer another).
 */
function harness(budgetMs: number, waitingMax: number, onDropped?: (i: Item, pacer: LocalPacer<Item>) => void) {
  let now = 0;
  const turns: Array<() => void> = [];
  const started: string[] = [];
  const dropped: string[] = [];
  const pacer: LocalPacer<Item> = new LocalPacer<Item>(budgetMs, waitingMax, {
    now: () => now,
    later: (fn) => turns.push(fn),
    start: (i) => {
      started.push(i.name);
      now += i.costMs;
    },
    gone: (i) => i.gone === true,
    dropped: (i) => {
      dropped.push(i.name);
      onDropped?.(i, pacer);
    },
  });
  const nextTurn = () => {
    const fn = turns.shift();
    assert.ok(fn, 'a turn was scheduled');
    fn();
  };
  return { pacer, turns, started, dropped, nextTurn };
}

test('local pacer: starts at once within the turn budget, the rest on later turns in order, one turn scheduled at a time', () => {
  const h = harness(1, 16);
  h.pacer.submit({ name: 'a', costMs: 0.4 });
  h.pacer.submit({ name: 'b', costMs: 0.4 });
  assert.deepEqual(h.started, ['a', 'b'], 'under the budget: both start now');
  assert.equal(h.turns.length, 0);
  h.pacer.submit({ name: 'c', costMs: 0.4 });
  assert.deepEqual(h.started, ['a', 'b', 'c'], 'c starts (0.8 ms spent before it) and spends the budget');
  assert.equal(h.turns.length, 1, 'the budget is spent: a turn resets it');
  h.pacer.submit({ name: 'd', costMs: 0.6 });
  h.pacer.submit({ name: 'e', costMs: 0.6 });
  h.pacer.submit({ name: 'f', costMs: 0.1 });
  assert.deepEqual(h.started, ['a', 'b', 'c'], 'd, e, f wait for the next turn');
  assert.equal(h.pacer.waitingCount, 3);
  assert.equal(h.turns.length, 1, 'still one turn scheduled');
  h.nextTurn();
  assert.deepEqual(h.started, ['a', 'b', 'c', 'd', 'e'], 'd and e spend the turn; f waits');
  h.nextTurn();
  assert.deepEqual(h.started, ['a', 'b', 'c', 'd', 'e', 'f']);
  assert.equal(h.pacer.waitingCount, 0);
  assert.equal(h.turns.length, 0, 'nothing waits and the budget has room: no turn scheduled');
});

test('local pacer: a job whose client left while it waited does not start and is reported dropped', () => {
  const h = harness(1, 16);
  const x: Item = { name: 'x', costMs: 0.5 };
  const y = { name: 'y', costMs: 0.5 };
  h.pacer.submit({ name: 'a', costMs: 2 });
  h.pacer.submit(x);
  h.pacer.submit(y);
  x.gone = true;
  h.nextTurn();
  assert.deepEqual(h.started, ['a', 'y']);
  assert.deepEqual(h.dropped, ['x']);
  assert.equal(h.pacer.waitingCount, 0);
});

test('local pacer: waiting jobs are bounded; one more than the bound is a broken invariant, not a silent queue', () => {
  const h = harness(1, 2);
  h.pacer.submit({ name: 'a', costMs: 5 });
  h.pacer.submit({ name: 'b', costMs: 1 });
  h.pacer.submit({ name: 'c', costMs: 1 });
  assert.equal(h.pacer.waitingCount, 2, 'at the bound');
  assert.throws(() => h.pacer.submit({ name: 'd', costMs: 1 }), /more than 2 jobs waiting/);
  h.nextTurn();
  assert.deepEqual(h.started, ['a', 'b']);
  h.nextTurn();
  assert.deepEqual(h.started, ['a', 'b', 'c']);
});

test('local pacer: at the bound, jobs that ended while waiting (timed out by the core) free their places first', () => {
  const h = harness(1, 2);
  const b: Item = { name: 'b', costMs: 1 };
  h.pacer.submit({ name: 'a', costMs: 5 });
  h.pacer.submit(b);
  h.pacer.submit({ name: 'c', costMs: 1 });
  b.gone = true;
  h.pacer.submit({ name: 'd', costMs: 1 });
  assert.deepEqual(h.dropped, ['b']);
  assert.equal(h.pacer.waitingCount, 2);
  h.nextTurn();
  h.nextTurn();
  assert.deepEqual(h.started, ['a', 'c', 'd']);
});

test('local pacer: a job handed over while another is being dropped (its freed slot) is kept, and nothing is lost or doubled', () => {
  // A job whose client left still holds its slot until it is dropped; then the core hands the
  // master its next queued job at once. A job the core timed out had its slot freed already.
  const h = harness(1, 3, (i, pacer) => {
    if (i.name === 'c') pacer.submit({ name: 'after-c', costMs: 0.1 });
  });
  const b: Item = { name: 'b', costMs: 0.1 };
  const c: Item = { name: 'c', costMs: 0.1 };
  h.pacer.submit({ name: 'a', costMs: 5 });
  h.pacer.submit(b);
  h.pacer.submit(c);
  h.pacer.submit({ name: 'd', costMs: 0.1 });
  b.gone = true; // timed out by the core: its slot went to e
  c.gone = true; // its client left
  h.pacer.submit({ name: 'e', costMs: 0.1 });
  assert.deepEqual(h.dropped, ['b', 'c']);
  assert.equal(h.pacer.waitingCount, 3);
  while (h.turns.length > 0) h.nextTurn();
  assert.deepEqual(h.started, ['a', 'd', 'after-c', 'e']);
  assert.equal(h.pacer.waitingCount, 0);
});
