import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ERRORS, EwsError, errorResponse } from '../../shared/errors.ts';

test('errors become one JSON shape ({error: {code, message}}); 503s carry Retry-After; unknown errors are 500 without internals', () => {
  const r = errorResponse(new EwsError('QUEUE_FULL'));
  assert.equal(r.status, 503);
  assert.equal(r.headers['retry-after'], '1');
  assert.deepEqual(JSON.parse(r.body), { error: { code: 'QUEUE_FULL', message: ERRORS.QUEUE_FULL.message } });
  const internal = errorResponse(new Error('secret path /etc/x'));
  assert.equal(internal.status, 500);
  assert.ok(!internal.body.includes('secret'));
});
