import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReserveQueue } from '../../master/qos/reserve-queue.ts';

const job = (cls: number, name: string) => ({ cls, name, reservedAt: -1 });

test('reserve queue: bounded in total, oldest first per class, stops at the first the queue refuses, stale refused', () => {
  const r = new ReserveQueue<ReturnType<typeof job>>(2, 3);
  assert.equal(r.add(job(0, 'a'), 1), true);
  assert.equal(r.add(job(1, 'x'), 1), true);
  assert.equal(r.add(job(0, 'b'), 2), true);
  assert.equal(r.add(job(0, 'c'), 2), false, 'at the bound of 3');
  assert.deepEqual(r.lengths(), [2, 1]);
  const went: string[] = [];
  assert.equal(
    r.release(0, 5, (j) => (went.push(j.name), j.name !== 'b')),
    1,
    'b refused by the class queue: it stays',
  );
  assert.deepEqual(went, ['a', 'b']);
  assert.equal(r.size, 2);
  assert.deepEqual(
    r.stale(0, 4, 3).map((j) => j.name),
    [],
    'b waited 2 periods',
  );
  assert.deepEqual(
    r.stale(0, 5, 3).map((j) => j.name),
    ['b'],
  );
  assert.equal(r.remove(job(1, 'y')), false);
  assert.deepEqual(
    r.drain().map((j) => j.name),
    ['x'],
  );
  assert.equal(r.size, 0);
});
