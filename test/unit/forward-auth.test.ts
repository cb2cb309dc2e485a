import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DispatchReplayGuard, signDispatch, verifyDispatch } from '../../shared/forward-auth.ts';

const key = Buffer.alloc(32, 1);
const d = { master: 0, term: 3, id: 17, cls: 'control', tree: 3 };
const body = Buffer.from('{"value":5}');

test('a signed dispatch verifies; any change to method, url, identity or body does not', () => {
  const h = signDispatch(key, 'POST', '/cgi-bin/x', d, body);
  assert.deepEqual(verifyDispatch(key, h, 'POST', '/cgi-bin/x', body), d);
  assert.equal(verifyDispatch(key, h, 'GET', '/cgi-bin/x', body), undefined);
  assert.equal(verifyDispatch(key, h, 'POST', '/cgi-bin/y', body), undefined);
  assert.equal(verifyDispatch(key, h, 'POST', '/cgi-bin/x', Buffer.from('{"value":6}')), undefined);
  assert.equal(verifyDispatch(key, h.replace('0.3.17', '0.3.18'), 'POST', '/cgi-bin/x', body), undefined);
  assert.equal(verifyDispatch(key, h.replace('.control.3.', '.control.1.'), 'POST', '/cgi-bin/x', body), undefined, 'the tree is signed too');
  assert.equal(verifyDispatch(Buffer.alloc(32, 2), h, 'POST', '/cgi-bin/x', body), undefined);
  assert.equal(verifyDispatch(key, 'garbage', 'POST', '/cgi-bin/x', body), undefined);
});

test('dispatch replay guard: each id once per master term, bounded window', () => {
  const g = new DispatchReplayGuard(4);
  assert.equal(g.accept(d), true);
  assert.equal(g.accept(d), false);
  assert.equal(g.accept({ ...d, term: 4 }), true, 'another term');
  for (let id = 18; id < 40; id++) assert.equal(g.accept({ ...d, id }), true);
  assert.equal(g.accept({ ...d, id: 30 }), false);
  assert.equal(g.accept({ ...d, id: 20 }), false, 'below the window');
});
