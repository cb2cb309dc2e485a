// Paper 000's transactional rule, end to end through the real guard and the real dispatch core:
// only a session that verifies skips admission. A made-up cookie, or one signed with another
// key, is treated exactly like no cookie at all.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { DispatchCore, type Effect, type JobInfo } from '../../master/dispatch-core.ts';
import { AuthGuard } from '../../node/auth/guard.ts';
import { RevokedSessions } from '../../node/auth/revoked-sessions.ts';
import { SessionSigner } from '../../node/auth/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { StateTable } from '../../shared/state-table.ts';

const T0 = 1_800_000_000_000;
const KEY = 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4';

test('a forged session cookie is refused admission like an anonymous client; a verified session passes', () => {
  const cfg = parseConfig({
    cluster: { name: 't', key: KEY, broadcast: 'peers', heartbeatMs: 100, tmaxMs: 500, tthresholdMs: 500 },
    boards: [{ id: 'b0', address: '127.0.0.1', httpPort: 1000, udpPort: 2000 }],
    classes: [{ name: 'browse', priority: 0, match: [{ pathPrefix: '/' }] }],
    qos: { periodMs: 100, admission: { targetQueue: 0, q0: 1, q1: -0.5, reserveMax: 100 } },
    limits: { inFlightPerBoardMax: 1 },
    auth: { users: [{ name: 'olga', role: 'operator', passwordHash: `scrypt$16384$8$1$c2FsdHNhbHRzYWx0c2FsdA$${'a'.repeat(43)}` }] },
  });
  const guard = new AuthGuard(cfg, new SessionSigner(cfg.cluster.key, new RevokedSessions(16, undefined, T0)));
  const req = (cookie?: string) => ({ headers: cookie ? { cookie } : {} }) as unknown as IncomingMessage;
  const valid = guard.signer.issue('olga', 'operator', 600, T0).token;
  const otherKey = new SessionSigner(Buffer.alloc(32, 7), new RevokedSessions(16, undefined, T0)).issue('olga', 'operator', 600, T0).token;
  const clients = { anonymous: req(), forged: req('ews_session=eyJmYWtlIjp0cnVlfQ.AAAA'), 'other key': req(`ews_session=${otherKey}`), verified: req(`ews_session=${valid}`) };
  const session = Object.fromEntries(Object.entries(clients).map(([k, r]) => [k, guard.verifiedSession(r, T0)]));
  assert.deepEqual(session, { anonymous: false, forged: false, 'other key': false, verified: true });

  // One board busy; the first period learns 10 arrivals and a queue of 10 over its target of 0:
  // target_in = 10 − 10 + … ≤ 0, so nothing new passes in the next period.
  const table = new StateTable(1);
  table.join(0, 0);
  const core = new DispatchCore<string>(cfg, 0, table, () => 0.5);
  const info = (s: boolean): JobInfo => ({ cls: 0, bytes: 0, candidates: undefined, safe: true, page: true, client: 'c', session: s, group: undefined, groupMax: 0 });
  for (let i = 0; i < 11; i++) core.submit(`warm${i}`, info(false), 0);
  core.period(100);
  const states = Object.fromEntries(Object.entries(session).map(([k, s]) => [k, core.submit(k, info(s), 101).job.state]));
  assert.deepEqual(states, { anonymous: 'reserved', forged: 'reserved', 'other key': 'reserved', verified: 'queued' });
});

test("the reserve is served first: at a period's end the waiting requests are queued before any newcomer of the next period", () => {
  const cfg = parseConfig({
    cluster: { name: 't', key: KEY, broadcast: 'peers', heartbeatMs: 100, tmaxMs: 500, tthresholdMs: 500 },
    boards: [{ id: 'b0', address: '127.0.0.1', httpPort: 1000, udpPort: 2000 }],
    classes: [{ name: 'browse', priority: 0, match: [{ pathPrefix: '/' }] }],
    qos: { periodMs: 100, admission: { targetQueue: 4, q0: 1, q1: -0.5, alpha: 1, reserveMax: 100 } },
    limits: { inFlightPerBoardMax: 1 },
    auth: { disabled: true },
  });
  const table = new StateTable(1);
  table.join(0, 0);
  const core = new DispatchCore<string>(cfg, 0, table, () => 0.5);
  const info: JobInfo = { cls: 0, bytes: 0, candidates: undefined, safe: true, page: true, client: 'c', session: false, group: undefined, groupMax: 0 };
  // The board finishes whatever it runs at once: the queue drains between periods.
  const order: string[] = [];
  const serve = (effects: Effect<string>[], at: number) => {
    for (let work = effects; work.length > 0; )
      work = work.flatMap((e) => {
        if (e.kind !== 'dispatch') return [];
        order.push(e.job.payload);
        return core.finished(e.job, 10, at);
      });
  };
  // Period 1 admits all 6 (one runs, 5 queue): q 5 over its target 4 → target_in = 6 − 1 = 5.
  const started: Effect<string>[] = [];
  for (let i = 0; i < 6; i++) started.push(...core.submit(`p1-${i}`, info, 0).effects);
  core.period(100);
  // Period 2: the budget of 5 is used up by 5 newcomers (p = 5/6 passes with the 0.5 draw)... the rest wait.
  const p2 = Array.from({ length: 8 }, (_, i) => core.submit(`p2-${i}`, info, 101).job);
  const waiting = p2.filter((j) => j.state === 'reserved');
  assert.ok(waiting.length >= 3, `${waiting.length} reserved`);
  // The queue drains; period 3 starts with a budget: the reserved go in first, oldest first, and
  // are served before the next period's newcomer.
  serve(started, 150);
  const fx = core.period(200);
  assert.ok(
    waiting.every((j) => j.state === 'queued' || j.state === 'running'),
    waiting.map((j) => j.state).join(','),
  );
  const newcomer = core.submit('p3-new', info, 201);
  order.length = 0;
  serve([...fx, ...newcomer.effects], 210);
  assert.deepEqual(
    order.slice(0, waiting.length),
    waiting.map((j) => j.payload),
    'the reserve first, in its order',
  );
  assert.ok(newcomer.job.state === 'reserved' || order.indexOf('p3-new') === waiting.length, order.join(' '));
});
