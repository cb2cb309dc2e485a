// ARM boards under qemu user-mode emulation: the official Node 20 for arm64 and armv7l, the
// compiled bundle, serialport's ARM prebuild driving a device on a real pty, in a namespace LAN
// with x64 boards. Boot-to-serving time and RSS go to bench/results/arm.json.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { resident } from '../bench/resident.ts';
import { demoDevices } from '../dev/demo.ts';
import { ValveSimulator } from '../dev/simulators/line-devices.ts';
import { ptyPair, ptyWire } from '../test/devices/pty.ts';
import { buildLan, health, type Lan, ROOT, request, settled, until, VIP } from './lan.ts';

const ARCHES = (process.env.ARM_ARCHES ?? 'arm64,armhf').split(',');
const QEMU: Record<string, string> = { arm64: 'qemu-aarch64-static', armhf: 'qemu-arm-static' };
const results: Record<string, unknown> = {};

for (const arch of ARCHES) {
  describe(`an ${arch} board under emulation`, () => {
    let lan: Lan | undefined;
    const cleanup: Array<() => Promise<void>> = [];
    after(async () => {
      await lan?.close();
      for (const c of cleanup) await c();
    });

    test('boots the bundle, joins the x64 cluster, drives a serial device through its ARM prebuild', async () => {
      // Fetched by hw-test/arm-setup.sh before entering the namespace (there is no network in here).
      const cache = join(ROOT, '.cache/arm', arch);
      assert.ok(existsSync(join(cache, 'node/bin/node')), `run hw-test/arm-setup.sh ${arch} first (npm run test:arm does)`);
      const node = [QEMU[arch]!, '-L', join(cache, 'sysroot'), join(cache, 'node/bin/node')];
      const version = spawnSync(node[0]!, [...node.slice(1), '-p', 'process.arch + " " + process.version'], { encoding: 'utf8' }).stdout.trim();

      const pty = await ptyPair();
      const wire = await ptyWire(pty.b);
      const valve = new ValveSimulator('\n').attach(wire.wire);
      cleanup.push(async () => {
        await wire.close();
        await pty.kill();
      });
      const dev = { ...(demoDevices(['ews1', 'ews2', 'ews3']) as Array<Record<string, unknown>>)[1], simulate: undefined, attach: [{ board: 'ews1', port: pty.a }], timeoutMs: 1000 };
      // Emulated boards are slower: give the election more room.
      lan = await buildLan({ devices: [dev], runners: { ews1: node }, cluster: { heartbeatMs: 100, tmaxMs: 800, tthresholdMs: 800, staggerMs: 200 } });
      const servingAt = await until('the ARM board serving', async () => ((await health(lan!, 'ews1')) ? Date.now() : undefined), 60_000, 50);
      const bootMs = servingAt - lan.startedAt.get('ews1')!;
      await settled(lan, lan.ids, 30_000);
      // The whole qemu process, and for the 32-bit board the guest's part alone (bench/resident.ts).
      const guest32 = arch === 'armhf';
      const idle = { process: resident(lan.pid('ews1')!, false), guest: guest32 ? resident(lan.pid('ews1')!, true) : null };

      const read = await until(
        'the valve through the VIP',
        async () => {
          const r = await request(VIP, '/cgi-bin/devices/valve3', { timeoutMs: 5000 });
          return r.status === 200 ? r : undefined;
        },
        20_000,
      );
      assert.equal(read.board, 'ews1', 'executed on the ARM board');
      const open = await request(VIP, '/cgi-bin/devices/valve3/open', { method: 'POST', timeoutMs: 5000 });
      assert.equal(open.status, 200, open.body);
      assert.equal(valve.commands, 1, 'the simulated valve got the command over the pty');
      // A few requests through the ARM board for a feel of its speed under emulation.
      const lat: number[] = [];
      for (let i = 0; i < 20; i++) {
        const t0 = Date.now();
        const r = await request(lan.addr('ews1'), '/cgi-bin/devices/valve3', { timeoutMs: 5000 });
        if (r.status === 200) lat.push(Date.now() - t0);
      }
      lat.sort((a, b) => a - b);
      const metricsText = (await request(lan.addr('ews1'), '/metrics')).body;
      const heap = (kind: string) => +(Number(new RegExp(`ews_heap_bytes\\{kind="${kind}"\\} (\\d+)`).exec(metricsText)?.[1] ?? NaN) / 1048576).toFixed(1);
      const heapMb = { used: heap('used'), total: heap('total'), external: heap('external') };
      results[arch] = {
        node: version,
        qemu: QEMU[arch],
        bootToServingMs: bootMs,
        rssIdleMb: idle.process.rssMb,
        rssAfterRequestsMb: resident(lan.pid('ews1')!, false).rssMb,
        guestRssIdleMb: idle.guest?.rssMb ?? null,
        guestRssAfterRequestsMb: guest32 ? resident(lan.pid('ews1')!, true).rssMb : null,
        deviceReadP50Ms: lat[Math.floor(lat.length / 2)],
        guestHeapMb: heapMb,
        note: 'rss*: the qemu process (the emulated board plus the emulator and its translation cache); guestRss*: the 32-bit guest alone (its mappings below 4 GiB), null for a 64-bit guest; guestHeapMb: what the board holds in V8',
      };
      process.stdout.write(`# ${arch}: ${JSON.stringify(results[arch])}\n`);
      mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
      const file = join(ROOT, 'bench/results/arm.json');
      const previous = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>) : {};
      writeFileSync(file, `${JSON.stringify({ ...previous, ...results, measuredAt: new Date().toISOString() }, null, 2)}\n`);
    });
  });
}
