// Draining a board for maintenance (admin): it gets no new work, its devices go on through their
// other boards or answer 503 MAINTENANCE, the flag holds across a failover, and undraining puts
// it back. Three real boards, simulated devices on their ports, a real login.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { demoDevices } from '../../dev/demo.ts';
import { hashPassword } from '../../node/auth/password.ts';
import { converged, getJson, makeCluster, ROOT, type TestCluster, waitFor } from './harness.ts';

const ADMIN = { name: 'ada', password: 'admin-pass-1' };
const OPERATOR = { name: 'otto', password: 'operator-pass-1' };

interface Answer {
  status: number;
  board: string | null;
  json: Record<string, any>; // any: JSON answers read freely in assertions
}

describe('drain', () => {
  let c: TestCluster;
  const tokens: Record<string, string> = {};
  const u = (i: number) => c.boards[i]!.url;
  const call = async (url: string, who: string, method = 'GET'): Promise<Answer> => {
    const r = await fetch(url, { method, headers: { authorization: `Bearer ${tokens[who]}` }, signal: AbortSignal.timeout(15_000) });
    return { status: r.status, board: r.headers.get('x-ews-board'), json: (await r.json()) as Record<string, any> };
  };
  const drained = async (i: number) => Object.fromEntries((await getJson<{ boards: Array<{ id: string; drained: boolean }> }>(`${u(i)}/api/cluster`, c.headers)).boards.map((b) => [b.id, b.drained]));

  before(async () => {
    const users = [
      { name: ADMIN.name, role: 'admin', passwordHash: await hashPassword(ADMIN.password) },
      { name: OPERATOR.name, role: 'operator', passwordHash: await hashPassword(OPERATOR.password) },
    ];
    c = await makeCluster(
      3,
      (cfg) => {
        cfg.devices = demoDevices(['b1', 'b2', 'b3']); // pump1 on b2 only, valve3 on b3, room on b1 and b2
        cfg.auth = { users };
        Object.assign(cfg.cluster as object, { masterWork: 'share' });
      },
      { args: ['--simulate-devices'] },
    );
    for (const who of [ADMIN, OPERATOR]) {
      const r = await fetch(`${u(0)}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(who) });
      tokens[who.name] = ((await r.json()) as { token: string }).token;
    }
    c.headers = { authorization: `Bearer ${tokens[ADMIN.name]}` };
    await converged(c);
    await waitFor('devices online', async () => (await getJson<Array<{ online: boolean }>>(`${u(0)}/api/devices`, c.headers)).every((d) => d.online));
  });
  after(() => c.stop());

  test('only an admin drains, a board the config names', async () => {
    const op = await call(`${u(0)}/api/boards/b2/drain`, OPERATOR.name, 'POST');
    assert.equal(op.status, 403, JSON.stringify(op.json));
    const none = await call(`${u(0)}/api/boards/b9/drain`, ADMIN.name, 'POST');
    assert.equal(none.status, 404);
    assert.equal(none.json.error.code, 'NOT_FOUND');
    assert.equal((await drained(0)).b2, false);
    // The config as a board runs it: an admin's, without its secrets.
    assert.equal((await call(`${u(1)}/api/config`, OPERATOR.name)).status, 403);
    const cfg = await call(`${u(1)}/api/config`, ADMIN.name);
    assert.equal(cfg.status, 200);
    assert.deepEqual([cfg.json.board, cfg.json.configVersion, typeof cfg.json.configHash], ['b2', 0, 'string']);
    assert.equal(cfg.json.config.cluster.key, undefined, 'the key is left out');
    assert.ok(
      cfg.json.config.auth.users.every((x: Record<string, unknown>) => x.passwordHash === undefined),
      'password hashes are left out',
    );
    assert.deepEqual(
      cfg.json.config.devices.map((d: { id: string }) => d.id),
      ['pump1', 'valve3', 'room'],
    );
  });

  test('a drained board gets no new work; a device with another board goes on there; one with none answers MAINTENANCE, and the drain says so', async () => {
    // Asked at a node: the master answers.
    const d = await call(`${u(2)}/api/boards/b2/drain`, ADMIN.name, 'POST');
    assert.equal(d.status, 200, JSON.stringify(d.json));
    assert.deepEqual([d.json.board, d.json.drained, d.json.inFlight, d.json.maintenance], ['b2', true, 0, ['pump1']]);
    assert.match(d.json.message, /no other board reaches pump1/);
    for (const i of [0, 1, 2]) await waitFor(`b${i + 1} sees b2 drained`, async () => (await drained(i)).b2 === true);
    const echoes = await Promise.all(Array.from({ length: 12 }, () => call(`${u(0)}/cgi-bin/echo?ms=50`, OPERATOR.name)));
    assert.ok(echoes.every((r) => r.status === 200));
    assert.deepEqual([...new Set(echoes.map((r) => r.board))].sort(), ['b1', 'b3'], 'none on b2');
    for (let i = 0; i < 4; i++) {
      const room = await call(`${u(1)}/cgi-bin/devices/room`, OPERATOR.name);
      assert.deepEqual([room.status, room.board], [200, 'b1'], 'the room sensor is read through b1');
    }
    const pump = await call(`${u(0)}/cgi-bin/devices/pump1/start`, OPERATOR.name, 'POST');
    assert.equal(pump.status, 503);
    assert.equal(pump.json.error.code, 'MAINTENANCE');
    assert.match(pump.json.error.message, /b2/);
    const devices = await getJson<Array<{ id: string; maintenance: boolean }>>(`${u(0)}/api/devices`, c.headers);
    assert.deepEqual(
      devices.map((x) => [x.id, x.maintenance]),
      [
        ['pump1', true],
        ['valve3', false],
        ['room', false],
      ],
    );
    const log = await getJson<Array<{ user: string; subject: string; text: string }>>(`${u(0)}/api/log`, c.headers);
    assert.ok(
      log.some((e) => e.user === ADMIN.name && e.subject === 'b2' && e.text.startsWith('drained')),
      'the drain is in the audit log',
    );
  });

  test('the flag holds across a failover; undrained, the board takes work again', async () => {
    await c.kill('b1');
    const v = await waitFor('a new master', async () => {
      const x = await getJson<{ master: string | null; boards: Array<{ id: string; drained: boolean }> }>(`${u(2)}/api/cluster`, c.headers);
      return x.master !== null && x.master !== 'b1' && x;
    });
    assert.equal(v.boards.find((b) => b.id === 'b2')!.drained, true, `b2 still drained under ${v.master}`);
    const master = c.boards.findIndex((b) => b.id === v.master);
    const room = await call(`${u(2)}/cgi-bin/devices/room`, OPERATOR.name);
    assert.deepEqual([room.status, room.json.error?.code], [503, 'MAINTENANCE'], 'b1 down and b2 drained: nobody reads the room sensor');
    const back = await call(`${u(master)}/api/boards/b2/undrain`, ADMIN.name, 'POST');
    assert.deepEqual([back.status, back.json.drained], [200, false]);
    const pump = await waitFor('pump1 served again', async () => {
      const r = await call(`${u(2)}/cgi-bin/devices/pump1`, OPERATOR.name);
      return r.status === 200 && r;
    });
    assert.equal(pump.board, 'b2');
  });
});

describe('planned handover', () => {
  let c: TestCluster;
  let token = '';
  const u = (i: number) => c.boards[i]!.url;
  before(async () => {
    const users = [{ name: ADMIN.name, role: 'admin', passwordHash: await hashPassword(ADMIN.password) }];
    c = await makeCluster(3, (cfg) => {
      cfg.auth = { users };
    });
    const r = await fetch(`${u(0)}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) });
    token = ((await r.json()) as { token: string }).token;
    c.headers = { authorization: `Bearer ${token}` };
    await converged(c, undefined, undefined, (v) => v.master === 'b1');
  });
  after(() => c.stop());

  test('the master hands over at once under load: no request fails, the old master follows, a drained or unknown board is refused', async () => {
    const post = (path: string) => fetch(`${u(0)}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) });
    assert.equal((await post('/api/cluster/handover?to=b9')).status, 404);
    const self = await post('/api/cluster/handover?to=b1');
    assert.equal(self.status, 409);
    assert.equal(((await self.json()) as { error: { code: string } }).error.code, 'NO_SUCCESSOR');
    // Load through b1 (the old master: it relays once it is a node) while the master changes.
    let stop = false;
    const statuses: number[] = [];
    const refusals: string[] = [];
    const load = (async () => {
      let n = 0;
      while (!stop) {
        const batch = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            fetch(`${u(0)}/cgi-bin/echo?ms=20&n=${n++}-${i}`, { headers: { authorization: `Bearer ${token}`, 'idempotency-key': `k${n}-${i}` }, signal: AbortSignal.timeout(10_000) }).then(
              async (r) => {
                if (r.status !== 200) refusals.push(`${r.status} ${r.headers.get('x-ews-board')} ${await r.text()}`);
                return r.status;
              },
              () => 0,
            ),
          ),
        );
        statuses.push(...batch);
      }
    })();
    await waitFor('load running', async () => statuses.length >= 40);
    const r = await post('/api/cluster/handover');
    const answer = (await r.json()) as { from: string; to: string; ms: number; term: number };
    assert.equal(r.status, 200, JSON.stringify(answer));
    assert.deepEqual([answer.from, answer.to], ['b1', 'b2'], 'the next board round the ring');
    const after = statuses.length;
    await waitFor('load after the handover', async () => statuses.length >= after + 40);
    stop = true;
    await load;
    assert.deepEqual(
      statuses.filter((s) => s !== 200),
      [],
      `every request answered 200 (${statuses.length}); the handover took ${answer.ms} ms; ${refusals.join('; ')}`,
    );
    for (const i of [0, 1, 2]) {
      const v = await getJson<{ master: string; term: number; boards: Array<{ id: string; runstate: number }> }>(`${u(i)}/api/cluster`, c.headers);
      assert.equal(v.master, 'b2');
      assert.equal(v.term, answer.term);
    }
    const v = await waitFor('b1 running under b2', async () => {
      const x = await getJson<{ boards: Array<{ id: string; runstate: number; role: string }> }>(`${u(1)}/api/cluster`, c.headers);
      return x.boards.every((b) => b.runstate === 1) && x;
    });
    assert.deepEqual(
      v.boards.map((b) => b.role),
      ['node', 'master', 'node'],
    );
    // A drained board is no successor.
    const b2 = (path: string) => fetch(`${u(1)}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    assert.equal((await b2('/api/boards/b3/drain')).status, 200);
    const refused = await b2('/api/cluster/handover?to=b3');
    assert.equal(refused.status, 409);
    assert.match(((await refused.json()) as { error: { message: string } }).error.message, /drained/);
    // The command line does the same: undrain b3, then hand the master role to it.
    const ews = (...args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'node/cli.ts'), ...args, '--url', u(0), '--token', token], { encoding: 'utf8', cwd: ROOT });
    const undrain = ews('undrain', 'b3');
    assert.equal(undrain.status, 0, undrain.stderr);
    assert.match(undrain.stdout, /board b3 undrained/);
    const handover = ews('handover', '--to', 'b3');
    assert.equal(handover.status, 0, handover.stderr);
    assert.match(handover.stdout, /b2 handed the cluster to b3/);
  });
});
