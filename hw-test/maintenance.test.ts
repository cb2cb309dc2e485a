// Maintenance on the namespace LAN with a real VIP, under load through the VIP: a config pushed
// live (a device added, an alarm threshold changed), then one that moves a board's HTTP port (a
// rolling restart, the master last by handover), then a planned handover of the master, then a
// drain of a device's board while the device has a second board. Keyed commands (retried with
// their key only when no answer came) and page requests: no answer other than 2xx, every command
// run exactly once. Then a master that hands over and is stopped at once, while the clients' ARP
// caches still lead to it: what reaches it on the cluster address is relayed, never refused.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildLan, type Lan, lanIds, loadThroughVip, request, settled, until, VIP } from './lan.ts';
import { type ValveBuses, valveBuses } from './valve-bus.ts';

/** ews3's HTTP port once the second push has moved it. */
const MOVED = 8081;

describe('maintenance under load through the VIP', () => {
  let lan: Lan;
  // What the valve's bus received (the boards restart during the test: their counters start again).
  let buses: ValveBuses;
  const executed = () => buses.executed();

  before(async () => {
    // The valve on a bus both ews2 and ews3 are wired to; a second valve on ews1, added by a push.
    buses = await valveBuses(3);
    const devices = [buses.device()];
    lan = await buildLan({ devices, alarms: [{ id: 'open', device: 'valve3', point: 'position', above: 1000 }] });
    assert.equal((await settled(lan, lan.ids, 20_000)).master, 'ews1');
    await until('the valve online', async () => (JSON.parse((await request(VIP, '/api/devices')).body) as Array<{ online: boolean }>).every((d) => d.online));
  });
  after(async () => {
    await lan?.close();
    await buses?.close();
  });

  test("a config pushed live, one that moves a port (a rolling restart), a planned handover, then a drain of the valve's board: no answer other than 2xx, every command once", async () => {
    const base = executed();
    const load = loadThroughVip('m');
    const { stats } = load;
    await until('the load flowing', async () => stats.commands >= 10 && stats.pages >= 10, 10_000);

    // 1. Live: a second valve (on ews1) and the valve's alarm threshold, on every board within 2 s.
    type Raw = { devices: object[]; boards: Array<{ id: string }> };
    const cfg = JSON.parse(readFileSync(lan.file, 'utf8')) as Raw;
    const valve4 = { ...cfg.devices[0], id: 'valve4', attach: [{ board: 'ews1', port: buses.ptys[2]!.a }] };
    const live = { ...cfg, devices: [...cfg.devices, valve4], alarms: [{ id: 'open', device: 'valve3', point: 'position', above: -1 }] };
    const t0 = Date.now();
    const p1 = await request(VIP, '/api/config', { method: 'PUT', body: JSON.stringify(live), timeoutMs: 10_000 });
    assert.equal(p1.status, 200, p1.body);
    assert.deepEqual(Object.values((JSON.parse(p1.body) as { boards: object }).boards), ['applied live', 'applied live', 'applied live']);
    await until(
      'valve4 online and the alarm raised on every board',
      async () => {
        for (const id of lan.ids) {
          const devices = JSON.parse((await request(lan.addr(id), '/api/devices')).body) as Array<{ id: string; online: boolean }>;
          const alarms = JSON.parse((await request(lan.addr(id), '/api/alarms')).body) as Array<{ id: string; active: boolean }>;
          if (!devices.find((d) => d.id === 'valve4')?.online || !alarms.find((a) => a.id === 'open')?.active) return false;
        }
        return true;
      },
      2000,
    );
    const liveMs = Date.now() - t0;

    // 2. ews3's HTTP port moves: a rolling restart, ews1 (the master) last, after a handover to ews2.
    const moved = { ...live, configVersion: 2, boards: live.boards.map((b) => (b.id === 'ews3' ? { ...b, httpPort: MOVED } : b)) };
    const t1 = Date.now();
    const p2 = await request(VIP, '/api/config', { method: 'PUT', body: JSON.stringify(moved), timeoutMs: 120_000 });
    assert.equal(p2.status, 200, p2.body);
    const rolled = JSON.parse(p2.body) as { master: string; boards: Record<string, string> };
    assert.equal(rolled.master, 'restarting', p2.body);
    for (const id of ['ews2', 'ews3']) assert.match(rolled.boards[id]!, /^restarted in \d+ ms/);
    await until(
      'ews1 back on config 2 as a node, ews2 master',
      async () => {
        const v = JSON.parse((await request(lan.addr('ews1'), '/api/config')).body) as { configVersion: number };
        const h = JSON.parse((await request(lan.addr('ews1'), '/healthz')).body) as { role: string; master: string };
        return v.configVersion === 2 && h.role === 'node' && h.master === 'ews2';
      },
      30_000,
    ).catch((e) => {
      throw new Error(`${(e as Error).message}\n${lan.logs.get('ews1')}\n${lan.logs.get('ews2')}`);
    });
    assert.equal((await request(lan.addr('ews3'), '/healthz', { port: MOVED })).status, 200, 'ews3 answers on its new port');
    await until('the VIP on ews2 alone', async () => {
      const v = lan.vipHolders();
      return v.length === 1 && v[0] === 'ews2';
    });
    const rollMs = Date.now() - t1;
    const atPush = stats.commands;
    await until('commands after the rollout', async () => stats.commands >= atPush + 10, 10_000);

    // 3. A planned handover back to ews1.
    const h = await request(lan.addr('ews2'), '/api/cluster/handover?to=ews1', { method: 'POST', timeoutMs: 5000 });
    assert.equal(h.status, 200, h.body);
    const handed = JSON.parse(h.body) as { to: string; ms: number };
    assert.equal(handed.to, 'ews1');
    await until('the VIP on ews1 alone', async () => {
      const v = lan.vipHolders();
      return v.length === 1 && v[0] === 'ews1';
    });
    const atHandover = stats.commands;
    await until('commands after the handover', async () => stats.commands >= atHandover + 10, 10_000);

    const d = await request(VIP, '/api/boards/ews3/drain', { method: 'POST', timeoutMs: 10_000 });
    assert.equal(d.status, 200, d.body);
    assert.deepEqual((JSON.parse(d.body) as { maintenance: string[] }).maintenance, [], 'the valve has ews2 still');
    const atDrain = stats.commands;
    await until('commands after the drain', async () => stats.commands >= atDrain + 10, 10_000);
    await load.stop();
    const { commands, pages, resets, bad } = stats;

    const ran = executed() - base;
    process.stdout.write(
      `# live push on every board in ${liveMs} ms; rolling restart of 3 boards in ${rollMs} ms; handover in ${handed.ms} ms; ${commands} commands, ${pages} pages, ${resets} connections reset while the address moved\n`,
    );
    assert.deepEqual(bad, [], 'no answer other than 2xx');
    assert.equal(ran, commands, 'every command ran exactly once');
    const onEws3 = await request(lan.addr('ews3'), '/metrics', { port: MOVED });
    assert.ok(onEws3.status === 200);
    const view = JSON.parse((await request(VIP, '/api/cluster')).body) as { master: string; boards: Array<{ id: string; drained: boolean }> };
    assert.equal(view.master, 'ews1');
    assert.deepEqual(
      view.boards.map((b) => [b.id, b.drained]),
      [
        ['ews1', false],
        ['ews2', false],
        ['ews3', true],
      ],
    );
  });
});

describe('a master that hands over and stops at once', () => {
  // `ip addr del` and the gratuitous ARP take 500 ms each (as a fork and exec can on a loaded small
  // board): the clients' ARP caches lead them to the old master while it stops and still holds the address.
  let lan: Lan;
  let master: string;
  let bin: string;
  before(async () => {
    bin = mkdtempSync(join(tmpdir(), 'ews-slow-ip-'));
    for (const [cmd, slow] of [
      ['ip', '*"addr del"*'],
      ['arping', '*-U*'],
    ] as const) {
      const real = execFileSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).trim();
      writeFileSync(join(bin, cmd), `#!/bin/sh\ncase "$*" in ${slow}) sleep 0.5;; esac\nexec ${real} "$@"\n`, { mode: 0o755 });
    }
    const runner = ['env', `PATH=${bin}:${process.env.PATH}`, process.execPath];
    lan = await buildLan({ runners: Object.fromEntries(lanIds().map((id) => [id, runner])) });
    master = (await settled(lan, lan.ids, 20_000)).master!;
  });
  after(async () => {
    await lan?.close();
    if (bin) rmSync(bin, { recursive: true, force: true });
  });

  test('what reaches it on the cluster address until the address is gone is relayed to the new master, never refused', async () => {
    const bad: string[] = [];
    let pages = 0;
    let stopped = false;
    const browse = async () => {
      while (!stopped) {
        const r = await request(VIP, '/', { timeoutMs: 3000 });
        if (r.status === 200) pages++;
        else if (r.status !== 0) bad.push(`${r.status} ${r.body.slice(0, 120)} (at ${Date.now()})`);
        await new Promise((res) => setTimeout(res, 5));
      }
    };
    const clients = [browse(), browse()];
    await until('pages flowing', async () => pages >= 10, 10_000);
    const h = await request(lan.addr(master), '/api/cluster/handover', { method: 'POST', timeoutMs: 5000 });
    assert.equal(h.status, 200, h.body);
    const next = (JSON.parse(h.body) as { to: string }).to;
    const t0 = Date.now();
    await lan.kill(master, 'SIGTERM');
    const stopMs = Date.now() - t0;
    await until(`the VIP on ${next} alone`, async () => {
      const v = lan.vipHolders();
      return v.length === 1 && v[0] === next;
    });
    const atStop = pages;
    await until('pages after the stop', async () => pages >= atStop + 10, 10_000);
    stopped = true;
    await Promise.all(clients);
    process.stdout.write(`# ${master} handed over to ${next} and exited ${stopMs} ms after SIGTERM; ${pages} pages\n`);
    assert.deepEqual(bad, [], 'no answer other than 2xx');
  });
});
