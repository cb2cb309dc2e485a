// The README's first command: `ews demo` comes up, pulls and replugs a board on stdin, quits.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freePorts, ROOT } from './harness.ts';

/** A base port with n free ports in a row (the demo numbers its boards' ports consecutively). */
async function consecutiveFree(n: number, avoid?: number): Promise<number> {
  for (let tries = 0; tries < 50; tries++) {
    const [base] = await freePorts(1);
    // Not overlapping the other run (ports may come back in any order).
    if (base! + n > 65535 || (avoid !== undefined && base! < avoid + n && base! + n > avoid)) continue;
    let all = true;
    for (let k = 1; k < n && all; k++) all = await portFree(base! + k);
    if (all) return base!;
  }
  throw new Error('no run of free ports');
}

async function portFree(port: number): Promise<boolean> {
  const net = await import('node:net');
  const dgram = await import('node:dgram');
  const tcp = await new Promise<boolean>((r) => {
    const s = net
      .createServer()
      .once('error', () => r(false))
      .listen(port, '127.0.0.1', () => s.close(() => r(true)));
  });
  const udp = await new Promise<boolean>((r) => {
    const u = dgram.createSocket('udp4').once('error', () => r(false));
    u.bind(port, '127.0.0.1', () => u.close(() => r(true)));
  });
  return tcp && udp;
}

test('ews demo: 3 boards, pull the master, a new master is announced, replug, quit', async () => {
  const http = await consecutiveFree(3);
  const udp = await consecutiveFree(3, http);
  const p = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'dev/demo.ts')], {
    cwd: ROOT,
    env: { ...process.env, EWS_DEMO_HTTP_PORT: String(http), EWS_DEMO_UDP_PORT: String(udp!) },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  const waitFor = (re: RegExp, ms = 20_000) =>
    new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no ${re} in demo output:\n${out}`)), ms);
      const check = () => {
        if (re.test(out)) {
          clearTimeout(t);
          p.stdout!.off('data', check);
          resolve();
        }
      };
      p.stdout!.on('data', check);
      check();
    });
  p.stdout!.on('data', (d) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => p.once('exit', (code) => r(code)));
  try {
    await waitFor(/commands: pull BOARD/);
    assert.match(out, new RegExp(`ews1  http://127\\.0\\.0\\.1:${http}/`));
    // The demo made fresh credentials and printed them.
    const pw = /operator\s+password (\S+)/.exec(out)?.[1];
    assert.ok(pw, `operator password printed:\n${out}`);
    assert.equal((await fetch(`http://127.0.0.1:${http + 1}/cgi-bin/devices/pump1`)).status, 401, 'login is on');
    const login = await fetch(`http://127.0.0.1:${http}/api/login`, { method: 'POST', body: JSON.stringify({ name: 'operator', password: pw }) });
    const { token } = (await login.json()) as { token: string };
    const r = await fetch(`http://127.0.0.1:${http + 1}/cgi-bin/devices/pump1/start`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    assert.equal(r.status, 200);
    // The printed curl lines work as printed: they carry an operator's token.
    const printed = /^ {2}T=(\S+)$/m.exec(out)?.[1];
    assert.ok(printed, `a token line:\n${out}`);
    // Every suggested line runs as pasted into bash, with the printed T.
    const block = /try \(each line[^\n]*\n([\s\S]*?)\ncommands:/.exec(out)?.[1] ?? '';
    const lines = block
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l.startsWith('curl '));
    assert.ok(lines.length >= 8, `the suggested lines:\n${block}`);
    for (const line of lines) {
      const run = await new Promise<{ code: number | null; err: string }>((resolve) => {
        const sh = spawn('bash', ['-c', line], { env: { ...process.env, T: printed }, stdio: ['ignore', 'ignore', 'pipe'] });
        let err = '';
        sh.stderr!.on('data', (d) => (err += d));
        sh.once('exit', (code) => resolve({ code, err }));
      });
      assert.equal(run.code, 0, `${line}\n${run.err}`);
    }
    assert.equal((await fetch(`http://127.0.0.1:${http}/cgi-bin/devices/pump1/stop`, { method: 'POST', headers: { authorization: `Bearer ${printed}` } })).status, 200);
    const dir = /config (\/\S+)\/cluster\.json/.exec(out)?.[1];
    assert.ok(dir && existsSync(dir));
    assert.equal(r.headers.get('x-ews-board'), 'ews2');
    p.stdin!.write('pull ews1\n');
    await waitFor(/master is now ews2/);
    p.stdin!.write('plug ews1\n');
    await waitFor(/ews1: cable plugged back in/);
    p.stdin!.write('quit\n');
    assert.equal(await exited, 0);
    assert.equal(existsSync(dir), false, 'the temp dir (cluster key, password hashes) is gone');
  } finally {
    p.kill();
  }
});

test('ews demo on a busy port names it and the variable that moves it (exit 2), leaving nothing behind', async () => {
  const http = await consecutiveFree(3);
  const udp = await consecutiveFree(3, http);
  const net = await import('node:net');
  const squatter = net.createServer().listen(http + 1, '127.0.0.1');
  await new Promise((r) => squatter.once('listening', r));
  try {
    const before = readdirSync(tmpdir()).filter((f) => f.startsWith('ews-demo-')).length;
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'dev/demo.ts')], {
      cwd: ROOT,
      env: { ...process.env, EWS_DEMO_HTTP_PORT: String(http), EWS_DEMO_UDP_PORT: String(udp) },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 2);
    assert.match(r.stdout, new RegExp(`port ${http + 1} \\(HTTP of board ews2\\) is in use on 127\\.0\\.0\\.1; set EWS_DEMO_HTTP_PORT`));
    assert.equal(readdirSync(tmpdir()).filter((f) => f.startsWith('ews-demo-')).length, before);
  } finally {
    squatter.close();
  }
});
