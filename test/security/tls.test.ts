// HTTPS: with `tls` every board speaks TLS only, boards forward to each other over TLS verifying
// the peer, sessions get Secure cookies and HSTS, and the UI works in real Chromium over HTTPS.
// The certificate is made by `ews gen-cert` (openssl) for the cluster's addresses.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes, X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import tls from 'node:tls';
import { hashPassword } from '../../node/auth/password.ts';
import { CHROMIUM, launchWith } from '../e2e/browser.ts';
import { BUNDLE, converged, httpGet, makeCluster, metric, rawRequest, type TestCluster, waitFor } from '../integration/harness.ts';
import { ptyDevices } from './pty-devices.ts';

const OP = { name: 'olga', password: 'operator-pass-1' };
const REHEARSED = 30;
const skipBrowser = !existsSync(CHROMIUM) && !process.env.CI ? 'needs Debian chromium (CI installs it)' : false;

describe('HTTPS', () => {
  let c: TestCluster;
  let ca: Buffer;
  let certDir: string;
  let closeDevices: () => Promise<void> = async () => {};
  const u = (i: number) => c.boards[i]!.url;
  const login = async (at: number) => {
    const r = await httpGet(`${u(at)}/api/login`, { method: 'POST', body: JSON.stringify(OP), ca, headers: { 'content-type': 'application/json' } });
    return { status: r.status, cookie: String(r.headers['set-cookie'] ?? ''), token: (JSON.parse(r.text) as { token: string }).token, hsts: r.headers['strict-transport-security'] };
  };

  before(async () => {
    const devices = await ptyDevices();
    closeDevices = devices.close;
    certDir = mkdtempSync(join(tmpdir(), 'ews-cert-'));
    const users = [{ name: OP.name, role: 'operator', passwordHash: await hashPassword(OP.password) }];
    // The certificate for the cluster's addresses (every board is on 127.0.0.1 here).
    const cfgFile = join(certDir, 'for-cert.json');
    writeFileSync(
      cfgFile,
      JSON.stringify({
        cluster: { name: 'test', key: randomBytes(32).toString('hex') },
        boards: ['b1', 'b2', 'b3'].map((id, i) => ({ id, address: '127.0.0.1', httpPort: 8001 + i, udpPort: 9001 + i })),
        auth: { disabled: true },
      }),
    );
    const made = spawnSync(process.execPath, [BUNDLE, 'gen-cert', '--config', cfgFile, '--out', certDir], { encoding: 'utf8' });
    assert.equal(made.status, 0, made.stderr);
    assert.match(made.stdout, /for 127\.0\.0\.1, localhost/);
    c = await makeCluster(
      3,
      (cfg) => {
        cfg.tls = { certFile: join(certDir, 'cluster-cert.pem'), keyFile: join(certDir, 'cluster-key.pem'), caFile: join(certDir, 'cluster-ca.pem') };
        cfg.auth = { users };
        cfg.devices = devices.devices;
        (cfg.cluster as Record<string, unknown>).rehearseRequests = REHEARSED;
      },
      { bundle: true, ca: readFileSync(join(certDir, 'cluster-ca.pem')) },
    );
    ca = c.ca!;
    c.headers = { authorization: `Bearer ${(await login(0)).token}` };
    await converged(c);
  });
  after(async () => {
    await c?.stop();
    await closeDevices();
    // The cluster's CA key and the boards' key go with the test.
    rmSync(certDir, { recursive: true, force: true });
  });

  test('gen-cert: the boards get a leaf (CA:FALSE) for their names; the CA is name-constrained and its key is not in the tls section; keys are private', () => {
    for (const k of ['cluster-key.pem', 'cluster-ca-key.pem']) assert.equal(statSync(join(certDir, k)).mode & 0o077, 0, k);
    const leaf = new X509Certificate(readFileSync(join(certDir, 'cluster-cert.pem')));
    const root = new X509Certificate(ca);
    assert.match(leaf.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
    assert.equal(leaf.ca, false, 'a board key signs nothing');
    assert.ok(leaf.checkIssued(root) && leaf.verify(root.publicKey));
    assert.equal(root.ca, true);
    const text = spawnSync('openssl', ['x509', '-in', join(certDir, 'cluster-ca.pem'), '-noout', '-ext', 'nameConstraints'], { encoding: 'utf8' }).stdout;
    assert.match(text, /Permitted:[\s\S]*IP:127\.0\.0\.1\/255\.255\.255\.255/);
    // With the CA's own key, a certificate for another site does not verify.
    const bank = join(certDir, 'bank.pem');
    spawnSync('openssl', [
      'req',
      '-x509',
      '-CA',
      join(certDir, 'cluster-ca.pem'),
      '-CAkey',
      join(certDir, 'cluster-ca-key.pem'),
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      join(certDir, 'bank-key.pem'),
      '-out',
      bank,
      '-subj',
      '/CN=bank',
      '-addext',
      'subjectAltName=DNS:www.bank.example',
    ]);
    const verify = spawnSync('openssl', ['verify', '-CAfile', join(certDir, 'cluster-ca.pem'), bank], { encoding: 'utf8' });
    assert.notEqual(verify.status, 0);
    assert.match(verify.stdout + verify.stderr, /permitted subtree violation/);
    const again = spawnSync(process.execPath, [BUNDLE, 'gen-cert', '--config', join(certDir, 'for-cert.json'), '--out', certDir], { encoding: 'utf8' });
    assert.equal(again.status, 1, 'an existing key is never overwritten');
    assert.match(again.stderr, /exists already/);
  });

  test('no board answers plain HTTP: the TLS port closes on a clear-text request', async () => {
    for (const b of c.boards) {
      const res = await rawRequest(b.httpPort, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n', { endAfterWrite: true, timeoutMs: 5000 });
      assert.doesNotMatch(res, /HTTP\/1\.1 200/, b.id);
      assert.doesNotMatch(res, /"master"/);
    }
  });

  test('a client that does not trust the cluster CA is refused by the TLS handshake', async () => {
    const err = await new Promise<Error>((resolve) => {
      const s = tls.connect({ host: '127.0.0.1', port: c.boards[1]!.httpPort }, () => resolve(new Error('connected')));
      s.on('error', resolve);
    });
    assert.match(err.message, /self[- ]signed|unable to verify|certificate/i);
  });

  test('inside TLS the dispatch link takes only a connection that showed the cluster certificate: one without is closed at its first byte', async () => {
    await new Promise<void>((resolve) => {
      const s = tls.connect({ host: '127.0.0.1', port: c.boards[1]!.httpPort, ca }, () => s.write(Buffer.of(0xe5, 0, 0, 0, 16)));
      s.on('error', () => {});
      s.on('close', () => resolve());
      setTimeout(() => s.destroy(), 10_000);
    });
    assert.ok((await metric(c.boards[1]!.url, 'ews_link_dropped_total', { reason: 'certificate' }, ca)) >= 1);
  });

  test("the nodes rehearse the master's path inside TLS, with a service session, every request answered; the master does not", async () => {
    assert.equal((JSON.parse((await httpGet(`${u(0)}/healthz`, { ca })).text) as { role: string }).role, 'master');
    for (const i of [1, 2]) await waitFor(`b${i + 1} rehearsed`, async () => (await metric(u(i), 'ews_rehearsed_requests_total', {}, ca)) >= REHEARSED, 20_000);
    for (const i of [1, 2]) assert.equal(await metric(u(i), 'ews_rehearsed_requests_total', {}, ca), REHEARSED);
    assert.equal(await metric(u(0), 'ews_rehearsed_requests_total', {}, ca), 0);
  });

  test('login over HTTPS: a Secure HttpOnly cookie and HSTS', async () => {
    const r = await login(1);
    assert.equal(r.status, 200);
    assert.match(r.cookie, /Secure/);
    assert.match(r.cookie, /HttpOnly/);
    assert.match(String(r.hsts), /max-age=\d+/);
  });

  test("control through a non-master board: relayed to the master and dispatched to the device's board, over TLS", async () => {
    const { token } = await login(2);
    const r = await httpGet(`${u(2)}/cgi-bin/devices/pump1/start`, { method: 'POST', ca, headers: { authorization: `Bearer ${token}` }, timeoutMs: 10_000 });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers['x-ews-board'], 'b2');
    const read = await httpGet(`${u(0)}/cgi-bin/devices/valve3`, { ca, headers: { authorization: `Bearer ${token}` }, timeoutMs: 10_000 });
    assert.equal(read.status, 200, read.text);
    assert.equal(read.headers['x-ews-board'], 'b3');
  });

  test('the UI in Chromium over HTTPS: log in, press an action, see it run', { skip: skipBrowser }, async () => {
    // Chromium trusts exactly this certificate's key (as a user who accepted the cluster's certificate).
    const spki = createHash('sha256')
      .update(new X509Certificate(ca).publicKey.export({ type: 'spki', format: 'der' }))
      .digest('base64');
    const browser = await launchWith([`--ignore-certificate-errors-spki-list=${spki}`]);
    try {
      const ctx = await browser.newContext({ bypassCSP: true });
      const page = await ctx.newPage();
      const res = await page.goto(`${u(1)}/`);
      assert.equal(res?.status(), 200);
      assert.equal(res?.headers()['strict-transport-security'], 'max-age=31536000');
      await page.waitForSelector('#login:not([hidden])');
      await page.fill('input[name=name]', OP.name);
      await page.fill('input[name=password]', OP.password);
      await page.click('#login button[type=submit]');
      await page.waitForSelector('#dev-pump1');
      const cookie = (await ctx.cookies()).find((k) => k.name === 'ews_session');
      assert.equal(cookie?.secure, true);
      await page.click('#dev-pump1 button[data-action=stop]');
      await page.waitForFunction(`/✓ stop/.test(document.querySelector('#dev-pump1 .result')?.textContent ?? '')`, undefined, { timeout: 15_000 });
    } finally {
      await browser.close();
    }
  });
});
