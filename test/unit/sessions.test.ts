// Sessions: logouts that last (bounded, expiring, on disk) and password checks with a bounded queue.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { AuthGuard } from '../../node/auth/guard.ts';
import { hashPassword, PasswordVerifier } from '../../node/auth/password.ts';
import { RevokedSessions, revokedFile } from '../../node/auth/revoked-sessions.ts';
import { SessionSigner } from '../../node/auth/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { EwsError } from '../../shared/errors.ts';

const T0 = 1_800_000_000_000;

test('a revoked session stays revoked across a restart (the file in stateDir), and is forgotten when it expires', () => {
  const file = revokedFile(mkdtempSync(join(tmpdir(), 'ews-revoked-')), 'b1');
  const a = new RevokedSessions(16, file, T0);
  assert.equal(
    a.add(
      [
        ['s1', T0 / 1000 + 60],
        ['s2', T0 / 1000 + 3600],
      ],
      T0,
    ),
    true,
  );
  assert.equal(a.add([['s1', T0 / 1000 + 60]], T0), false, 'nothing new');
  const b = new RevokedSessions(16, file, T0 + 1000);
  assert.ok(b.has('s1') && b.has('s2'), 'loaded after a restart');
  // 61 s later s1 would have expired anyway: it is not loaded again.
  const c = new RevokedSessions(16, file, T0 + 61_000);
  assert.equal(c.has('s1'), false);
  assert.equal(c.has('s2'), true);
  assert.deepEqual(c.list(T0 + 61_000), [['s2', T0 / 1000 + 3600]]);
});

test('the set is bounded: at the bound the entry that expires soonest goes; junk entries are ignored', () => {
  const r = new RevokedSessions(16, undefined, T0);
  for (let i = 0; i < 16; i++) r.add([[`s${i}`, T0 / 1000 + 100 + i]], T0);
  assert.equal(r.size, 16);
  r.add([['late', T0 / 1000 + 10_000]], T0);
  assert.equal(r.size, 16);
  assert.equal(r.has('s0'), false, 'the soonest to expire was dropped');
  assert.equal(r.has('late'), true);
  assert.equal(r.add([['x'.repeat(65), T0 / 1000 + 60], ['old', T0 / 1000 - 1], 'junk', [1, 2], ['ok'], null], T0), false);
  assert.equal(r.size, 16);
});

test('a damaged file starts an empty set instead of failing the boot', () => {
  const file = revokedFile(mkdtempSync(join(tmpdir(), 'ews-revoked-')), 'b1');
  writeFileSync(file, '{not json');
  const r = new RevokedSessions(16, file, T0);
  assert.equal(r.size, 0);
  r.add([['s', T0 / 1000 + 60]], T0);
  assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), [['s', T0 / 1000 + 60]]);
});

test('a signed session is refused once revoked', () => {
  const revoked = new RevokedSessions(16, undefined, T0);
  const signer = new SessionSigner(Buffer.alloc(32, 9), revoked);
  const { token, session } = signer.issue('olga', 'operator', 600, T0);
  assert.equal(signer.verify(token, T0)?.user, 'olga');
  revoked.add([[session.sid, session.exp]], T0);
  assert.equal(signer.verify(token, T0), undefined);
});

test('password checks run one at a time with at most loginsWaitingMax waiting; beyond that QUEUE_FULL at once', async () => {
  const hash = await hashPassword('right-password');
  const v = new PasswordVerifier(2);
  // One runs, two wait: the fourth is refused without touching scrypt.
  const running = [v.verify('wrong', hash), v.verify('right-password', hash), v.verify('nope', hash)];
  await assert.rejects(v.verify('x', hash), (e: unknown) => e instanceof EwsError && e.code === 'QUEUE_FULL');
  assert.deepEqual(await Promise.all(running), [false, true, false]);
  assert.equal(await v.verify('right-password', hash), true, 'room again once they finished');
  assert.equal(await v.verify('right-password', `scrypt$1024$8$1$c2FsdHNhbHRzYWx0c2FsdA$${'a'.repeat(43)}`), false, 'a hash outside the bounds never verifies');
});

test('a session counts for its user as the config has them now: removed user refused, changed role applied; internal services pass', () => {
  const users = (list: Array<[string, 'viewer' | 'operator']>) =>
    parseConfig({
      cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' },
      boards: [{ id: 'b1', address: '127.0.0.1' }],
      auth: { users: list.map(([name, role]) => ({ name, role, passwordHash: `scrypt$16384$8$1$c2FsdHNhbHRzYWx0c2FsdA$${'a'.repeat(43)}` })) },
    });
  const before = users([
    ['olga', 'operator'],
    ['victor', 'operator'],
  ]);
  const after = users([['olga', 'viewer']]);
  const revoked = new RevokedSessions(16, undefined, T0);
  const signer = new SessionSigner(before.cluster.key, revoked);
  const bearer = (t: string) => ({ headers: { authorization: `Bearer ${t}` } }) as unknown as IncomingMessage;
  const olga = signer.issue('olga', 'operator', 600, T0).token;
  const victor = signer.issue('victor', 'operator', 600, T0).token;
  const svc = signer.issue('schedule', 'operator', 600, T0, true).token;
  const g0 = new AuthGuard(before, signer),
    g1 = new AuthGuard(after, new SessionSigner(after.cluster.key, revoked));
  assert.equal(g0.principal(bearer(victor), T0)?.role, 'operator');
  assert.equal(g1.principal(bearer(victor), T0), undefined, 'victor was removed');
  assert.equal(g1.principal(bearer(olga), T0)?.role, 'viewer', 'olga is a viewer now');
  assert.throws(() => g1.check(bearer(olga), 'operator', T0), /viewer/);
  assert.equal(g1.principal(bearer(svc), T0)?.role, 'operator', 'schedules and MQTT are not configured users');
  // A token naming a configured user but not marked as a service cannot pose as one.
  assert.equal(g1.principal(bearer(signer.issue('schedule', 'operator', 600, T0).token), T0), undefined);
});
