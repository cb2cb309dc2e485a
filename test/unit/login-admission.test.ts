import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LoginAdmission } from '../../shared/login-admission.ts';

test('one check per source; strangers get part of the room, and a source that logged in before always finds the rest', () => {
  const a = new LoginAdmission(5);
  assert.equal(a.strangersMax, 3);
  assert.equal(a.admit('op-laptop'), 'ok');
  assert.equal(a.admit('op-laptop'), 'source-busy');
  a.done('op-laptop', true);
  // A flood from rotating addresses takes the strangers' share and no more.
  const flood = Array.from({ length: 50 }, (_, i) => `10.9.0.${i}`).map((s) => a.admit(s));
  assert.deepEqual([flood.filter((x) => x === 'ok').length, flood.filter((x) => x === 'full').length], [3, 47]);
  assert.equal(a.admit('op-laptop'), 'ok', 'the operator who logged in before gets in');
  assert.equal(a.admit('new-tablet'), 'full', 'a stranger waits for the flood to pass');
  a.done('10.9.0.0', false);
  assert.equal(a.admit('new-tablet'), 'ok');
  a.done('op-laptop', true);
  a.done('new-tablet', false);
  a.done('new-tablet', false);
  assert.equal(a.admit('10.9.0.1'), 'source-busy', 'its first check still runs');
});
