import assert from 'node:assert/strict';
import { test } from 'node:test';
import { vipStep } from '../../shared/vip-plan.ts';

test('the address: claimed at once on a takeover, after Tmax by a board that became master as it booted; released on a step-down; announced again on a stale master', () => {
  assert.deepEqual(vipStep({ kind: 'role', role: 'master', term: 4, master: 1, previous: 'node' }, 300), { do: 'claim', afterMs: 0 });
  assert.deepEqual(vipStep({ kind: 'role', role: 'master', term: 3, master: 0, previous: 'joining' }, 300), { do: 'claim', afterMs: 300 });
  assert.deepEqual(vipStep({ kind: 'role', role: 'master', term: 5, master: 0, previous: 'master' }, 300), { do: 'claim', afterMs: 0 });
  assert.deepEqual(vipStep({ kind: 'role', role: 'node', term: 4, master: 1, previous: 'master' }, 300), { do: 'release' });
  assert.deepEqual(vipStep({ kind: 'stale-master', board: 2, term: 1 }, 300), { do: 'announce' });
  assert.equal(vipStep({ kind: 'role', role: 'node', term: 4, master: 1, previous: 'joining' }, 300), undefined);
  assert.equal(vipStep({ kind: 'runstate', board: 1, runstate: -1 }, 300), undefined);
});
