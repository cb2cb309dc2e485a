// npm run bench:failover: pull the master's cable 20 times on the namespace LAN (inside
// unshare -rnm) and time link-down → the VIP on the new master → the first successful control
// request through the VIP. Results: bench/results/failover.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildLan, health, request, settled, until, VIP } from '../hw-test/lan.ts';
import { ptyPair, ptyWire } from '../test/devices/pty.ts';
import { ValveSimulator } from '../dev/simulators/line-devices.ts';
import { demoDevices } from '../dev/demo.ts';

const PULLS = Number(process.env.BENCH_PULLS ?? 20);
// By default the VIP is claimed at once; BENCH_DAD=1 adds arping's duplicate check first.
const DUPLICATE_CHECK = process.env.BENCH_DAD === '1';
const pty = await ptyPair();
const wire = await ptyWire(pty.b);
new ValveSimulator('\n').attach(wire.wire);
const valve = { ...(demoDevices(['ews1', 'ews2', 'ews3']) as Array<Record<string, unknown>>)[1], simulate: undefined, attach: [{ board: 'ews3', port: pty.a }] };
const lan = await buildLan({ devices: [valve], cluster: { vip: { address: '10.231.0.100/24', interface: 'eth0', duplicateCheck: DUPLICATE_CHECK } } });
await settled(lan, lan.ids, 20_000);

const vipMs: number[] = [], okMs: number[] = [];
try {
  for (let i = 0; i < PULLS; i++) {
    const h = await settled(lan);
    const master = h.master!;
    // The valve lives on ews3: keep its board out of the pulls so every pull measures mastership alone.
    if (master === 'ews3') {
      lan.pull('ews3');
      await new Promise((r) => setTimeout(r, 1000));
      lan.plug('ews3');
      i--;
      continue;
    }
    let firstOk = Infinity;
    let stop = false;
    const pulledAt = Date.now();
    const probes: Promise<void>[] = [];
    const prober = (async () => {
      while (!stop) {
        const started = Date.now();
        probes.push(request(VIP, '/cgi-bin/devices/valve3', { timeoutMs: 1000 }).then((r) => {
          if (r.status === 200 && started >= pulledAt) firstOk = Math.min(firstOk, Date.now());
        }));
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    lan.pull(master);
    const vipAt = await until('VIP moved', async () => (lan.vipHolders().some((x) => x !== master) ? Date.now() : undefined), 15_000);
    await until('a control request through the VIP', async () => firstOk < Infinity, 15_000);
    stop = true;
    await prober;
    await Promise.all(probes);
    vipMs.push(vipAt - pulledAt);
    okMs.push(firstOk - pulledAt);
    process.stdout.write(`pull ${i + 1}: master ${master}, VIP moved after ${vipAt - pulledAt} ms, first control request after ${firstOk - pulledAt} ms\n`);
    lan.plug(master);
    await until('old master back as a node', async () => (await health(lan, master))?.role === 'node', 15_000);
  }
} finally {
  await lan.close();
  await wire.close();
  await pty.kill();
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0], median: s[Math.floor(s.length / 2)], max: s[s.length - 1] };
};
const result = {
  what: `${PULLS} pulls of the master's cable (switch-side link down) on a 3-board namespace LAN; heartbeat 50 ms, Tmax 300 ms, stagger 100 ms; probes every 25 ms; VIP duplicate check ${DUPLICATE_CHECK ? 'on' : 'off (default)'}`,
  vipMovedMs: stats(vipMs),
  firstControlRequestMs: stats(okMs),
  note: DUPLICATE_CHECK ? 'the VIP claim waits for arping\'s duplicate check, whose shortest form (-w 1) takes 1 s' : 'the VIP is claimed at once and announced with gratuitous ARP',
  samples: { vipMovedMs: vipMs, firstControlRequestMs: okMs },
};
mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
writeFileSync(join(import.meta.dirname, `results/failover${DUPLICATE_CHECK ? '-duplicate-check' : ''}.json`), `${JSON.stringify(result, null, 2)}\n`);
process.stdout.write(`${JSON.stringify({ vipMovedMs: result.vipMovedMs, firstControlRequestMs: result.firstControlRequestMs })}\n`);
