// A site power cut: every board SIGKILLed at once, then restarted. What a station must not lose:
// the history up to the last flush, every acknowledged command in the audit log, an alarm's
// acknowledgement, a logout, and a retried key's replay. Then a board away while the others went
// on gets what it missed from the master. Real board processes (the bundle), devices on real ptys
// whose simulators outlive the boards, each board's stateDir in the test's directory.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ptyDevices } from '../security/pty-devices.ts';
import { ADMIN, BUNDLE, converged, httpGet, login as loginAt, makeCluster, OPERATOR, type TestCluster, testUsers, waitFor } from './harness.ts';

describe('a power cut', () => {
  let c: TestCluster;
  let devices: Awaited<ReturnType<typeof ptyDevices>>;
  let token = '';
  const auth = () => ({ authorization: `Bearer ${token}` });
  const u = (id: string) => c.boards.find((b) => b.id === id)!.url;
  const get = async <T>(id: string, path: string, headers = auth()) => JSON.parse((await httpGet(`${u(id)}${path}`, { headers })).text) as T;
  const post = (id: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
    httpGet(`${u(id)}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { ...auth(), 'content-type': 'application/json', ...headers }, timeoutMs: 10_000 });
  const login = (who = OPERATOR) => loginAt(u('b1'), who);
  const state = (f: string) => readFileSync(join(c.dir, 'state', f), 'utf8');
  const ids = ['b1', 'b2', 'b3'];
  const startAll = async () => {
    c.start('b1');
    await waitFor('b1 up', async () => (await httpGet(`${u('b1')}/healthz`)).status === 200, 30_000, 50);
    for (const id of ids.slice(1)) c.start(id);
    await converged(c);
  };

  before(async () => {
    devices = await ptyDevices();
    const users = await testUsers();
    c = await makeCluster(
      3,
      (cfg) => {
        cfg.auth = { users };
        cfg.devices = devices.devices.map((d) => ({ ...d, pollMs: 300 }));
        cfg.history = { intervalS: 1, flushS: 1, retentionS: 3600 };
        cfg.alarms = [{ id: 'valve-open', device: 'valve3', point: 'position', above: 50, severity: 'critical' }];
      },
      { bundle: true },
    );
    token = await login();
    c.headers = auth();
    await converged(c);
  });
  after(async () => {
    await c?.stop();
    await devices?.close();
  });

  test('SIGKILL of every board at once loses no acknowledged command, acknowledgement, logout, replay or flushed history', async () => {
    const commands = [
      ['valve3/set', { value: 80 }, 'pc-1'],
      ['pump1/start', {}, 'pc-2'],
      ['pump1/set-speed', { value: 2100 }, 'pc-3'],
    ] as const;
    const answers: string[] = [];
    for (const [path, body, key] of commands) {
      const r = await post('b2', `/cgi-bin/devices/${path}`, body, { 'idempotency-key': key });
      assert.equal(r.status, 200, r.text);
      answers.push(r.text);
    }
    await waitFor('the valve alarm raised on every board', async () => {
      for (const id of ids) if (!(await get<Array<{ id: string; active: boolean }>>(id, '/api/alarms')).find((a) => a.id === 'valve-open')?.active) return false;
      return true;
    });
    assert.equal((await post('b3', '/api/alarms/valve-open/ack', {})).status, 200);
    // A second session, logged out: it must stay dead through the cut.
    const gone = await login();
    assert.equal((await httpGet(`${u('b1')}/api/logout`, { method: 'POST', headers: { authorization: `Bearer ${gone}` } })).status, 200);
    // Two samples on every board before the mark (a sample a second: how many there are by now depends on how fast the suite ran).
    await waitFor('two valve samples on every board', async () => {
      for (const id of ids) if ((await get<unknown[]>(id, '/api/history?device=valve3&point=position')).length < 2) return false;
      return true;
    });
    // Wait (on the disk itself) for history past now to be flushed, and for every entry to be on every board's disk.
    const mark = Date.now();
    // Each board's own samples: a board builds its history from the DEVICE broadcasts it heard, so one it missed (UDP) it never had.
    const valveSamples = async (id: string) => (await get<Array<[number, number]>>(id, '/api/history?device=valve3&point=position')).filter(([t]) => t <= mark);
    await waitFor('history flushed past the mark on every board', async () => ids.every((id) => [...state(`${id}.history.log`).matchAll(/\[(\d{13})(\.\d+)?,/g)].some((m) => Number(m[1]) > mark)));
    await waitFor('the log on every disk', async () =>
      ids.every((id) => /"kind":"alarm-ack"/.test(state(`${id}.audit.log`)) && (state(`${id}.audit.log`).match(/"kind":"command"/g)?.length ?? 0) >= 3),
    );
    const before = new Map(await Promise.all(ids.map(async (id) => [id, await valveSamples(id)] as const)));
    for (const [id, b] of before) assert.ok(b.length >= 2, `${id}: samples before the cut: ${b.length}`);
    const valveCommands = devices.sims.valve.commands;

    await Promise.all(ids.map((id) => c.kill(id, 'SIGKILL')));
    await startAll();

    for (const id of ids) {
      const hist = await get<Array<[number, number]>>(id, '/api/history?device=valve3&point=position');
      const times = new Set(hist.map(([t]) => t));
      assert.deepEqual(
        before.get(id)!.filter(([t]) => !times.has(t)),
        [],
        `${id}: every sample up to the last flush`,
      );
      const log = await get<Array<{ kind: string; subject: string | null; text: string; user: string | null }>>(id, '/api/log');
      for (const [path] of commands) {
        const [device, action] = path.split('/');
        assert.ok(
          log.some((e) => e.kind === 'command' && e.subject === device && e.text.startsWith(action!)),
          `${id}: ${path} in the log`,
        );
      }
      assert.ok(
        log.some((e) => e.kind === 'alarm-ack' && e.subject === 'valve-open' && e.user === OPERATOR.name),
        `${id}: the acknowledgement in the log`,
      );
      assert.equal((await httpGet(`${u(id)}/api/cluster`, { headers: { authorization: `Bearer ${gone}` } })).status, 401, `${id}: the logout holds`);
    }
    // The valve is still open: its alarm is the same episode, acknowledged, not raised again.
    await waitFor('the valve read again', async () => (await get<Array<{ id: string; points: { position?: number } }>>('b1', '/api/devices')).find((d) => d.id === 'valve3')?.points.position === 80);
    const alarm = (await get<Array<{ id: string; active: boolean; acked: { user: string } | null }>>('b2', '/api/alarms')).find((a) => a.id === 'valve-open')!;
    assert.deepEqual([alarm.active, alarm.acked?.user], [true, OPERATOR.name]);
    const raised = (await get<Array<{ kind: string; subject: string | null; text: string }>>('b1', '/api/log')).filter((e) => e.kind === 'alarm' && e.subject === 'valve-open');
    assert.equal(raised.length, 1, 'raised once, before the cut');
    // The retried key is replayed, and the valve is not driven again.
    const retry = await post('b1', '/cgi-bin/devices/valve3/set', { value: 80 }, { 'idempotency-key': 'pc-1' });
    assert.deepEqual([retry.status, retry.headers['idempotent-replayed'], retry.text], [200, 'true', answers[0]]);
    assert.equal(devices.sims.valve.commands, valveCommands, 'the valve was not driven again');
  });

  test('a board away while the others went on gets the history and the log it missed from the master', async () => {
    const v = await converged(c);
    const away = ids.find((id) => id !== v.master && id !== 'b3')!;
    await c.kill(away, 'SIGKILL');
    const from = Date.now();
    // While it is away: commands (log entries) and readings (history) it never hears of.
    for (const value of [20, 30]) assert.equal((await post(v.master!, '/cgi-bin/devices/valve3/set', { value })).status, 200);
    await waitFor(
      'history taken while it was away',
      async () => (await get<Array<[number, number]>>(v.master!, '/api/history?device=valve3&point=position')).filter(([t]) => t > from + 1500).length > 0,
    );
    const missed = (await get<Array<[number, number]>>(v.master!, '/api/history?device=valve3&point=position')).filter(([t]) => t > from && t < Date.now() - 200);
    c.start(away);
    await converged(c);
    await waitFor(`${away} has the log and the history it missed`, async () => {
      const log = await get<Array<{ kind: string; text: string; at: number }>>(away, '/api/log');
      const hist = new Set((await get<Array<[number, number]>>(away, '/api/history?device=valve3&point=position')).map(([t]) => t));
      return log.filter((e) => e.kind === 'command' && e.at > from).length >= 2 && missed.every(([t]) => hist.has(t));
    });
  });

  test('a backup holds the config without its secrets, the history, the log and the alarms; ews restore (admin) merges it into every board of a cluster that lost its state', async () => {
    const r = await httpGet(`${u('b2')}/api/backup`, { headers: auth() });
    assert.equal(r.status, 200);
    assert.match(String(r.headers['content-disposition']), /attachment; filename="ews-test-/);
    const backup = JSON.parse(r.text) as {
      config: { cluster: Record<string, unknown>; auth: { users: Array<Record<string, unknown>> } };
      log: Array<{ id: string }>;
      history: Array<[string, string, Array<[number, number]>]>;
      alarms: unknown[];
    };
    assert.equal(backup.config.cluster.key, undefined, 'no cluster key');
    assert.ok(!r.text.includes(c.key), 'the key appears nowhere');
    assert.deepEqual(
      backup.config.auth.users.map((x) => Object.keys(x).sort()),
      [
        ['name', 'role'],
        ['name', 'role'],
      ],
      'no password hash',
    );
    assert.ok(backup.log.length > 5 && backup.history.length > 0 && backup.alarms.length > 0);
    const backedUp = backup.history.find(([d, p]) => d === 'valve3' && p === 'position')?.[2] ?? [];
    assert.ok(backedUp.length >= 2, `valve3/position samples in the backup: ${backedUp.length}`);
    // The whole cluster loses its state.
    await Promise.all(ids.map((id) => c.kill(id, 'SIGKILL')));
    rmSync(join(c.dir, 'state'), { recursive: true, force: true });
    await startAll();
    token = await login();
    c.headers = auth();
    assert.equal((await get<unknown[]>('b1', '/api/log')).length < backup.log.length, true);
    const file = join(c.dir, 'backup.json');
    writeFileSync(file, r.text);
    const asOperator = spawnSync(process.execPath, [BUNDLE, 'restore', '--url', u('b3'), '--file', file, '--token', token], { encoding: 'utf8' });
    assert.equal(asOperator.status, 1, asOperator.stderr);
    assert.match(asOperator.stderr, /403 FORBIDDEN: olga is an operator; this needs an admin/);
    const admin = await login(ADMIN);
    const ok = spawnSync(process.execPath, [BUNDLE, 'restore', '--url', u('b3'), '--file', file, '--token', admin], { encoding: 'utf8' });
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stdout, /^b3: merged \d+ log entries, \d+ points\nb1: merged\nb2: merged\n$/);
    for (const id of ids) {
      const held = new Set((await get<Array<{ id: string }>>(id, '/api/log')).map((e) => e.id));
      assert.deepEqual(
        backup.log.filter((e) => !held.has(e.id)).map((e) => e.id),
        [],
        `${id}: every entry of the backup`,
      );
      const hist = await get<Array<[number, number]>>(id, '/api/history?device=valve3&point=position');
      const times = new Set(hist.map(([t]) => t));
      assert.deepEqual(
        backedUp.filter(([t]) => !times.has(t)),
        [],
        `${id}: every sample of the backup is back`,
      );
    }
    const bad = spawnSync(process.execPath, [BUNDLE, 'restore', '--url', u('b1'), '--file', c.file, '--token', admin], { encoding: 'utf8' });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /400 BAD_REQUEST: not an ews backup/);
  });
});
