// Sessions: logouts that last (bounded, expiring, on disk) and password checks with a bounded queue.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { AuthGuard } from '../../node/auth/guard.ts';
import { hashPassword, PasswordVerifier } from '../../node/auth/password.ts';
import { RevokedSessions, revokedFile } from '../../node/auth/revoked-sessions.ts';
import { SessionSigner } from '../../node/auth/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { EwsError } from '../../shared/errors.ts';

const T0 = 1_800_000_000_000;
const dirs: string[] = [];
const scratch = () => {
  const d = mkdtempSync(join(tmpdir(), 'ews-revoked-'));
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('a revoked session stays revoked across a restart (appended to the journal in stateDir), and is forgotten when it expires', async () => {
  const file = revokedFile(scratch(), 'b1');
  const a = new RevokedSessions(16, file, T0);
  assert.equal(a.revoke('s1', T0 / 1000 + 60, 'olga', T0).length, 1);
  assert.equal(a.add([['s2', T0 / 1000 + 3600, 'olga']], T0).length, 1);
  assert.deepEqual(a.add([['s1', T0 / 1000 + 60]], T0), [], 'nothing new');
  await a.drained();
  assert.equal(readFileSync(file, 'utf8').trim().split('\n').length, 2, 'one line appended per logout, no rewrite');
  const b = new RevokedSessions(16, file, T0 + 1000);
  assert.ok(b.has('s1') && b.has('s2'), 'loaded after a restart');
  // 61 s later s1 would have expired anyway: it is not loaded again.
  const c = new RevokedSessions(16, file, T0 + 61_000);
  assert.equal(c.has('s1'), false);
  assert.equal(c.has('s2'), true);
  assert.deepEqual(c.list(T0 + 61_000), [['s2', T0 / 1000 + 3600, 'olga']]);
});

test("never forgotten before expiry: at the bound a logout becomes its user's not-valid-before, and no number of other logouts brings a session back; junk is ignored", () => {
  const r = new RevokedSessions(16, undefined, T0, () => {}, 3600);
  r.revoke('victim', T0 / 1000 + 100, 'olga', T0);
  for (let i = 0; i < 15; i++) r.revoke(`v${i}`, T0 / 1000 + 100 + i, 'victor', T0);
  assert.equal(r.size, 16);
  // A viewer logging out 100 more times: each one is past the bound.
  for (let i = 0; i < 100; i++) r.revoke(`x${i}`, T0 / 1000 + 10_000, 'victor', T0 + 5 + i);
  assert.equal(r.has('victim'), true, "the operator's logout holds");
  assert.equal(r.size, 16, 'nothing evicted');
  assert.equal(r.notBefore('victor'), T0 + 104, 'the viewer is logged out everywhere instead');
  assert.equal(r.notBefore('olga'), 0);
  assert.deepEqual(r.add([['x'.repeat(65), T0 / 1000 + 60], ['old', T0 / 1000 - 1], 'junk', [1, 2], ['ok'], null, ['~', 'u', 'x', 1]], T0), []);
  assert.equal(r.size, 16);
  // A peer's copy of an earlier version (no user) that fits nowhere is dropped and counted.
  const full = new RevokedSessions(16, undefined, T0);
  for (let i = 0; i < 32; i++) full.add([[`p${i}`, T0 / 1000 + 60]], T0);
  assert.deepEqual(full.add([['p-last', T0 / 1000 + 60]], T0), []);
  assert.equal(full.dropped, 1);
});

test('a signed session is dead once its user has a not-valid-before after it was issued; one issued later lives', () => {
  const revoked = new RevokedSessions(16, undefined, T0);
  const signer = new SessionSigner(Buffer.alloc(32, 1), revoked);
  const before = signer.issue('victor', 'viewer', 3600, T0);
  revoked.add([['~', 'victor', T0 + 10, T0 / 1000 + 3600]], T0 + 10);
  const after = signer.issue('victor', 'viewer', 3600, T0 + 20);
  assert.equal(signer.verify(before.token, T0 + 30), undefined);
  assert.equal(signer.verify(after.token, T0 + 30)?.user, 'victor');
});

test('a damaged journal starts an empty set instead of failing the boot', async () => {
  const file = revokedFile(scratch(), 'b1');
  writeFileSync(file, '{not json');
  const r = new RevokedSessions(16, file, T0);
  assert.equal(r.size, 0);
  r.revoke('s', T0 / 1000 + 60, 'olga', T0);
  await r.drained();
  assert.equal(new RevokedSessions(16, file, T0).has('s'), true);
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
