// Authentication, roles, CSRF, sessions across boards and failover, rate limits, traversal, headers.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { makeCluster, rawRequest, waitFor, type TestCluster } from './harness.ts';
import { hashPassword } from '../../node/auth/password.ts';
import { demoDevices } from '../../dev/demo.ts';

const OP = { name: 'olga', password: 'operator-pass-1' };
const VIEW = { name: 'victor', password: 'viewer-pass-1' };


describe('security', () => {
  let c: TestCluster;
  let u: (i: number) => string;
  const login = async (who: { name: string; password: string }, at = 0) => {
    const r = await fetch(`${u(at)}/api/login`, { method: 'POST', body: JSON.stringify(who) });
    return { status: r.status, cookie: r.headers.get('set-cookie') ?? '', json: (await r.json()) as { token: string; csrf: string; role: string } };
  };
  before(async () => {
    const users = [
      { name: OP.name, role: 'operator', passwordHash: await hashPassword(OP.password) },
      { name: VIEW.name, role: 'viewer', passwordHash: await hashPassword(VIEW.password) },
    ];
    c = await makeCluster(3, (cfg) => {
      cfg.auth = { users };
      cfg.devices = demoDevices(['b1', 'b2', 'b3']);
      cfg.schedules = [{ cron: '* * * * * *', device: 'valve3', action: 'set', value: 10 }];
    }, { args: ['--simulate-devices'] });
    u = (i) => c.boards[i]!.url;
    // Every board up and agreeing (a board still booting refuses connections).
    await waitFor('cluster up', async () => (await Promise.all([0, 1, 2].map(async (i) => ((await (await fetch(`${u(i)}/healthz`)).json()) as { master: string }).master))).every((m) => m === 'b1'));
  });
  after(() => c.stop());

  test('no spelling of a path gets past the guard: dot segments, encoded dots and slashes, absolute form are 400 on every board', async () => {
    const spellings = ['/x/../api/devices', '/./api/devices', '/%2E%2e/cgi-bin/devices/pump1', '/cgi-bin/devices%2fpump1', '//api/devices', 'http://x/api/devices'];
    for (const i of [0, 1, 2]) {
      for (const target of spellings) {
        const res = await rawRequest(c.boards[i]!.httpPort, `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`, { endAfterWrite: true });
        assert.match(res, /^HTTP\/1\.1 400 /, `board ${i + 1}, ${target}: ${res.split('\r\n')[0]}`);
        assert.doesNotMatch(res, /"points"|pump1.*speed/, 'no device data');
      }
    }
  });

  test('without a session: control 401, data 401; health and the UI\'s files are public', async () => {
    for (const [path, method] of [['/cgi-bin/devices/pump1/start', 'POST'], ['/cgi-bin/devices/pump1', 'GET'], ['/api/devices', 'GET'], ['/api/cluster', 'GET'], ['/api/events', 'GET'], ['/echo?ms=9800', 'GET'], ['/cgi-bin/echo?ms=9800', 'GET']] as const) {
      const r = await fetch(`${u(1)}${path}`, { method });
      assert.equal(r.status, 401, `${method} ${path}`);
      assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'UNAUTHENTICATED');
    }
    assert.equal((await fetch(`${u(1)}/healthz`)).status, 200);
    assert.equal((await fetch(`${u(1)}/`)).status, 200);
    assert.equal((await fetch(`${u(1)}/app.js`)).status, 200);
  });

  test('login: wrong password 401; right one gives an HttpOnly SameSite=Strict cookie, a token and a CSRF token', async () => {
    assert.equal((await login({ name: OP.name, password: 'nope' })).status, 401);
    assert.equal((await login({ name: 'nobody', password: 'nope' })).status, 401);
    const r = await login(OP);
    assert.equal(r.status, 200);
    assert.match(r.cookie, /^ews_session=v1\./);
    assert.match(r.cookie, /HttpOnly/);
    assert.match(r.cookie, /SameSite=Strict/);
    assert.doesNotMatch(r.cookie, /Secure/, 'no TLS here');
    assert.equal(r.json.role, 'operator');
    assert.ok(r.json.csrf.length >= 20);
  });

  test('a viewer reads but cannot control (403)', async () => {
    const v = await login(VIEW);
    const auth = { authorization: `Bearer ${v.json.token}` };
    assert.equal((await fetch(`${u(0)}/cgi-bin/devices/pump1`, { headers: auth })).status, 200);
    const r = await fetch(`${u(0)}/cgi-bin/devices/pump1/start`, { method: 'POST', headers: auth });
    assert.equal(r.status, 403);
    assert.match(((await r.json()) as { error: { message: string } }).error.message, /viewer/);
  });

  test('an operator with a bearer token controls from any board', async () => {
    const o = await login(OP, 2);
    const r = await fetch(`${u(2)}/cgi-bin/devices/pump1/start`, { method: 'POST', headers: { authorization: `Bearer ${o.json.token}` } });
    assert.equal(r.status, 200);
  });

  test('cookie sessions: state changes need the CSRF token and a same-site Origin; cross-site POST 403', async () => {
    const o = await login(OP);
    const cookie = o.cookie.split(';')[0]!;
    const post = (headers: Record<string, string>) => fetch(`${u(1)}/cgi-bin/devices/valve3/open`, { method: 'POST', headers: { cookie, ...headers } });
    assert.equal((await post({ origin: u(1) })).status, 403, 'no CSRF token');
    assert.equal((await post({ origin: 'http://evil.example', 'x-csrf-token': o.json.csrf })).status, 403, 'cross-site');
    assert.equal((await post({ 'x-csrf-token': o.json.csrf })).status, 403, 'no Origin or Referer');
    assert.equal((await post({ origin: u(1), 'x-csrf-token': 'x'.repeat(32) })).status, 403, 'wrong token');
    assert.equal((await post({ origin: u(1), 'x-csrf-token': o.json.csrf })).status, 200);
    assert.equal((await post({ origin: u(2), 'x-csrf-token': o.json.csrf })).status, 200, 'another board of the cluster is same-site');
    // Reading needs no CSRF token.
    assert.equal((await fetch(`${u(1)}/api/devices`, { headers: { cookie } })).status, 200);
  });

  test('logout revokes the session on every board, not just the cookie', async () => {
    const o = await login(OP, 0);
    const headers = { authorization: `Bearer ${o.json.token}` };
    assert.equal((await fetch(`${u(2)}/api/devices`, { headers })).status, 200);
    assert.equal((await fetch(`${u(0)}/api/logout`, { method: 'POST', headers })).status, 200);
    assert.equal((await fetch(`${u(0)}/api/devices`, { headers })).status, 401);
    await waitFor('revoked on the other boards', async () => (await fetch(`${u(2)}/api/devices`, { headers })).status === 401 && (await fetch(`${u(1)}/api/session`, { headers })).status === 401);
    const other = await login(OP, 1);
    assert.equal((await fetch(`${u(2)}/api/devices`, { headers: { authorization: `Bearer ${other.json.token}` } })).status, 200, 'other sessions live on');
  });

  test('forged and tampered tokens are refused', async () => {
    const o = await login(OP);
    const [v, payload] = o.json.token.split('.');
    const elevated = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), role: 'operator', exp: 9e9 })).toString('base64url');
    for (const t of [`${v}.${elevated}.${o.json.token.split('.')[2]}`, 'v1.e30.AAAA', 'garbage']) {
      assert.equal((await fetch(`${u(0)}/api/devices`, { headers: { authorization: `Bearer ${t}` } })).status, 401);
    }
  });

  test('CORS: the cluster\'s own origins may call a board; others may not', async () => {
    const pre = await fetch(`${u(0)}/api/devices`, { method: 'OPTIONS', headers: { origin: u(1), 'access-control-request-method': 'POST' } });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), u(1));
    assert.equal(pre.headers.get('access-control-allow-credentials'), 'true');
    const evil = await fetch(`${u(0)}/healthz`, { headers: { origin: 'http://evil.example' } });
    assert.equal(evil.headers.get('access-control-allow-origin'), null);
  });

  test('security headers on pages and APIs', async () => {
    for (const path of ['/', '/healthz', '/api/devices']) {
      const r = await fetch(`${u(1)}${path}`);
      const csp = r.headers.get('content-security-policy') ?? '';
      assert.match(csp, /frame-ancestors 'none'/, path);
      assert.match(csp, /default-src 'self'/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(r.headers.get('x-frame-options'), 'DENY');
    }
  });

  test('path traversal is impossible: every spelling is a 404, the board stays up', async () => {
    for (const p of ['/../../etc/passwd', '/%2e%2e/%2e%2e/etc/passwd', '/..%2f..%2fpackage.json', '/node/cli.ts', '/src/app.js', '/.%2e/README.md', '/index.html/../../x', '/%00index.html', '/\\..\\..\\etc\\passwd']) {
      const res = await rawRequest(c.boards[0]!.httpPort, `GET ${p} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, { timeoutMs: 5000 });
      assert.match(res, /^HTTP\/1\.1 (404|400)/, p);
      assert.doesNotMatch(res, /root:|"name": "ews"|import /, p);
    }
    assert.equal((await fetch(`${u(0)}/healthz`)).status, 200);
  });

  test('schedules (trusted, internal) still run with login on', async () => {
    const { metric } = await import('./harness.ts');
    await waitFor('a scheduled action ran', async () => (await metric(u(0), 'ews_schedule_runs_total', { status: '200' })) >= 2, 10_000);
    assert.equal(await metric(u(0), 'ews_schedule_runs_total', { status: '401' }), 0);
  });

  test('login attempts are rate limited (429 with Retry-After)', async () => {
    let limited: Response | undefined;
    for (let i = 0; i < 15 && !limited; i++) {
      const r = await fetch(`${u(2)}/api/login`, { method: 'POST', body: JSON.stringify({ name: `guess${i % 2}`, password: 'x' }) });
      if (r.status === 429) limited = r;
    }
    assert.ok(limited, 'limited within 15 attempts');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
  });

  test('a Host that is not the cluster\'s is refused (DNS rebinding); its own names pass', async () => {
    const port = c.boards[0]!.httpPort;
    const ask = (host: string) => rawRequest(port, `GET /healthz HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`, { endAfterWrite: true });
    assert.match(await ask('evil.example'), /^HTTP\/1\.1 400 [\s\S]*unknown Host/);
    assert.match(await ask(`evil.example:${port}`), /^HTTP\/1\.1 400 /);
    assert.match(await ask(`127.0.0.1:${port}`), /^HTTP\/1\.1 200 /);
    assert.match(await ask('localhost'), /^HTTP\/1\.1 200 /);
  });

  test('a stranger who exhausts a user\'s login attempts does not lock the real user out', async () => {
    const { request } = await import('node:http');
    const port = c.boards[1]!.httpPort;
    // From another local address (127.0.0.2): wrong passwords for the operator until refused.
    const from2 = (body: string) => new Promise<number>((resolve, reject) => {
      const q = request({ host: '127.0.0.1', port, path: '/api/login', method: 'POST', localAddress: '127.0.0.2', headers: { 'content-type': 'application/json' } }, (r) => {
        r.resume();
        r.on('end', () => resolve(r.statusCode ?? 0));
      });
      q.on('error', reject);
      q.end(body);
    });
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push(await from2(JSON.stringify({ name: OP.name, password: 'wrong' })));
    assert.ok(statuses.includes(429), `the stranger is limited: ${statuses.join(' ')}`);
    const r = await fetch(`${u(1)}/api/login`, { method: 'POST', body: JSON.stringify(OP) });
    assert.equal(r.status, 200, 'the operator, from their own address, logs in');
  });

  test('a session stays valid on every board and across a master failover', async () => {
    const o = await login(OP, 1);
    const headers = { authorization: `Bearer ${o.json.token}` };
    await c.kill('b1');
    await waitFor('new master', async () => ((await (await fetch(`${u(2)}/healthz`)).json()) as { master: string }).master === 'b2');
    const r = await waitFor('control through the new master', async () => {
      const x = await fetch(`${u(2)}/cgi-bin/devices/pump1/stop`, { method: 'POST', headers });
      return x.status === 200 ? x : undefined;
    });
    assert.equal(r.headers.get('x-ews-board'), 'b2');
    assert.equal((await fetch(`${u(1)}/api/session`, { headers })).status, 200);
  });
});
