// The README's first command: `ews demo` comes up, pulls and replugs a board on stdin, quits.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
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
    assert.equal(r.headers.get('x-ews-board'), 'ews2');
    p.stdin!.write('pull ews1\n');
    await waitFor(/master is now ews2/);
    p.stdin!.write('plug ews1\n');
    await waitFor(/ews1: cable plugged back in/);
    p.stdin!.write('quit\n');
    assert.equal(await exited, 0);
  } finally {
    p.kill();
  }
});
