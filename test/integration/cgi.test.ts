// CGI programs through the cluster: a program in the boards' cgi directory answers through any
// board; credentials never reach it, nor a user the client names itself (x-ews-user); a keyed
// POST runs once and its retry is replayed.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { converged, makeCluster, ROOT, type TestCluster, waitFor } from './harness.ts';

describe('CGI programs', () => {
  let c: TestCluster;
  const dir = mkdtempSync(join(tmpdir(), 'ews-cgi-it-'));
  const only = mkdtempSync(join(tmpdir(), 'ews-cgi-it-b2-'));
  const count = join(dir, 'runs.log');
  before(async () => {
    writeFileSync(join(dir, 'env.sh'), '#!/bin/sh\nprintf "Content-Type: text/plain\\n\\n"\nenv | sort\n');
    writeFileSync(join(dir, 'bump.sh'), `#!/bin/sh\necho "$EWS_BOARD" >> ${count}\nprintf "Status: 201 Bumped\\nContent-Type: application/json\\n\\n{\\"board\\":\\"%s\\"}" "$EWS_BOARD"\n`);
    writeFileSync(join(dir, 'broken.sh'), '#!/bin/sh\necho no headers here\n');
    writeFileSync(join(dir, 'meter.py'), readFileSync(join(ROOT, 'examples/cgi/meter.py')));
    for (const f of ['env.sh', 'bump.sh', 'broken.sh', 'meter.py']) chmodSync(join(dir, f), 0o755);
    // b2 has every program b1 has, and one of its own.
    for (const f of ['env.sh', 'bump.sh', 'broken.sh', 'meter.py']) {
      writeFileSync(join(only, f), readFileSync(join(dir, f)));
      chmodSync(join(only, f), 0o755);
    }
    writeFileSync(join(only, 'only-here.sh'), '#!/bin/sh\nprintf "Content-Type: text/plain\\n\\n%s" "$EWS_BOARD"\n');
    chmodSync(join(only, 'only-here.sh'), 0o755);
    writeFileSync(join(only, 'only-env.sh'), readFileSync(join(dir, 'env.sh')));
    chmodSync(join(only, 'only-env.sh'), 0o755);
    c = await makeCluster(2, (cfg) => {
      cfg.cgi = { dir, programs: { 'bump.sh': { timeoutMs: 2000 } } };
      (cfg.boards as Array<Record<string, unknown>>)[1]!.cgiDir = only;
    });
    await converged(c);
  });
  after(async () => {
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(only, { recursive: true, force: true });
  });

  test('a program only one board has runs there, asked through another; one nobody has is a 404', async () => {
    const ask = () => fetch(`${c.boards[0]!.url}/cgi-bin/only-here.sh`);
    await waitFor('b2 announced its programs', async () => (await ask()).status === 200, 15_000, 100);
    for (let i = 0; i < 5; i++) assert.equal(await (await ask()).text(), 'b2');
    const nobody = await fetch(`${c.boards[0]!.url}/cgi-bin/nowhere.sh`);
    assert.equal(nobody.status, 404);
    assert.match(((await nobody.json()) as { error: { message: string } }).error.message, /no board has a program nowhere\.sh/);
  });

  test('a program answers through any board, with the meta-variables and without credentials', async () => {
    const r = await fetch(`${c.boards[1]!.url}/cgi-bin/env.sh/a/b?x=1`, { headers: { cookie: 'ews_session=secret', 'x-test': 'yes' } });
    assert.equal(r.status, 200);
    const env = Object.fromEntries(
      (await r.text())
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    assert.equal(env.GATEWAY_INTERFACE, 'CGI/1.1');
    assert.equal(env.SCRIPT_NAME, '/cgi-bin/env.sh');
    assert.equal(env.PATH_INFO, '/a/b');
    assert.equal(env.QUERY_STRING, 'x=1');
    assert.equal(env.REMOTE_ADDR, '127.0.0.1');
    assert.equal(env.HTTP_X_TEST, 'yes');
    assert.equal(env.HTTP_COOKIE, undefined);
    assert.ok(['b1', 'b2'].includes(env.EWS_BOARD!));
  });

  test('a program a node runs sees the Host its client used, as one the master runs does', async () => {
    const master = (await converged(c)).master;
    assert.equal(master, 'b1', 'the staggered boot makes b1 the master, so b2 runs only-env.sh as a node');
    const b1 = new URL(c.boards[0]!.url);
    const ask = () => fetch(`${c.boards[0]!.url}/cgi-bin/only-env.sh`);
    await waitFor('b2 announced its programs', async () => (await ask()).status === 200, 15_000, 100);
    const env = Object.fromEntries(
      (await (await ask()).text())
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    assert.deepEqual([env.EWS_BOARD, env.HTTP_HOST, env.SERVER_NAME, env.SERVER_PORT], ['b2', b1.host, b1.hostname, b1.port]);
  });

  test('a keyed POST runs once; its retry through another board is replayed', async () => {
    const post = (i: number) => fetch(`${c.boards[i]!.url}/cgi-bin/bump.sh`, { method: 'POST', headers: { 'idempotency-key': 'bump-1' }, body: '' });
    const first = await post(0);
    assert.equal(first.status, 201);
    const again = await post(1);
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(readFileSync(count, 'utf8').trim().split('\n').length, 1, 'the program ran once');
  });

  test('the example program, examples/cgi/meter.py, answers as its comment says', async () => {
    const r = await fetch(`${c.boards[0]!.url}/cgi-bin/meter.py/flow?unit=l`, { method: 'POST', body: 'abc' });
    assert.equal(r.status, 200);
    const j = (await r.json()) as Record<string, unknown>;
    assert.deepEqual({ path: j.path, query: j.query, body: j.body_bytes, client: j.client }, { path: '/flow', query: 'unit=l', body: 3, client: '127.0.0.1' });
  });

  test('every call of a program is in the audit log: who, program, method, status, board', async () => {
    await fetch(`${c.boards[0]!.url}/cgi-bin/env.sh/logged`);
    await waitFor(
      'the call in the log',
      async () => {
        const log = (await (await fetch(`${c.boards[1]!.url}/api/log`)).json()) as Array<{ kind: string; text: string }>;
        return log.some((e) => e.kind === 'command' && /^GET env\.sh\/logged → 200 on b[12]$/.test(e.text));
      },
      10_000,
      50,
    );
  });

  test('a program without a header block is a 502 CGI_BAD_HEADER; an unknown one a 404', async () => {
    const bad = await fetch(`${c.boards[0]!.url}/cgi-bin/broken.sh`);
    assert.equal(bad.status, 502);
    assert.equal(((await bad.json()) as { error: { code: string } }).error.code, 'CGI_BAD_HEADER');
    assert.equal((await fetch(`${c.boards[0]!.url}/cgi-bin/nothing.sh`)).status, 404);
  });
});

describe('CGI programs the master runs itself (one board)', () => {
  let c: TestCluster;
  const dir = mkdtempSync(join(tmpdir(), 'ews-cgi-it-one-'));
  before(async () => {
    writeFileSync(join(dir, 'env.sh'), '#!/bin/sh\nprintf "Content-Type: text/plain\\n\\n"\nenv | sort\n');
    chmodSync(join(dir, 'env.sh'), 0o755);
    c = await makeCluster(1, (cfg) => {
      cfg.cgi = { dir };
    });
    await converged(c);
  });
  after(async () => {
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("a client's own x-ews-user names nobody: the program sees no user; the client's other headers pass", async () => {
    const r = await fetch(`${c.boards[0]!.url}/cgi-bin/env.sh`, { headers: { 'x-ews-user': 'eve admin bearer', 'x-test': 'yes' } });
    assert.equal(r.status, 200);
    const env = Object.fromEntries(
      (await r.text())
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    assert.deepEqual([env.EWS_BOARD, env.HTTP_X_TEST], ['b1', 'yes']);
    assert.deepEqual([env.REMOTE_USER, env.EWS_USER_ROLE, env.AUTH_TYPE], [undefined, undefined, undefined]);
  });
});
