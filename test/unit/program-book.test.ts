import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PROGRAMS_PER_BOARD_MAX, ProgramBook } from '../../shared/program-book.ts';

const h = 'a'.repeat(16);

test('the program book: parts of one generation add up, a new generation replaces, malformed parts change nothing', () => {
  const b = new ProgramBook(3);
  assert.equal(b.boardsWith('read.sh'), undefined);
  assert.ok(b.apply(1, { gen: 7, list: [['read.sh', h]] }));
  assert.ok(b.apply(1, { gen: 7, list: [['open.sh', h]] }));
  assert.ok(b.apply(2, { gen: 1, list: [['read.sh', h]] }));
  assert.deepEqual(b.boardsWith('read.sh'), [1, 2]);
  assert.deepEqual(b.boardsWith('open.sh'), [1]);
  assert.ok(b.apply(1, { gen: 8, list: [['open.sh', h]] }), 'board 1 rebooted');
  assert.deepEqual(b.boardsWith('read.sh'), [2]);
  for (const bad of [{ gen: -1, list: [] }, { gen: 9, list: [['../x', h]] }, { gen: 9, list: [['x', 'short']] }, { gen: 9, list: 'x' }, { list: [] }]) assert.equal(b.apply(1, bad), false);
  assert.equal(b.apply(5, { gen: 1, list: [] }), false, 'no such board');
  assert.deepEqual([...b.of(1).keys()], ['open.sh'], 'malformed parts changed nothing');
});

test('at most PROGRAMS_PER_BOARD_MAX names a board', () => {
  const b = new ProgramBook(1);
  const list = Array.from({ length: PROGRAMS_PER_BOARD_MAX + 10 }, (_, i) => [`p${i}`, h]);
  assert.ok(b.apply(0, { gen: 1, list }));
  assert.equal(b.of(0).size, PROGRAMS_PER_BOARD_MAX);
});
