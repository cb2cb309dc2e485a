// CGI programs behind a real login: the user reaches the program (REMOTE_USER, AUTH_TYPE,
// EWS_USER_ROLE) and no credential does; a local redirect (Location: /path) is served inside the
// cluster, from the master's own run and from another board's, for the same user, within
// REDIRECT_HOPS_MAX hops; a path the master answers itself goes to the client as a 302; and a
// keyed POST whose board is SIGKILLed mid-run is never run twice (IDEMPOTENCY_UNKNOWN).
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { hashPassword } from '../../node/auth/password.ts';
import { converged, makeCluster, outcome, retryUntil, type TestCluster, waitFor } from './harness.ts';

const program = (dir: string, name: string, body: string) => {
  writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
  chmodSync(join(dir, name), 0o755);
};

describe('CGI programs with login', () => {
  let c: TestCluster;
  const b1 = mkdtempSync(join(tmpdir(), 'ews-cgi-b1-'));
  const b2 = mkdtempSync(join(tmpdir(), 'ews-cgi-b2-'));
  const runs = join(b2, 'runs.log');
  const stateDir = mkdtempSync(join(tmpdir(), 'ews-cgi-state-'));
  let token = '';
  const ask = (i: number, path: string, init: RequestInit = {}) =>
    fetch(`${c.boards[i]!.url}${path}`, {
      redirect: 'manual',
      ...init,
      headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) },
      signal: AbortSignal.timeout(15_000),
    });

  before(async () => {
    for (const dir of [b1, b2]) {
      program(dir, 'who.sh', 'printf "Content-Type: text/plain\\n\\n"\nenv | grep -E "^(REMOTE_USER|AUTH_TYPE|EWS_USER_ROLE|PATH_INFO|REQUEST_METHOD|HTTP_AUTHORIZATION|EWS_BOARD)=" | sort');
      program(dir, 'loop.sh', 'printf "Location: /cgi-bin/loop.sh\\n\\n"');
      program(dir, 'away.sh', 'printf "Location: /api/cluster\\n\\n"');
    }
    // hop.sh runs only on the master (b1), hop2.sh only on b2: both ways a redirect comes back.
    program(b1, 'hop.sh', 'printf "Location: /cgi-bin/who.sh/from-hop\\n\\n"');
    program(b2, 'hop2.sh', 'printf "Location: /cgi-bin/who.sh/from-hop2\\n\\n"');
    program(b2, 'slow.sh', `echo "$EWS_BOARD" >> ${runs}\nsleep 3\nprintf "Content-Type: text/plain\\n\\ndone"`);
    const passwordHash = await hashPassword('ada-pass-123');
    c = await makeCluster(2, (cfg) => {
      cfg.stateDir = stateDir;
      cfg.auth = { users: [{ name: 'ada', role: 'operator', passwordHash }] };
      cfg.cgi = { dir: b1, programs: { 'slow.sh': { timeoutMs: 10_000 } } };
      (cfg.boards as Array<Record<string, unknown>>)[1]!.cgiDir = b2;
    });
    await waitFor('b1 master', async () => ((await (await fetch(`${c.boards[0]!.url}/healthz`)).json()) as { master: string }).master === 'b1');
    const r = await fetch(`${c.boards[0]!.url}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ada', password: 'ada-pass-123' }) });
    token = ((await r.json()) as { token: string }).token;
    c.headers = { authorization: `Bearer ${token}` };
    await converged(c);
    await waitFor('b2 announced its programs', async () => (await ask(0, '/cgi-bin/hop2.sh')).status !== 404, 15_000, 100);
  });
  after(async () => {
    await c.stop();
    rmSync(b1, { recursive: true, force: true });
    rmSync(b2, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
  });

  const envOf = async (r: Response) =>
    Object.fromEntries(
      (await r.text())
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );

  test('the logged-in user reaches the program; the credential does not; nobody logged in gets 401', async () => {
    const r = await ask(1, '/cgi-bin/who.sh/x');
    assert.equal(r.status, 200);
    const env = await envOf(r);
    assert.deepEqual([env.REMOTE_USER, env.AUTH_TYPE, env.EWS_USER_ROLE, env.HTTP_AUTHORIZATION], ['ada', 'Bearer', 'operator', undefined]);
    assert.equal((await fetch(`${c.boards[0]!.url}/cgi-bin/who.sh`)).status, 401);
  });

  test("a local redirect is served inside the cluster for the same user, from the master's run and another board's", async () => {
    for (const [name, pathInfo] of [
      ['hop.sh', '/from-hop'],
      ['hop2.sh', '/from-hop2'],
    ] as const) {
      const r = await ask(1, `/cgi-bin/${name}`, { method: 'POST' });
      assert.equal(r.status, 200, `${name}: the answer is the path's, not a 302`);
      assert.equal(r.headers.get('x-ews-redirect'), null, 'the mark never reaches a client');
      const env = await envOf(r);
      assert.deepEqual([env.PATH_INFO, env.REQUEST_METHOD, env.REMOTE_USER], [pathInfo, 'GET', 'ada'], `${name}: a GET of the path, as ada`);
    }
  });

  test('redirects past 3 hops are a 502 CGI_REDIRECT_LOOP; a path the master answers itself is a 302 to the client', async () => {
    const loop = await ask(0, '/cgi-bin/loop.sh');
    assert.equal(loop.status, 502);
    assert.equal(((await loop.json()) as { error: { code: string } }).error.code, 'CGI_REDIRECT_LOOP');
    const away = await ask(0, '/cgi-bin/away.sh');
    assert.deepEqual([away.status, away.headers.get('location')], [302, '/api/cluster']);
  });

  test('a keyed POST across a SIGKILL of its board: the retry is IDEMPOTENCY_UNKNOWN, the program ran once', async () => {
    const post = () => outcome(ask(0, '/cgi-bin/slow.sh', { method: 'POST', headers: { 'idempotency-key': 'slow-1' } }));
    const first = post();
    await waitFor('the program started on b2', async () => existsSync(runs) && readFileSync(runs, 'utf8').trim().length > 0, 10_000, 5);
    await c.kill('b2');
    const a = await first;
    assert.ok(a.status === 0 || a.status >= 500, `the first attempt failed with its board: ${a.status} ${a.text}`);
    c.start('b2');
    await converged(c);
    const retry = await retryUntil(409, post, 20_000);
    assert.match(retry.text, /IDEMPOTENCY_UNKNOWN/);
    // The first run, orphaned by the kill, finished its sleep meanwhile; nothing ran it again.
    assert.deepEqual(readFileSync(runs, 'utf8').trim().split('\n'), ['b2']);
  });
});
