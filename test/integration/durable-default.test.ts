// Durable by default: boards started from a config that names no stateDir keep their state where
// systemd's StateDirectory= puts it ($STATE_DIRECTORY), so a logout holds across a restart of
// every board; `"stateDir": false` is memory only, shown per board and raised as an alarm.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { hashPassword } from '../../node/auth/password.ts';
import { converged, httpGet, makeCluster, type TestCluster, waitFor } from './harness.ts';

const OP = { name: 'olga', password: 'operator-pass-1' };

async function loginCluster(stateDir: false | undefined): Promise<TestCluster> {
  const users = [{ name: OP.name, role: 'operator', passwordHash: await hashPassword(OP.password) }];
  return makeCluster(3, (cfg) => {
    cfg.auth = { users };
    if (stateDir === undefined) delete cfg.stateDir;
    else cfg.stateDir = stateDir;
  });
}

describe('durable by default', () => {
  const clusters: TestCluster[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'ews-state-directory-'));
  after(async () => {
    for (const c of clusters) await c.stop();
    delete process.env.STATE_DIRECTORY;
    rmSync(dir, { recursive: true, force: true });
  });

  const login = async (c: TestCluster) => {
    const r = await httpGet(`${c.boards[0]!.url}/api/login`, { method: 'POST', body: JSON.stringify(OP), headers: { 'content-type': 'application/json' } });
    assert.equal(r.status, 200, r.text);
    return (JSON.parse(r.text) as { token: string }).token;
  };
  const restartAll = async (c: TestCluster) => {
    await Promise.all(c.boards.map((b) => c.kill(b.id, 'SIGKILL')));
    c.start('b1');
    await waitFor('b1 up', async () => (await httpGet(`${c.boards[0]!.url}/healthz`)).status === 200, 30_000, 50);
    for (const b of c.boards.slice(1)) c.start(b.id);
    await converged(c);
  };
  type View = { boards: Array<{ id: string; durable: boolean | null }> };

  test('a config without stateDir: the state goes to $STATE_DIRECTORY, every board says it is durable, and a logout holds across a restart of every board', async () => {
    // The boards inherit it, as systemd's StateDirectory=ews gives it to the unit.
    process.env.STATE_DIRECTORY = dir;
    const c = await loginCluster(undefined);
    clusters.push(c);
    c.headers = { authorization: `Bearer ${await login(c)}` };
    await converged(c);
    await waitFor('every board heard durable', async () => {
      const v = JSON.parse((await httpGet(`${c.boards[1]!.url}/api/cluster`, { headers: c.headers })).text) as View;
      return v.boards.every((b) => b.durable === true);
    });
    const gone = await login(c);
    assert.equal((await httpGet(`${c.boards[2]!.url}/api/logout`, { method: 'POST', headers: { authorization: `Bearer ${gone}` } })).status, 200);
    const sid = (JSON.parse(Buffer.from(gone.split('.')[1]!, 'base64url').toString()) as { sid: string }).sid;
    await waitFor('the logout on every disk', async () => c.boards.every((b) => existsSync(join(dir, `${b.id}.revoked.log`)) && readFileSync(join(dir, `${b.id}.revoked.log`), 'utf8').includes(sid)));
    await restartAll(c);
    for (const b of c.boards) assert.equal((await httpGet(`${b.url}/api/cluster`, { headers: { authorization: `Bearer ${gone}` } })).status, 401, `${b.id}: still logged out`);
    assert.equal((await httpGet(`${c.boards[0]!.url}/api/cluster`, { headers: c.headers })).status, 200, 'the other session works');
    assert.ok(existsSync(join(dir, 'b1.epoch')) && existsSync(join(dir, 'b1.audit.log')));
    await c.stop();
  });

  test('"stateDir": false is memory only, said per board and raised as an alarm; a restart of every board forgets the logout', async () => {
    delete process.env.STATE_DIRECTORY;
    const c = await loginCluster(false);
    clusters.push(c);
    c.headers = { authorization: `Bearer ${await login(c)}` };
    await converged(c);
    await waitFor('every board heard memory-only, and the alarm raised', async () => {
      const v = JSON.parse((await httpGet(`${c.boards[0]!.url}/api/cluster`, { headers: c.headers })).text) as View;
      const alarms = JSON.parse((await httpGet(`${c.boards[0]!.url}/api/alarms`, { headers: c.headers })).text) as Array<{ id: string; active: boolean; severity: string }>;
      return v.boards.every((b) => b.durable === false) && c.boards.every((b) => alarms.some((a) => a.id === `state-volatile-${b.id}` && a.active && a.severity === 'warning'));
    });
    const gone = await login(c);
    assert.equal((await httpGet(`${c.boards[0]!.url}/api/logout`, { method: 'POST', headers: { authorization: `Bearer ${gone}` } })).status, 200);
    assert.equal((await httpGet(`${c.boards[0]!.url}/api/cluster`, { headers: { authorization: `Bearer ${gone}` } })).status, 401);
    await restartAll(c);
    assert.equal((await httpGet(`${c.boards[0]!.url}/api/cluster`, { headers: { authorization: `Bearer ${gone}` } })).status, 200, 'what memory-only costs: the logout is forgotten');
    assert.ok(c.logs.get('b1')!.includes('state is kept in memory only'), 'the board said so in its log');
  });
});
