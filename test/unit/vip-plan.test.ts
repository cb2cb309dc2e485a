import assert from 'node:assert/strict';
import { test } from 'node:test';
import { vipStep } from '../../shared/vip-plan.ts';

test('the address: claimed at once by a new master (it became master only after Tmax of silence, or by a handover); released on a step-down; announced again on a stale master', () => {
  assert.equal(vipStep({ kind: 'role', role: 'master', term: 4, master: 1, previous: 'node' }), 'claim');
  assert.equal(vipStep({ kind: 'role', role: 'master', term: 3, master: 0, previous: 'joining' }), 'claim');
  assert.equal(vipStep({ kind: 'role', role: 'master', term: 5, master: 0, previous: 'master' }), 'claim');
  assert.equal(vipStep({ kind: 'role', role: 'node', term: 4, master: 1, previous: 'master' }), 'release');
  assert.equal(vipStep({ kind: 'stale-master', board: 2, term: 1 }), 'announce');
  assert.equal(vipStep({ kind: 'role', role: 'node', term: 4, master: 1, previous: 'joining' }), undefined);
  assert.equal(vipStep({ kind: 'runstate', board: 1, runstate: -1 }), undefined);
});
