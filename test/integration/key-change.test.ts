// Changing the cluster key on running boards, one board at a time (cluster.acceptKeys), as an
// operator would: first every board accepts the new key, then every board signs with it (and
// still accepts the old), then the old one goes. At every step the boards form one cluster, a
// request crosses the dispatch link, no packet is dropped as forged, and a session issued under
// the old key lasts until the old key is no longer accepted.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { hashPassword } from '../../node/auth/password.ts';
import { converged, makeCluster, metric, type TestCluster } from './harness.ts';

let c: TestCluster | undefined;
after(() => c?.stop());

test('a key change one board at a time: one cluster throughout, no forged-packet drops, the old session ends with the old key', async () => {
  const user = { name: 'ada', password: 'admin-pass-1' };
  const users = [{ name: user.name, role: 'admin', passwordHash: await hashPassword(user.password) }];
  c = await makeCluster(2, (cfg) => {
    cfg.auth = { users };
    Object.assign(cfg.cluster as object, { masterWork: 'forward' }); // every request crosses the link
  });
  const cl = c;
  const u = (i: number) => cl.boards[i]!.url;
  const login = await fetch(`${u(0)}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(user) });
  const token = ((await login.json()) as { token: string }).token;
  cl.headers = { authorization: `Bearer ${token}` };
  await converged(cl);
  const OLD = cl.key;
  const NEW = randomBytes(32).toString('hex');
  const base = JSON.parse(readFileSync(cl.file, 'utf8')) as { cluster: Record<string, unknown> };
  const drops = async () => (await metric(u(0), 'ews_udp_dropped_total', { reason: 'auth' })) + (await metric(u(1), 'ews_udp_dropped_total', { reason: 'auth' }));
  const status = async (i: number, t = token) => (await fetch(`${u(i)}/cgi-bin/echo?ms=1`, { headers: { authorization: `Bearer ${t}` } })).status;
  const restartEach = async (cluster: Record<string, unknown>, t = token) => {
    writeFileSync(cl.file, JSON.stringify({ ...base, cluster: { ...base.cluster, ...cluster } }));
    for (const id of ['b2', 'b1']) {
      await cl.kill(id, 'SIGTERM');
      cl.start(id);
      await converged(cl);
      // Across the link both ways: the master forwards, the request enters at either board.
      assert.equal(await status(0, t), 200, `after ${id} restarted`);
      assert.equal(await status(1, t), 200, `after ${id} restarted`);
    }
  };
  const dropsBefore = await drops();
  await restartEach({ key: OLD, acceptKeys: [NEW] }); // 1: everyone accepts the new key
  await restartEach({ key: NEW, acceptKeys: [OLD] }); // 2: everyone signs with it, still accepting the old
  assert.equal(await drops(), dropsBefore, 'no packet dropped as forged while the key changed');
  assert.equal(await status(0), 200, 'the session issued under the old key still good');
  // A session issued now (signed with the new key) outlives the old key.
  const fresh = await fetch(`${u(1)}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(user) });
  const newToken = ((await fresh.json()) as { token: string }).token;
  cl.headers = { authorization: `Bearer ${newToken}` };
  await restartEach({ key: NEW, acceptKeys: undefined }, newToken); // 3: the old key goes
  assert.equal(await status(0), 401, 'the session issued under the old key ends with it');
  assert.equal(await status(1), 401);
  assert.equal(await drops(), dropsBefore);
});
