// One config for the cluster (PUT /api/config, admin): refused whole with every problem named;
// a change every board takes live is running everywhere within 2 s with no restart; one that
// needs a restart rolls through the boards, the master last by handover, while a second push gets
// 409; a board that boots with an older config is given the master's; a board forced to another
// config raises config-mismatch; the cluster key changed by three pushes. Three real boards
// (simulated devices), a real login.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { demoDevices } from '../../dev/demo.ts';
import { hashPassword } from '../../node/auth/password.ts';
import { converged, getJson, makeCluster, metric, type TestCluster, waitFor } from './harness.ts';

const ADMIN = { name: 'ada', password: 'admin-pass-1' };
const OPERATOR = { name: 'otto', password: 'operator-pass-1' };

interface Answer {
  status: number;
  json: Record<string, any>; // any: JSON answers read freely in assertions
}

describe('config push', () => {
  let c: TestCluster;
  let base: Record<string, any>;
  const tokens: Record<string, string> = {};
  const u = (i: number) => c.boards[i]!.url;
  const put = async (url: string, who: string, body: unknown): Promise<Answer> => {
    const r = await fetch(`${url}/api/config`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${tokens[who]}`, 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(120_000),
    });
    return { status: r.status, json: (await r.json()) as Record<string, any> };
  };
  const versions = async () => Promise.all(c.boards.map(async (b) => (await getJson<{ configVersion: number }>(`${b.url}/api/config`, c.headers)).configVersion));
  const pid = (id: string) => c.procs.get(id)!.pid;

  before(async () => {
    const users = [
      { name: ADMIN.name, role: 'admin', passwordHash: await hashPassword(ADMIN.password) },
      { name: OPERATOR.name, role: 'operator', passwordHash: await hashPassword(OPERATOR.password) },
    ];
    c = await makeCluster(
      3,
      (cfg) => {
        cfg.devices = demoDevices(['b1', 'b2', 'b3']);
        cfg.alarms = [{ id: 'hot', device: 'room', point: 'temp', above: 1000 }];
        cfg.auth = { users };
      },
      { args: ['--simulate-devices'] },
    );
    base = JSON.parse(readFileSync(c.file, 'utf8')) as Record<string, any>;
    for (const who of [ADMIN, OPERATOR]) {
      const r = await fetch(`${u(0)}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(who) });
      tokens[who.name] = ((await r.json()) as { token: string }).token;
    }
    c.headers = { authorization: `Bearer ${tokens[ADMIN.name]}` };
    await converged(c);
  });
  after(() => c.stop());

  test('bad input: an operator gets 403; a config with problems is refused whole, every problem named; a stale version 409', async () => {
    assert.equal((await put(u(0), OPERATOR.name, base)).status, 403);
    const bad = await put(u(0), ADMIN.name, { ...base, boards: [...base.boards, base.boards[0]], limits: { bodyBytesMax: -1 }, colour: 'blue' });
    assert.equal(bad.status, 400, JSON.stringify(bad.json));
    assert.equal(bad.json.error.code, 'BAD_CONFIG');
    const problems = bad.json.error.problems as string[];
    assert.ok(problems.length >= 3, problems.join('\n'));
    for (const path of ['colour', 'limits.bodyBytesMax', 'boards'])
      assert.ok(
        problems.some((p) => p.startsWith(path)),
        `${path} named in:\n${problems.join('\n')}`,
      );
    const notJson = await put(u(0), ADMIN.name, '{"cluster":');
    assert.equal(notJson.status, 400);
    assert.equal(notJson.json.error.code, 'BAD_CONFIG');
    const stale = await put(u(0), ADMIN.name, { ...base, configVersion: 0 });
    assert.equal(stale.status, 409);
    assert.equal(stale.json.error.code, 'CONFIG_STALE');
    assert.deepEqual(await versions(), [0, 0, 0], 'nothing applied anywhere');
  });

  test('a live change (a device added, an alarm threshold changed) runs on every board within 2 s, no restart; asked at a node, the master answers', async () => {
    const pids = c.boards.map((b) => pid(b.id));
    const room2 = { ...base.devices[2], id: 'room2', name: 'Hall temperature' };
    const next = { ...base, devices: [...base.devices, room2], alarms: [{ id: 'hot', device: 'room', point: 'temp', above: -1000 }], qos: { scheduler: 'fifo' } };
    const t0 = Date.now();
    const r = await put(u(1), ADMIN.name, next);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.configVersion, 1, 'no configVersion given: the next one');
    assert.deepEqual(r.json.restart, []);
    assert.deepEqual(Object.values(r.json.boards), ['applied live', 'applied live', 'applied live']);
    await waitFor(
      'every board on config 1 with room2 and the hot alarm raised',
      async () => {
        for (const b of c.boards) {
          const devices = await getJson<Array<{ id: string }>>(`${b.url}/api/devices`, c.headers);
          const alarms = await getJson<Array<{ id: string; active: boolean }>>(`${b.url}/api/alarms`, c.headers);
          if (!devices.some((d) => d.id === 'room2') || !alarms.find((a) => a.id === 'hot')?.active) return false;
        }
        return (await versions()).every((v) => v === 1);
      },
      2000,
    );
    process.stdout.write(`# live push on every board in ${Date.now() - t0} ms\n`);
    const master = (await converged(c)).master;
    const stats = await getJson<{ qos: { scheduler: string } }>(`${c.boards.find((b) => b.id === master)!.url}/api/stats`, c.headers);
    assert.equal(stats.qos.scheduler, 'fifo', "the master's dispatch core made again with the pushed QoS");
    assert.deepEqual(
      c.boards.map((b) => pid(b.id)),
      pids,
      'no board restarted',
    );
    // HEALTH carries the new version: /api/cluster shows it for all three boards.
    const view = await waitFor(
      'HEALTH carries version 1',
      async () => {
        const v = await getJson<{ boards: Array<{ configVersion: number }> }>(`${u(0)}/api/cluster`, c.headers);
        return v.boards.every((b) => b.configVersion === 1) && v;
      },
      8000,
    );
    assert.equal(view.boards.length, 3);
  });

  test('a change that needs a restart rolls through the boards, the master last by handover; a second push meanwhile gets 409', async () => {
    const before = await converged(c);
    const next = { ...JSON.parse(readFileSync(join(c.dir, 'state', 'b1.config.json'), 'utf8')), configVersion: 5, history: { intervalS: 2 } };
    const first = put(u(0), ADMIN.name, next);
    // The first is under way (it drains and restarts a node): a second push is refused.
    await waitFor('the rollout under way', async () => (await getJson<{ boards: Array<{ drained: boolean }> }>(`${u(0)}/api/cluster`, c.headers)).boards.some((b) => b.drained), 10_000);
    const second = await put(u(0), ADMIN.name, { ...next, configVersion: 6 });
    assert.equal(second.status, 409);
    assert.equal(second.json.error.code, 'PUSH_IN_PROGRESS');
    const r = await first;
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.deepEqual(r.json.restart, ['history']);
    assert.equal(r.json.master, 'restarting');
    for (const b of c.boards.filter((x) => x.id !== before.master)) assert.match(r.json.boards[b.id], /^restarted in \d+ ms/);
    await waitFor(
      'every board on config 5, undrained, a new master',
      async () => {
        const v = await converged(c);
        return v.master !== before.master && (await versions()).every((x) => x === 5);
      },
      30_000,
    );
    const view = await getJson<{ boards: Array<{ drained: boolean }> }>(`${u(0)}/api/cluster`, c.headers);
    assert.ok(
      view.boards.every((b) => !b.drained),
      'every board undrained',
    );
  });

  test('a board that boots with an older config gets the master’s; one forced to another config raises config-mismatch', async () => {
    const cur = JSON.parse(readFileSync(join(c.dir, 'state', 'b1.config.json'), 'utf8')) as Record<string, any>;
    const pushed = join(c.dir, 'state', 'b3.config.json');
    const old = join(c.dir, 'b3-old.json');
    writeFileSync(old, JSON.stringify({ ...cur, configVersion: 2, history: { intervalS: 3 } }));
    // Restarted from an older installed file: it boots with the config pushed to it (kept in its state directory).
    await c.kill('b3');
    c.start('b3', old);
    await waitFor('b3 up on config 5', async () => (await getJson<{ configVersion: number }>(`${u(2)}/api/config`, c.headers)).configVersion === 5, 15_000);
    // Without it (a new board, a wiped state): the master sends its config when b3's HEALTH shows version 2.
    await c.kill('b3');
    rmSync(pushed);
    c.start('b3', old);
    await waitFor('b3 converges to config 5', async () => (await getJson<{ configVersion: number }>(`${u(2)}/api/config`, c.headers)).configVersion === 5, 30_000);
    assert.equal(JSON.parse(readFileSync(pushed, 'utf8')).configVersion, 5, 'kept in its state directory');
    assert.equal(JSON.parse(readFileSync(old, 'utf8')).configVersion, 2, 'the installed file as it was');
    // The same version, other content: nothing converges it, the alarm says so.
    await c.kill('b3');
    writeFileSync(old, JSON.stringify({ ...cur, history: { intervalS: 3 } }));
    c.start('b3', old);
    await waitFor(
      'config-mismatch-b3 raised',
      async () => (await getJson<Array<{ id: string; active: boolean }>>(`${u(0)}/api/alarms`, c.headers)).find((a) => a.id === 'config-mismatch-b3')?.active,
      30_000,
    );
  });
});

test('the cluster key changed by three pushes (each a rolling restart): one cluster after each, no packet dropped as forged', async () => {
  const c = await makeCluster(3);
  try {
    await converged(c);
    const NEW = randomBytes(32).toString('hex');
    const base = JSON.parse(readFileSync(c.file, 'utf8')) as Record<string, any>;
    const drops = async () => {
      let n = 0;
      for (const b of c.boards) n += await metric(b.url, 'ews_udp_dropped_total', { reason: 'auth' });
      return n;
    };
    const push = async (version: number, cluster: Record<string, unknown>) => {
      const master = (await converged(c)).master;
      const at = c.boards.find((b) => b.id === master)!.url;
      const r = await fetch(`${at}/api/config`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...base, configVersion: version, cluster: { ...base.cluster, ...cluster } }),
        signal: AbortSignal.timeout(120_000),
      });
      const report = (await r.json()) as { master: string; boards: Record<string, string> };
      assert.equal(r.status, 200, JSON.stringify(report));
      assert.equal(report.master, 'restarting', JSON.stringify(report));
      await waitFor(
        `every board on config ${version}`,
        async () => {
          await converged(c);
          for (const b of c.boards) if ((await getJson<{ configVersion: number }>(`${b.url}/api/config`)).configVersion !== version) return false;
          return true;
        },
        30_000,
      );
      assert.equal(await drops(), 0, `no packet dropped as forged after push ${version}`);
    };
    await push(1, { acceptKeys: [NEW] });
    await push(2, { key: NEW, acceptKeys: [base.cluster.key] });
    await push(3, { key: NEW });
    assert.equal((JSON.parse(readFileSync(join(c.dir, 'state', 'b1.config.json'), 'utf8')) as Record<string, any>).cluster.key, NEW);
    assert.notEqual((JSON.parse(readFileSync(c.file, 'utf8')) as Record<string, any>).cluster.key, NEW, 'the installed file is left as it was');
  } finally {
    await c.stop();
  }
});
