// The command line as an operator meets it: help, passwords typed on a terminal or piped, status
// with a login, and a board that refuses an address this machine does not own.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PasswordVerifier } from '../../node/auth/password.ts';
import { makeCluster, ROOT, type TestCluster, waitFor } from './harness.ts';

const CLI = join(ROOT, 'node/cli.ts');
const verifier = new PasswordVerifier(4);
after(() => verifier.close());
const verifyPassword = (password: string, hash: string) => verifier.verify(password, hash);
const ews = (args: string[], input?: string) => spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: ROOT, encoding: 'utf8', input, timeout: 60_000 });
/** The CLI without blocking this process's loop (a server here must answer it). */
const ewsAsync = (args: string[]) =>
  new Promise<{ code: number; stderr: string }>((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: ROOT, timeout: 60_000 }, (err, _stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stderr }));
  });
const onTerminal = (answers: string[], args: string[]) =>
  spawnSync('python3', [join(ROOT, 'test/peers/pty-run.py'), ...answers, '--', process.execPath, '--import', 'tsx', CLI, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });

test('--help exits 0 with the usage, for the tool and each command', () => {
  for (const args of [['--help'], ['help'], ['start', '--help'], ['status', '-h'], ['hash-password', '--help']]) {
    const r = ews(args);
    assert.equal(r.status, 0, `ews ${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stdout, /usage:\n {2}ews start/);
  }
  assert.equal(ews(['nonsense']).status, 2, 'an unknown command is still a usage error');
  const typo = ews(['stauts', '--url', 'http://127.0.0.1:1']);
  assert.equal(typo.status, 2);
  assert.match(typo.stderr, /unknown command stauts \(did you mean status\?\)/);
  assert.match(ews(['check-config', '--cofig', 'x.json']).stderr, /did you mean --config\?/);
});

test('status says what failed: a refused connection, and a certificate not trusted (with the fix)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ews-cli-'));
  const server = https.createServer({ key: '', cert: '' });
  try {
    const probe = net.createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const freePort = (probe.address() as net.AddressInfo).port;
    probe.close();
    const refused = await ewsAsync(['status', '--url', `http://127.0.0.1:${freePort}`]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /connection refused: no board listens there/);
    const made = spawnSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        join(dir, 'k.pem'),
        '-out',
        join(dir, 'c.pem'),
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { encoding: 'utf8' },
    );
    assert.equal(made.status, 0, made.stderr);
    server.setSecureContext({ key: readFileSync(join(dir, 'k.pem')), cert: readFileSync(join(dir, 'c.pem')) });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const untrusted = await ewsAsync(['status', '--url', `https://127.0.0.1:${(server.address() as net.AddressInfo).port}`]);
    assert.equal(untrusted.code, 1);
    assert.match(untrusted.stderr, /certificate is not trusted \(DEPTH_ZERO_SELF_SIGNED_CERT\).*NODE_EXTRA_CA_CERTS=/);
  } finally {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('hash-password from a pipe takes the first line only', async () => {
  const r = ews(['hash-password'], 'first-line-pw\nsecond line\n');
  assert.equal(r.status, 0, r.stderr);
  assert.ok(await verifyPassword('first-line-pw', r.stdout.trim()), 'the hash is of the first line');
  assert.ok(!(await verifyPassword('first-line-pw\nsecond line', r.stdout.trim())));
});

test('hash-password on a terminal: asked twice, never echoed; a mismatch is refused', async () => {
  const ok = onTerminal(['password:', 'typed-secret-1', 'again:', 'typed-secret-1'], ['hash-password']);
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  assert.ok(!ok.stdout.includes('typed-secret-1'), `the terminal showed the password:\n${ok.stdout}`);
  const hash = /scrypt\$\S+/.exec(ok.stdout)?.[0] ?? '';
  assert.ok(await verifyPassword('typed-secret-1', hash), `a hash of the password: ${ok.stdout}`);
  const differ = onTerminal(['password:', 'typed-secret-1', 'again:', 'typed-secret-2'], ['hash-password']);
  assert.equal(differ.status, 2);
  assert.match(differ.stdout, /the two passwords differ/);
});

describe('ews status --user', () => {
  let c: TestCluster;
  before(async () => {
    const { hashPassword } = await import('../../node/auth/password.ts');
    const hash = await hashPassword('viewer-pass-1');
    c = await makeCluster(1, (cfg) => {
      cfg.auth = { users: [{ name: 'ada', role: 'viewer', passwordHash: hash }] };
    });
    await waitFor('b1 master', async () => ((await (await fetch(`${c.boards[0]!.url}/healthz`)).json()) as { role: string }).role === 'master');
  });
  after(() => c.stop());

  test('logs in with the password typed at the prompt and shows boards and devices', () => {
    const r = onTerminal(['password:', 'viewer-pass-1'], ['status', '--url', c.boards[0]!.url, '--user', 'ada']);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /cluster test {2}master b1/);
    assert.match(r.stdout, /^device +state/m);
    assert.match(r.stdout, /^no active alarms$/m);
    assert.ok(!r.stdout.includes('viewer-pass-1'));
  });

  test('a wrong password is refused with the reason, exit 1', () => {
    const r = ews(['status', '--url', c.boards[0]!.url, '--user', 'ada'], 'wrong-password\n');
    assert.equal(r.status, 1);
    assert.match(r.stderr, /login as ada refused: 401/);
  });

  test('without credentials it says how to give them', () => {
    const r = ews(['status', '--url', c.boards[0]!.url]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /--user NAME/);
  });
});

test('ews start refuses an address this machine does not own (exit 2), even with a VIP configured', (t) => {
  // In a network namespace of its own: had the check failed, the board would claim nothing outside it.
  const dir = mkdtempSync(join(tmpdir(), 'ews-foreign-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'cluster.json');
  const key = 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4';
  writeFileSync(
    file,
    JSON.stringify({
      cluster: { name: 'x', key, vip: { address: '10.254.0.100/24', interface: 'lo' } },
      boards: [{ id: 'far', address: '10.254.0.11', httpPort: 18080, udpPort: 18081 }],
      auth: { disabled: true },
    }),
  );
  const r = spawnSync('unshare', ['-rn', process.execPath, '--import', 'tsx', CLI, 'start', '--config', file, '--board', 'far'], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /boards\[0\]\.address: 10\.254\.0\.11 is not an address of this machine .*--no-address-check/);
});
