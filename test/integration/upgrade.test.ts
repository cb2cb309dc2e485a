// A rolling upgrade of three boards, each run from a releases layout by a supervisor that starts
// it again whenever it exits (as systemd's Restart does) after running the previous release's
// guard (the unit's ExecStartPre). The built bundle is installed first; then an upgrade to a second
// bundle of the same code (its version raised) under keyed requests; a rollback to the release
// before; then a bundle whose board dies at start: that board goes back by itself and the rollout
// stops; then a tampered bundle, and one two protocol versions away, are refused before any board is touched.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { currentRelease } from '../../node/upgrade/releases.ts';
import { BOARD_NODE_FLAGS } from '../../shared/node-flags.ts';
import { freePorts, httpGet, waitFor } from './harness.ts';
import { type Bundles, makeBundles, type Supervised, supervise } from './release-fixture.ts';

describe('rolling upgrade under supervisors', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ews-upgrade-'));
  const bundles: Record<string, string> = {};
  let made: Bundles;
  const ids = ['b1', 'b2', 'b3'];
  let urls: string[] = [];
  const logs = new Map<string, string>();
  const prefix = (id: string) => join(dir, id);

  const sups = new Map<string, Supervised>();
  const log = (id: string) => (text: string) => logs.set(id, ((logs.get(id) ?? '') + text).slice(-20_000));
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
    made = makeBundles(dir);
    const { base, next, dies } = made.files;
    Object.assign(bundles, { '0.1.0': base, '0.2.0': next, '0.3.0': dies });
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
        upgrade: { publicKey: made.key.publicKey, healthS: 10 },
      }),
    );
    for (const id of ids) {
      await made.install(prefix(id));
      sups.set(
        id,
        supervise(prefix(id), (entry) => [process.execPath, [...BOARD_NODE_FLAGS, entry, 'start', '--config', file, '--board', id]], log(id)),
      );
    }
    await allOn('0.1.0');
  });
  after(async () => {
    await Promise.all([...sups.values()].map((x) => x.stop()));
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
    const r = await upgrade(made.files.tampered);
    assert.equal(r.status, 400);
    assert.equal(r.json.error.code, 'BAD_BUNDLE');
    // Signed and whole, but two protocol versions from the cluster's: its boards could not join the others.
    const r2 = await upgrade(made.files.far);
    assert.equal(r2.status, 400, JSON.stringify(r2.json));
    assert.match(r2.json.error.message, /protocol/);
    await allOn('0.1.0');
    for (const id of ids) assert.ok(!existsSync(join(prefix(id), 'releases', '0.4.0')), `${id}: untouched`);
  });
});
