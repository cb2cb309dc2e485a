// The operator's view through a real 3-board cluster (issue 13's done-when): a line device on one
// board, read by a 1 s schedule, with an alarm above 2. Fresh readings, the audit log, an alarm
// raised and acknowledged, the history, and failing fast once the device's board is killed, each
// checked on a board other than the one that did it.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { hashPassword } from '../../node/auth/password.ts';
import { converged, makeCluster, type TestCluster, waitFor } from './harness.ts';

type Alarm = { id: string; active: boolean; acked: { user: string; at: number } | null; since: number | null };
type Entry = { kind: string; user: string | null; subject: string | null; text: string; board: string; status: number | null };

describe("the operator's view", () => {
  let c: TestCluster;
  const auth: Record<string, string> = {};
  const get = async <T>(board: number, path: string): Promise<T> => {
    const r = await fetch(`${c.boards[board]!.url}${path}`, { headers: { authorization: `Bearer ${auth.token}` }, signal: AbortSignal.timeout(5000) });
    assert.equal(r.status, 200, `${path}: ${r.status}`);
    return (await r.json()) as T;
  };
  const post = (board: number, path: string, body?: unknown) =>
    fetch(`${c.boards[board]!.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${auth.token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(5000),
    });

  before(async () => {
    const passwordHash = await hashPassword('xavier-pass-1');
    c = await makeCluster(
      3,
      (cfg) => {
        cfg.auth = { users: [{ name: 'xavier', role: 'operator', passwordHash }] };
        cfg.devices = [
          {
            id: 'tally',
            driver: 'line',
            simulate: 'counter',
            attach: [{ board: 'b3', port: '/dev/ttyS7' }],
            eol: '\n',
            ok: '^OK',
            pollMs: 0, // only the schedule reads it
            points: { n: { query: 'N?', parse: '^OK n=(\\d+)' } },
            actions: { inc: { send: 'INC' } },
          },
        ];
        cfg.schedules = [{ cron: '* * * * * *', device: 'tally', action: 'read' }];
        cfg.alarms = [{ id: 'tally-high', device: 'tally', point: 'n', above: 2, severity: 'warning', message: 'tally above 2' }];
        cfg.history = { retentionS: 600, intervalS: 1 };
      },
      { args: ['--simulate-devices'] },
    );
    await waitFor('b1 master', async () => ((await (await fetch(`${c.boards[0]!.url}/healthz`)).json()) as { master: string }).master === 'b1');
    const r = await fetch(`${c.boards[0]!.url}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'xavier', password: 'xavier-pass-1' }) });
    auth.token = ((await r.json()) as { token: string }).token;
    c.headers = { authorization: `Bearer ${auth.token}` };
    await converged(c);
  });
  after(() => c.stop());

  test('the schedule keeps updatedAt fresh', async () => {
    await waitFor('a reading from the schedule', async () => {
      const d = (await get<Array<{ id: string; updatedAt: number | null; online: boolean }>>(1, '/api/devices')).find((x) => x.id === 'tally')!;
      return d.online && d.updatedAt !== null && Date.now() - d.updatedAt < 3000;
    });
  });

  test('three inc presses by xavier are in the log on another board, with his name', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await post(0, '/cgi-bin/devices/tally/inc')).status, 200);
    const presses = await waitFor("three presses in b2's log", async () => {
      const log = await get<Entry[]>(1, '/api/log');
      const mine = log.filter((e) => e.kind === 'command' && e.subject === 'tally');
      return mine.length >= 3 ? mine : undefined;
    });
    assert.equal(presses.length, 3);
    for (const e of presses) {
      assert.equal(e.user, 'xavier');
      assert.equal(e.status, 200);
      assert.match(e.text, /^inc → 200 on b3$/);
    }
    const logins = (await get<Entry[]>(2, '/api/log')).filter((e) => e.kind === 'login');
    assert.ok(
      logins.some((e) => e.user === 'xavier' && e.status === 200 && e.board === 'b1'),
      "the login is in b3's log too",
    );
  });

  test('the alarm is raised everywhere, acknowledged on one board, and the acknowledgement shows on another', async () => {
    for (const b of [0, 1, 2]) {
      const active = await waitFor(`tally-high active on b${b + 1}`, async () => (await get<Alarm[]>(b, '/api/alarms')).find((a) => a.id === 'tally-high' && a.active));
      assert.equal(active.acked, null);
    }
    const r = await post(1, '/api/alarms/tally-high/ack');
    assert.equal(r.status, 200);
    const acked = await waitFor('acknowledged on b3', async () => (await get<Alarm[]>(2, '/api/alarms')).find((a) => a.id === 'tally-high' && a.acked !== null));
    assert.equal(acked.acked!.user, 'xavier');
    assert.equal(acked.active, true, 'still active: acknowledged is not cleared');
    const log = await get<Entry[]>(0, '/api/log');
    assert.ok(
      log.some((e) => e.kind === 'alarm' && e.subject === 'tally-high' && e.text.startsWith('raised')),
      'the master logged it raised',
    );
    assert.ok(log.some((e) => e.kind === 'alarm-ack' && e.user === 'xavier'));
    assert.equal((await post(1, '/api/alarms/board-down-b2/ack')).status, 409, 'nothing to acknowledge: NOT_ACTIVE');
    assert.equal((await post(1, '/api/alarms/no-such/ack')).status, 404);
  });

  test('the history holds the samples, as JSON and CSV', async () => {
    const samples = await waitFor('a few samples on b1', async () => {
      const s = await get<Array<[number, number]>>(0, '/api/history?device=tally&point=n');
      return s.length >= 3 ? s : undefined;
    });
    assert.ok(
      samples.every(([t, v], i) => Number.isFinite(v) && (i === 0 || t >= samples[i - 1]![0] + 1000)),
      'one sample per second at most, in time order',
    );
    assert.equal(samples.at(-1)![1], 3);
    const csv = await fetch(`${c.boards[1]!.url}/api/history?device=tally&point=n&format=csv`, { headers: c.headers });
    assert.equal(csv.headers.get('content-type'), 'text/csv; charset=utf-8');
    assert.match(await csv.text(), /^time,iso,value\n\d+,\d{4}-\d\d-\d\dT[^,]+,\d+\n/);
    assert.equal((await fetch(`${c.boards[1]!.url}/api/history?device=tally&point=nope`, { headers: c.headers })).status, 404);
  });

  test("a press on a fresh connection (the master's lean intake) is logged with the board that ran it", async () => {
    // The first request on a new connection goes the lean way; the board's x-ews-board then reaches the log from the answer's lines.
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${c.boards[0]!.url}/cgi-bin/devices/tally/inc`,
        { method: 'POST', agent: false, headers: { authorization: `Bearer ${auth.token}`, 'content-length': '0' }, timeout: 5000 },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      // `timeout` only reports a silent socket: a board that never answers fails the test here, not at the runner's limit.
      req.on('timeout', () => req.destroy(new Error('no answer in 5 s')));
      req.end();
    });
    assert.equal(status, 200);
    const presses = await waitFor('a fourth press in the log', async () => {
      const mine = (await get<Entry[]>(0, '/api/log')).filter((e) => e.kind === 'command' && e.subject === 'tally');
      return mine.length >= 4 ? mine : undefined;
    });
    assert.equal(presses.length, 4);
    for (const e of presses) assert.match(e.text, /^inc → 200 on b3$/);
  });

  test("SIGKILL the device's board: a command is refused at once (503), and the board-down alarm is raised", async () => {
    await c.kill('b3');
    const t0 = performance.now();
    const r = await post(0, '/cgi-bin/devices/tally/inc');
    process.stdout.write(`# a command after SIGKILL of the device's board: ${r.status} in ${Math.round(performance.now() - t0)} ms\n`);
    assert.equal(r.status, 503);
    await waitFor('board-down-b3 raised on b2', async () => (await get<Alarm[]>(1, '/api/alarms')).find((a) => a.id === 'board-down-b3' && a.active), 15_000);
  });
});
