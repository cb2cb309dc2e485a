import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IdTable } from '../../node/http/id-table.ts';
import { rng } from '../sim/simulator.ts';

test('id table: the same answers as a Map over random adds and deletes (runs that wrap the table, ids near 2^32, growth)', () => {
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    const r = rng(seed);
    const t = new IdTable<string>(8);
    const m = new Map<number, string>();
    // Ids as a link sees them: mostly rising, answered out of order, some sharing low bits, some near the wrap.
    let next = seed % 2 === 0 ? 0xffffffff - 300 : 1;
    const live: number[] = [];
    for (let step = 0; step < 4000; step++) {
      const roll = r();
      if (roll < 0.5 || live.length === 0) {
        const id = roll < 0.05 ? (next + 64 * Math.floor(r() * 8)) % 0x100000000 : next;
        next = next >= 0xffffffff ? 0 : next + 1;
        t.set(id, `v${step}`);
        if (!m.has(id)) live.push(id);
        m.set(id, `v${step}`);
      } else if (roll < 0.9) {
        const k = Math.floor(r() * live.length);
        const id = live[k]!;
        live.splice(k, 1);
        assert.equal(t.delete(id), m.delete(id));
      } else {
        const id = Math.floor(r() * 0x100000000);
        const had = m.has(id);
        assert.equal(t.has(id), had);
        assert.equal(t.delete(id), m.delete(id));
        if (had) live.splice(live.indexOf(id), 1);
      }
      assert.equal(t.size, m.size);
      if (step % 97 === 0) for (const [id, v] of m) assert.equal(t.get(id), v, `seed ${seed} step ${step}: id ${id}`);
    }
    assert.deepEqual(t.all().sort(), [...m.values()].sort());
  }
});

test('id table: at the bound of its ids, a missing id, and clear', () => {
  const t = new IdTable<number | undefined>();
  t.set(0, 1);
  t.set(0xffffffff, 2);
  t.set(7, undefined);
  assert.equal(t.get(0xffffffff), 2);
  assert.equal(t.has(7), true, 'a held id whose value is undefined is still held');
  assert.equal(t.delete(8), false);
  assert.throws(() => t.set(0x100000000, 3), RangeError);
  assert.throws(() => t.set(-1, 3), RangeError);
  assert.throws(() => t.set(1.5, 3), RangeError);
  t.clear();
  assert.equal(t.size, 0);
  assert.equal(t.has(0), false);
  assert.deepEqual(t.all(), []);
});
