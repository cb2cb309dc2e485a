import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nonCanonical } from '../../shared/request-target.ts';

test('canonical paths pass; every other spelling of one is refused', () => {
  for (const ok of ['/', '/api/devices', '/cgi-bin/devices/pump1/start', '/app.js?tree=2', '/echo?ms=5&x=../y', '/a.b/c..d/.e']) assert.equal(nonCanonical(ok), undefined, ok);
  for (const bad of [
    '/x/../api/devices',
    '/./api/devices',
    '/%2E%2e/cgi-bin/devices/pump1',
    '/api%2fdevices',
    '/api\\devices',
    '//api/devices',
    '/api/devices/..',
    '/api/.',
    'http://x/api/devices',
    '*',
    '/%5capi',
  ]) {
    assert.ok(nonCanonical(bad), bad);
  }
});
