import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DispatchReplayGuard } from '../../shared/dispatch-replay-guard.ts';

const d = { master: 0, term: 3, id: 17 };

test('dispatch replay guard: each id once per master term, bounded window', () => {
  const g = new DispatchReplayGuard(4);
  assert.equal(g.accept(d), true);
  assert.equal(g.accept(d), false);
  assert.equal(g.accept({ ...d, term: 4 }), true, 'another term');
  for (let id = 18; id < 40; id++) assert.equal(g.accept({ ...d, id }), true);
  assert.equal(g.accept({ ...d, id: 30 }), false);
  assert.equal(g.accept({ ...d, id: 20 }), false, 'below the window');
});
