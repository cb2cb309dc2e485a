// A rolling upgrade of three boards, each run from a releases layout by a supervisor that starts
// it again whenever it exits (as systemd's Restart does) after running the previous release's
// guard (the unit's ExecStartPre). The built bundle is installed first; then an upgrade to a second
// bundle of the same code (its version raised) under keyed requests; a rollback to the release
// before; then a bundle whose board dies at start: that board goes back by itself and the rollout
// stops; then a tampered bundle, and one two protocol versions away, are refused before any board is touched.

import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { currentRelease, installRelease, switchRelease } from '../../node/upgrade/releases.ts';
import { makeBundle, newSigningKey, openBundle, parsePublicKey } from '../../shared/bundle.ts';
import { BOARD_NODE_FLAGS } from '../../shared/node-flags.ts';
import { PROTOCOL_VERSION } from '../../shared/protocol.ts';
import { freePorts, httpGet, ROOT, waitFor } from './harness.ts';

const key = newSigningKey();
const pub = parsePublicKey(key.publicKey) as Exclude<ReturnType<typeof parsePublicKey>, string>;

describe('rolling upgrade under supervisors', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ews-upgrade-'));
  const keyFile = join(dir, 'sign.pem');
  const bundles: Record<string, string> = {};
  const ids = ['b1', 'b2', 'b3'];
  let urls: string[] = [];
  let stopping = false;
  const procs = new Map<string, ChildProcess>();
  const logs = new Map<string, string>();
  const prefix = (id: string) => join(dir, id);

  const pack = (version: string, from = join(ROOT, 'dist/board')) => {
    const out = join(dir, `ews-${version}.ewsb`);
    execFileSync(process.execPath, ['--import', 'tsx', 'deploy/make-bundle.ts', '--key', keyFile, '--version', version, '--from', from, '--out', out], { cwd: ROOT });
    bundles[version] = out;
    return out;
  };
  /** Runs the board again whenever it exits, the previous release's guard first. */
  const supervise = (id: string, file: string) => {
    const log = (d: Buffer | string) => logs.set(id, ((logs.get(id) ?? '') + d.toString()).slice(-20_000));
    const run = () => {
      if (stopping) return;
      const p = prefix(id);
      // As the unit's ExecStartPre=- does: a guard that fails does not stop the start.
      if (existsSync(join(p, 'previous')))
        try {
          log(execFileSync(process.execPath, [join(p, 'previous', 'ews.js'), 'upgrade-guard', '--prefix', p]));
        } catch (e) {
          log(`[guard failed: ${(e as Error).message.slice(0, 200)}]\n`);
        }
      const child = spawn(process.execPath, [...BOARD_NODE_FLAGS, join(p, 'current', 'ews.js'), 'start', '--config', file, '--board', id], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, EWS_LOG_LEVEL: 'warn' },
      });
      child.stdout!.on('data', log);
      child.stderr!.on('data', log);
      child.on('exit', (code) => {
        log(`[exited ${code}]\n`);
        setTimeout(run, 100);
      });
      procs.set(id, child);
    };
    run();
  };
  const view = async (i = 0) =>
    JSON.parse((await httpGet(`${urls[i]}/api/cluster`, { timeoutMs: 2000 })).text) as { master: string | null; boards: Array<{ id: string; runstate: number; health: { version: string } | null }> };
  const versions = async () => {
    const out: string[] = [];
    for (const u of urls) out.push(((await httpGet(`${u}/api/cluster`, { timeoutMs: 2000 })).text.match(/"version":"([^"]+)"/g) ?? []).join(','));
    return out;
  };
  const upgrade = async (file: string | undefined) => {
    for (const i of [0, 1, 2]) {
      const v = await view(i).catch(() => undefined);
      if (!v?.master) continue;
      const m = ids.indexOf(v.master);
      const r = file
        ? await fetch(`${urls[m]}/api/upgrade`, { method: 'POST', body: readFileSync(file), headers: { 'content-type': 'application/octet-stream' }, signal: AbortSignal.timeout(300_000) })
        : await fetch(`${urls[m]}/api/upgrade/rollback`, { method: 'POST', signal: AbortSignal.timeout(300_000) });
      return { status: r.status, json: (await r.json()) as Record<string, any> }; // any: JSON read freely
    }
    throw new Error('no master');
  };
  const allOn = (version: string) =>
    waitFor(
      `every board on ${version}, one master`,
      async () => {
        const v = await view();
        return v.master !== null && v.boards.every((b) => b.runstate === 1 && b.health?.version === version) && ids.every((id) => currentRelease(prefix(id)) === version);
      },
      90_000,
      200,
    ).catch(async (e: unknown) => {
      const v = await view().catch((x: unknown) => String(x));
      throw new Error(`${(e as Error).message}\n${JSON.stringify(v)}\n${ids.map((id) => `${id}: ${currentRelease(prefix(id))} ${(logs.get(id) ?? '').slice(-1500)}`).join('\n')}`);
    });

  before(async () => {
    writeFileSync(keyFile, key.privatePem, { mode: 0o600 });
    execFileSync('bash', ['deploy/pack.sh'], { cwd: ROOT, stdio: 'ignore' });
    pack('0.1.0');
    pack('0.2.0');
    // A release whose board dies at start.
    const broken = join(dir, 'broken');
    cpSync(join(ROOT, 'dist/board'), broken, { recursive: true });
    writeFileSync(join(broken, 'ews.js'), 'process.exit(3);\n');
    pack('0.3.0', broken);
    const ports = await freePorts(6);
    const boards = ids.map((id, i) => ({ id, address: '127.0.0.1', httpPort: ports[2 * i]!, udpPort: ports[2 * i + 1]! }));
    urls = boards.map((b) => `http://127.0.0.1:${b.httpPort}`);
    const file = join(dir, 'cluster.json');
    writeFileSync(
      file,
      JSON.stringify({
        cluster: { name: 'up', key: randomBytes(32).toString('hex'), broadcast: 'peers', heartbeatMs: 50, tmaxMs: 300, tthresholdMs: 300, staggerMs: 100 },
        boards,
        auth: { disabled: true },
        stateDir: join(dir, 'state'),
        upgrade: { publicKey: key.publicKey, healthS: 10 },
      }),
    );
    for (const id of ids) {
      mkdirSync(prefix(id));
      installRelease(prefix(id), openBundle(readFileSync(bundles['0.1.0']!), pub, process.arch));
      switchRelease(prefix(id), '0.1.0');
      supervise(id, file);
    }
    await allOn('0.1.0');
  });
  after(async () => {
    stopping = true;
    await Promise.all(
      [...procs.values()].map(
        (p) =>
          new Promise<void>((r) => {
            if (p.exitCode !== null || p.signalCode !== null) return r();
            p.once('exit', () => r());
            p.kill('SIGTERM');
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  });

  test('an upgrade to a second bundle: every board on it, the master last; keyed requests answered throughout', async () => {
    let stop = false;
    let sent = 0;
    let retried = 0;
    const bad: string[] = [];
    const load = async (c: number) => {
      for (let i = 0; !stop; i++) {
        sent++;
        const key = `u-${c}-${i}`;
        let done = false;
        for (let attempt = 0; !done && attempt < 200; attempt++) {
          const r = await httpGet(`${urls[(i + attempt) % 3]}/cgi-bin/echo?ms=1`, { method: 'POST', body: 'x', headers: { 'idempotency-key': key }, timeoutMs: 3000 }).catch(() => ({
            status: 0,
            text: '',
          }));
          if (r.status === 200) done = true;
          // No answer, 503, or 502 BOARD_FAILED (docs/errors.md: another board may answer it): the same key again.
          else if (r.status !== 0 && r.status !== 503 && !(r.status === 502 && r.text.includes('BOARD_FAILED'))) {
            bad.push(`${r.status} ${r.text.slice(0, 100)}`);
            done = true;
          } else {
            retried++;
            await new Promise((res) => setTimeout(res, 50));
          }
        }
        if (!done) bad.push(`${key}: no answer in 200 tries`);
      }
    };
    const clients = [load(0), load(1)];
    // The master's /api/cluster while the rollout runs: each board's step and bar.
    const steps = new Map<string, Set<string>>();
    let watching = true;
    const watch = (async () => {
      while (watching) {
        for (const i of [0, 1, 2]) {
          const v = (await view(i).catch(() => undefined)) as { upgrade?: { boards: Array<{ id: string; step: string; pct: number }> } | null } | undefined;
          for (const b of v?.upgrade?.boards ?? []) steps.set(b.id, (steps.get(b.id) ?? new Set()).add(`${b.step} ${b.pct}`));
        }
        await new Promise((res) => setTimeout(res, 20));
      }
    })();
    const r = await upgrade(bundles['0.2.0']!);
    watching = false;
    await watch;
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.stopped, null, JSON.stringify(r.json));
    assert.equal(r.json.master, 'restarting into the new release');
    await allOn('0.2.0');
    stop = true;
    await Promise.all(clients);
    process.stdout.write(`# upgrade report: ${JSON.stringify(r.json.boards)}; ${sent} keyed requests, ${retried} retried with their key\n`);
    assert.deepEqual(bad, [], 'every keyed request answered 2xx');
    const b2 = [...(steps.get('b2') ?? [])];
    for (const want of ['restarting 60', 'done 100']) assert.ok(b2.includes(want), `b2's progress showed ${want}: ${b2.join(', ')}`);
    for (const id of ids) assert.equal(readlinkSync(join(prefix(id), 'previous')), join('releases', '0.1.0'));
  });

  test('a rollback takes every board back to its previous release, the master last', async () => {
    const r = await upgrade(undefined);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.stopped, null, JSON.stringify(r.json));
    await allOn('0.1.0');
  });
  test('a bundle whose board dies at start: that board goes back by itself, the rollout stops, the cluster serves', async () => {
    const r = await upgrade(bundles['0.3.0']!);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.match(String(r.json.stopped), /came back on 0\.1\.0/, JSON.stringify(r.json));
    assert.match(r.json.master, /kept its release/);
    await allOn('0.1.0');
    const v = (await view(ids.indexOf((await view()).master!))) as {
      master: string | null;
      upgrade?: { stopped: string | null; finishedAt: number | null; boards: Array<{ id: string; step: string }> } | null;
    };
    assert.ok(v.upgrade?.finishedAt, 'the master shows the finished rollout');
    assert.equal(v.upgrade.stopped, r.json.stopped);
    assert.deepEqual(
      v.upgrade.boards.map((b) => b.step),
      ['failed', 'skipped', 'skipped'],
      'the first node failed, the rest not reached',
    );
    assert.equal((await httpGet(`${urls[0]}/cgi-bin/echo?ms=1`)).status, 200);
    assert.ok(!(await versions()).some((v) => v.includes('0.3.0')));
    for (const id of ids) assert.ok(!existsSync(join(prefix(id), 'releases', '0.3.0')), `${id}: the failed release is gone`);
  });

  test('a tampered bundle is refused before any board is touched', async () => {
    const b = readFileSync(bundles['0.2.0']!);
    b[b.length - 5] = b[b.length - 5]! ^ 1;
    const file = join(dir, 'tampered.ewsb');
    writeFileSync(file, b);
    const r = await upgrade(file);
    assert.equal(r.status, 400);
    assert.equal(r.json.error.code, 'BAD_BUNDLE');
    // Signed and whole, but two protocol versions from the cluster's: its boards could not join the others.
    const opened = openBundle(readFileSync(bundles['0.2.0']!), pub, undefined);
    const far = join(dir, 'far.ewsb');
    writeFileSync(far, makeBundle({ version: '0.4.0', arch: 'any', protocol: PROTOCOL_VERSION + 2 }, opened.files, key.privatePem));
    const r2 = await upgrade(far);
    assert.equal(r2.status, 400, JSON.stringify(r2.json));
    assert.match(r2.json.error.message, /protocol/);
    await allOn('0.1.0');
    for (const id of ids) assert.ok(!existsSync(join(prefix(id), 'releases', '0.4.0')), `${id}: untouched`);
  });
});
