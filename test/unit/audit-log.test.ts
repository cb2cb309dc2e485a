// The audit log keeps what matters: failed logins (anyone can make them) have a share of their
// own and never push out commands, alarms, masters or acknowledgements.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AuditLog, typedName } from '../../node/operator/audit-log.ts';

test('1100 failed logins leave every command, alarm and acknowledgement in place; failed logins keep the newest of their share', () => {
  const log = new AuditLog(1000, 'b1', 1);
  const t0 = 1_000_000;
  log.make('command', { user: 'olga', subject: 'pump1', status: 200, text: 'start → 200' }, t0);
  log.make('alarm', { subject: 'hot', text: 'raised: too hot' }, t0 + 1);
  log.make('alarm-ack', { user: 'olga', subject: 'hot', text: 'acknowledged' }, t0 + 2);
  log.make('master', { subject: 'b1', text: 'b1 became master (term 1)' }, t0 + 3);
  for (let i = 0; i < 1100; i++) log.make('login', { user: typedName(`guess-${i}`), subject: `10.0.${i >> 8}.${i & 255}`, status: 401, text: 'wrong name or password' }, t0 + 10 + i);
  const kept = log.since(0);
  assert.deepEqual(
    kept.filter((e) => e.kind !== 'login').map((e) => e.kind),
    ['command', 'alarm', 'alarm-ack', 'master'],
  );
  const failed = kept.filter((e) => e.kind === 'login');
  assert.equal(failed.length, log.failedMax);
  assert.equal(log.failedMax, 100);
  assert.equal(failed.at(-1)!.at, t0 + 10 + 1099, 'the newest kept');
  // The rest of the log still has its full bound.
  for (let i = 0; i < 1000; i++) log.make('command', { user: 'olga', subject: 'pump1', status: 200, text: `c${i}` }, t0 + 5000 + i);
  assert.equal(log.since(0).filter((e) => e.kind !== 'login').length, 1000);
  assert.equal(log.size, 1100);
});

test('a name typed at a failed login is kept as a short hash, the same on every board; fields are cut when made', () => {
  assert.match(typedName('hunter2-my-password'), /^unknown #[0-9a-f]{8}$/);
  assert.equal(typedName('x'), typedName('x'));
  assert.notEqual(typedName('x'), typedName('y'));
  const log = new AuditLog(10, 'b1', 1);
  const e = log.make('login', { user: 'u'.repeat(100), subject: 's'.repeat(100), text: 't'.repeat(500), status: 200 });
  assert.deepEqual([e.user?.length, e.subject?.length, e.text.length], [64, 64, 160]);
});
