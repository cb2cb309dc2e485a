// Hostile clients, second round (the wave-3 probe): each test replays one finding against the built
// bundle on a 3-board cluster with login on and devices on real ptys, and fails on the code before
// its fix.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { hashPassword } from '../../node/auth/password.ts';
import { converged, getJson, makeCluster, metric, rawRequest, type TestCluster, waitFor } from '../integration/harness.ts';
import { ptyDevices } from './pty-devices.ts';

const OP = { name: 'olga', password: 'operator-pass-1' };
const OP2 = { name: 'oscar', password: 'operator-pass-2' };
const VIEW = { name: 'victor', password: 'viewer-pass-1' };

describe('hostile clients', () => {
  let c: TestCluster;
  let devices: Awaited<ReturnType<typeof ptyDevices>>;
  let from = 0;
  const u = (i: number) => c.boards[i]!.url;
  /** Each login from its own local address: the per-client login limit is not what these tests are about. */
  const login = async (who: { name: string; password: string }, at = 0): Promise<string> => {
    const { request } = await import('node:http');
    const text = await new Promise<string>((resolve, reject) => {
      const q = request(`${u(at)}/api/login`, { method: 'POST', localAddress: `127.0.4.${(from++ % 250) + 1}`, headers: { 'content-type': 'application/json' } }, (res) => {
        let t = '';
        res.on('data', (d) => (t += d));
        res.on('end', () => resolve(t));
      });
      q.on('error', reject);
      q.end(JSON.stringify(who));
    });
    return (JSON.parse(text) as { token: string }).token;
  };
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  before(async () => {
    devices = await ptyDevices();
    const users = [
      { name: OP.name, role: 'operator', passwordHash: await hashPassword(OP.password) },
      { name: OP2.name, role: 'operator', passwordHash: await hashPassword(OP2.password) },
      { name: VIEW.name, role: 'viewer', passwordHash: await hashPassword(VIEW.password) },
    ];
    c = await makeCluster(
      3,
      (cfg) => {
        cfg.auth = { users };
        cfg.devices = devices.devices;
        cfg.limits = { sseBytesMax: 4096, headersTimeoutMs: 1000, revokedSessionsMax: 16, auditLogMax: 100 };
        // A hundred levels on the valve: every reading of a moving valve changes some, and each change is an event of the whole alarm list (tens of KB).
        cfg.alarms = Array.from({ length: 100 }, (_, i) => ({
          id: `level-${i}`,
          device: 'valve3',
          point: 'position',
          above: i,
          severity: 'info',
          message: `valve above ${i} % and a long message to make the list heavy`,
        }));
      },
      { bundle: true },
    );
    c.headers = bearer(await login(VIEW));
    await converged(c);
  });
  after(async () => {
    await c?.stop();
    await devices?.close();
  });

  test('a client that half-closes after its request still gets the answer, through the master and through a node', async () => {
    const token = await login(OP);
    for (const i of [0, 1]) {
      const body = JSON.stringify({ value: 30 + i });
      const answer = await rawRequest(
        c.boards[i]!.httpPort,
        `POST /cgi-bin/devices/valve3/set HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        { endAfterWrite: true },
      );
      assert.match(answer, /^HTTP\/1\.1 200 /, `board ${i + 1}: ${answer.split('\r\n')[0]}`);
      assert.match(answer, /"ok":true/);
    }
  });

  test('a failed login is logged on every board without the name typed (it may be a password): a short hash of it', async () => {
    const name = `n${'x'.repeat(99)}`;
    const r = await fetch(`${u(2)}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, password: 'wrong-password' }) });
    assert.equal(r.status, 401);
    await waitFor('the entry on every board', async () => {
      for (const i of [0, 1, 2]) {
        const log = await getJson<Array<{ kind: string; user: string | null; status: number | null }>>(`${u(i)}/api/log`, c.headers);
        if (log.some((e) => e.user?.includes('xxxx'))) throw new Error(`board ${i + 1} shows the typed name`);
        if (!log.some((e) => e.kind === 'login' && e.status === 401 && /^unknown #[0-9a-f]{8}$/.test(e.user ?? ''))) return false;
      }
      return true;
    });
  });

  test("idempotency keys are the pair (user, key): another operator's same key, path and body runs his own command, and cannot replay or block the first", async () => {
    const [a, b] = [await login(OP), await login(OP2)];
    const send = (token: string, value: number) =>
      fetch(`${u(1)}/cgi-bin/devices/pump1/set-speed`, {
        method: 'POST',
        headers: { ...bearer(token), 'content-type': 'application/json', 'idempotency-key': 'shared-key-1' },
        body: JSON.stringify({ value }),
      });
    const first = await send(a, 1500);
    assert.equal(first.status, 200);
    const writes = devices.sims.pump.writes;
    const other = await send(b, 1500);
    assert.deepEqual([other.status, other.headers.get('idempotent-replayed')], [200, null], 'his own command, not a replay of hers');
    assert.equal(devices.sims.pump.writes, writes + 1, 'and it ran');
    const otherBody = await send(b, 1700);
    assert.equal(otherBody.status, 409, 'his key, another body: his conflict');
    const retry = await send(a, 1500);
    assert.deepEqual([retry.status, retry.headers.get('idempotent-replayed')], [200, 'true'], 'her retry replays her answer');
    assert.equal(devices.sims.pump.writes, writes + 1);
    const bad = await fetch(`${u(0)}/cgi-bin/devices/pump1/set-speed`, { method: 'POST', headers: { ...bearer(a), 'idempotency-key': 'x'.repeat(129) }, body: '{"value":1}' });
    assert.equal(bad.status, 400, 'a key over 128 characters is refused at the edge');
  });

  test('event streams a viewer never reads are closed at their byte bound; the board stays up and small', async (t) => {
    const token = await login(VIEW, 1);
    const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${c.procs.get('b2')!.pid}/status`, 'utf8'))![1]) / 1024;
    const before = rssMb();
    // Clients with a 2 KB receive buffer that send the request and never read a byte.
    const reader = `import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048); s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(("GET /api/events HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nAuthorization: Bearer " + sys.argv[2] + "\\r\\n\\r\\n").encode())
print("sent", flush=True); time.sleep(120)`;
    const stalled = Array.from({ length: 4 }, () => spawn('/usr/bin/python3', ['-c', reader, String(c.boards[1]!.httpPort), token], { stdio: ['ignore', 'pipe', 'inherit'] }));
    t.after(() => {
      for (const p of stalled) p.kill();
    });
    await waitFor('4 streams open', async () => (await metric(u(1), 'ews_sse_streams')) >= 4);
    // Events for every stream: each command is a device reading and a log entry.
    const op = await login(OP);
    let sent = 0;
    const drive = async () => {
      while ((await metric(u(1), 'ews_sse_closed_behind_total')) < 4 && sent < 2000) {
        await Promise.all(
          [0, 1, 2, 3].map(() => {
            sent++;
            // Back and forth: the valve is always moving, so every reading crosses levels.
            return fetch(`${u(0)}/cgi-bin/devices/valve3/set`, {
              method: 'POST',
              headers: { ...bearer(op), 'content-type': 'application/json' },
              body: JSON.stringify({ value: Math.floor(sent / 40) % 2 === 0 ? 100 : 0 }),
            });
          }),
        );
      }
    };
    await drive();
    t.diagnostic(`${sent} commands until every unread stream was closed; RSS ${before.toFixed(1)} → ${rssMb().toFixed(1)} MB`);
    assert.ok((await metric(u(1), 'ews_sse_closed_behind_total')) >= 4, 'every unread stream closed');
    assert.equal((await fetch(`${u(1)}/healthz`)).status, 200, 'the board is up');
    assert.ok(rssMb() - before < 10, `RSS grew ${(rssMb() - before).toFixed(1)} MB`);
  });

  /** A raw connection to b2's port: what it was sent, when it was closed (ms after connecting). */
  const linkProbe = (bytes: Buffer, localAddress = '127.0.0.1'): Promise<number> =>
    new Promise((resolve) => {
      const t0 = performance.now();
      const s = net.connect({ port: c.boards[1]!.httpPort, host: '127.0.0.1', localAddress }, () => s.write(bytes));
      s.on('error', () => {});
      s.on('close', () => resolve(performance.now() - t0));
      setTimeout(() => s.destroy(), 15_000);
    });
  const drops = (reason: string) => metric(u(1), 'ews_link_dropped_total', { reason });

  test('the dispatch link takes only boards: another address is closed at its first byte; a board address that sends no verified frame is closed after headersTimeoutMs', async () => {
    await linkProbe(Buffer.of(0xe5, 0, 0, 0, 10), '127.0.0.2');
    assert.ok((await drops('stranger')) >= 1, 'closed as a stranger, at its first byte');
    const silent = await linkProbe(Buffer.of(0xe5));
    assert.ok(silent >= 900, `a silent link is given headersTimeoutMs, not closed before (${silent.toFixed(0)} ms)`);
    const trickle = await linkProbe(Buffer.concat([Buffer.of(0xe5), Buffer.from([0, 0, 1, 0]), Buffer.alloc(40)]));
    assert.ok(trickle >= 900, `a frame that never ends is given headersTimeoutMs (${trickle.toFixed(0)} ms)`);
    assert.ok((await drops('hello')) >= 2);
  });

  test('a frame claiming more than a request may hold is refused at its length prefix: 40 connections claiming 2 MB cost the board nothing', async () => {
    const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${c.procs.get('b2')!.pid}/status`, 'utf8'))![1]) / 1024;
    const before = rssMb();
    const claim = Buffer.alloc(5 + 64 * 1024, 0x41);
    claim[0] = 0xe5;
    claim.writeUInt32BE(2 * 1024 * 1024, 1);
    await Promise.all(Array.from({ length: 40 }, () => linkProbe(claim)));
    assert.ok((await drops('oversized')) >= 40, 'each refused at its length prefix');
    assert.ok(rssMb() - before < 10, `RSS grew ${(rssMb() - before).toFixed(1)} MB`);
    assert.equal((await fetch(`${u(1)}/healthz`)).status, 200);
  });

  test("a logout is never undone by later ones: past the set's bound a viewer's logouts log the viewer out everywhere, and the operator's token stays dead on every board", async () => {
    const victim = await login(OP);
    const logout = (token: string, i = 0) => fetch(`${u(i)}/api/logout`, { method: 'POST', headers: bearer(token) });
    assert.equal((await logout(victim)).status, 200);
    for (let i = 0; i < 20; i++) assert.equal((await logout(await login(VIEW, i % 3), i % 3)).status, 200);
    for (const i of [0, 1, 2]) {
      await waitFor(`board ${i + 1} agrees`, async () => (await fetch(`${u(i)}/api/cluster`, { headers: bearer(victim) })).status === 401);
    }
    const fresh = await login(VIEW);
    assert.equal((await fetch(`${u(2)}/api/cluster`, { headers: bearer(fresh) })).status, 200, 'a viewer who logs in again is let in');
    c.headers = bearer(fresh);
  });

  test('a flood of failed logins from rotating addresses cannot lock out an operator who has logged in before', async () => {
    const { request } = await import('node:http');
    const attempt = (who: { name: string; password: string }, localAddress: string) =>
      new Promise<number>((resolve) => {
        const q = request(`${u(0)}/api/login`, { method: 'POST', localAddress, headers: { 'content-type': 'application/json' } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        q.on('error', () => resolve(0));
        q.end(JSON.stringify(who));
      });
    assert.equal(await attempt(OP, '127.0.7.1'), 200, 'she logged in from here before');
    let stop = false;
    const refused: number[] = [];
    const flood = Array.from({ length: 40 }, async (_, k) => {
      for (let n = 0; !stop; n++) refused.push(await attempt({ name: `guess${n}`, password: 'nope' }, `127.0.7.${10 + ((k * 7 + n) % 240)}`));
    });
    const mine: number[] = [];
    for (let i = 0; i < 4; i++) mine.push(await attempt(OP, '127.0.7.1'));
    stop = true;
    await Promise.all(flood);
    assert.ok(refused.filter((s) => s === 503).length > 0, 'the flood saturated the password checks');
    assert.deepEqual(mine, [200, 200, 200, 200], 'within her own rate limit (5 a minute from one address), every login goes through');
  });

  test('a junk UDP flood at a node moves nothing: strangers are dropped by address before any HMAC, junk from a board address is counted as a flood and holds a takeover on silence alone back', async (t) => {
    const dgram = await import('node:dgram');
    const { createCodec } = await import('../../shared/protocol.ts');
    const term = async () => (await getJson<{ term: number; master: string }>(`${u(0)}/api/cluster`, c.headers)).term;
    const before = await converged(c);
    const target = c.boards[2]!;
    // A valid header and a wrong tag: every packet costs the target an HMAC unless it is dropped first.
    const junk = createCodec({ key: Buffer.alloc(32, 7), cluster: 'test', boards: 3, packetBytesMax: 1400 }).encode(
      { type: 'STATE', sender: 0, term: 999_999, body: { master: 0, linknum: [0, 0, 0], runstate: [1, 1, 1] } },
      { epoch: Date.now() + 1e9, counter: 1 },
    );
    const flood = async (from: string, ms: number) => {
      const sock = dgram.createSocket('udp4');
      await new Promise<void>((r) => sock.bind(0, from, () => r()));
      let sent = 0;
      for (const until = Date.now() + ms; Date.now() < until; ) {
        for (let k = 0; k < 500; k++) sock.send(junk, target.udpPort, '127.0.0.1');
        sent += 500;
        await new Promise((r) => setImmediate(r));
      }
      await new Promise<void>((r) => sock.close(() => r()));
      return sent;
    };
    const strangers = await flood('127.0.0.2', 2000);
    const fromBoard = await flood('127.0.0.1', 2000);
    const dropped = async (reason: string) => metric(target.url, 'ews_udp_dropped_total', { reason });
    t.diagnostic(`${strangers} packets from a stranger, ${fromBoard} from a board's address`);
    assert.ok((await dropped('source')) > strangers / 4, 'strangers dropped by address');
    assert.ok((await dropped('auth')) > 0);
    assert.ok((await metric(target.url, 'ews_udp_floods_total')) >= 1, 'the flood was counted');
    const after = await converged(c);
    assert.deepEqual([after.master, after.term], [before.master, before.term], 'no takeover');
    assert.equal(await term(), before.term);
  });

  test('failed logins from many addresses cannot wipe the audit log: every command stays on every board', async () => {
    const op = await login(OP);
    for (let i = 0; i < 3; i++)
      assert.equal(
        (await fetch(`${u(0)}/cgi-bin/devices/valve3/set`, { method: 'POST', headers: { ...bearer(op), 'content-type': 'application/json' }, body: JSON.stringify({ value: 60 + i }) })).status,
        200,
      );
    const commands = async (i: number) =>
      (await getJson<Array<{ kind: string; subject: string | null; at: number }>>(`${u(i)}/api/log`, c.headers)).filter((e) => e.kind === 'command' && e.subject === 'valve3');
    const mine = (await commands(0)).slice(-3);
    const { request } = await import('node:http');
    // Three times what the log holds (auditLogMax 100 in this cluster), from 150 addresses.
    for (let n = 0; n < 300; n++)
      await new Promise<void>((resolve) => {
        const q = request(`${u(n % 3)}/api/login`, { method: 'POST', localAddress: `127.0.8.${(n % 150) + 1}`, headers: { 'content-type': 'application/json' } }, (res) => {
          res.resume();
          res.on('end', () => resolve());
        });
        q.on('error', () => resolve());
        q.end(JSON.stringify({ name: `guess${n}`, password: 'nope' }));
      });
    for (const i of [0, 1, 2]) {
      const held = await commands(i);
      assert.ok(
        mine.every((m) => held.some((e) => e.at === m.at)),
        `board ${i + 1} kept the commands`,
      );
      const failed = (await getJson<Array<{ kind: string; status: number | null }>>(`${u(i)}/api/log`, c.headers)).filter((e) => e.kind === 'login' && e.status !== 200);
      assert.ok(failed.length <= 10, `board ${i + 1} holds ${failed.length} failed logins (their share is 10)`);
    }
  });
});
