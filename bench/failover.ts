// npm run bench:failover (inside unshare -rnm): ews with its DEFAULT timings and keepalived
// (VRRPv3 at 0.05 s and 0.1 s) side by side on the same namespace LAN: the same switch, the same
// pull (the master's switch port down, at a random phase to its heartbeat), the same client probe
// (a new request to the VIP every 10 ms, each with its own 300 ms timeout). Measured: link-down →
// the first 200 through the VIP from another board; after each replug, the time until there is
// exactly one master and one VIP holder, the master. Then ews's false takeovers (the term
// changes) during a saturated machine and during 5 % random UDP loss on every board.
// Results: bench/results/failover.{json,md,svg}.
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildLan, health, type Lan, PORT, request, settled, until, VIP } from '../hw-test/lan.ts';
import { parseConfig } from '../shared/config.ts';
import { spread } from './spread.ts';
import { stopAll } from './stop-all.ts';
import { lineChart } from './svg.ts';

const PULLS = Number(process.env.BENCH_PULLS ?? 20);
const SATURATION_S = Number(process.env.BENCH_SATURATION_S ?? 60);
const LOSS_S = Number(process.env.BENCH_LOSS_S ?? 60);
const PROBE_EVERY_MS = 10,
  PROBE_TIMEOUT_MS = 300;
const RESULTS = join(import.meta.dirname, 'results');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The product's defaults, as a config without timings gets them.
const defaults = parseConfig({ cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' }, boards: [{ id: 'a', address: '127.0.0.1' }] }).cluster;
const { heartbeatMs, tmaxMs, tthresholdMs, staggerMs } = defaults;

interface Pull {
  pulled: string;
  phaseMs: number;
  servedMs: number;
  servedBy: string;
  settleMs: number;
}

/** From `t0`, a new request every 10 ms; the time of the first 200 served by another board than `pulled`. */
async function firstServed(t0: number, pulled: string, boardOf: (body: string) => string | undefined): Promise<{ ms: number; by: string }> {
  let done: { ms: number; by: string } | undefined;
  const inflight: Promise<void>[] = [];
  while (!done && Date.now() - t0 < 15_000) {
    inflight.push(
      request(VIP, '/healthz', { timeoutMs: PROBE_TIMEOUT_MS }).then((r) => {
        const by = r.status === 200 ? boardOf(r.body) : undefined;
        if (by && by !== pulled && !done) done = { ms: Date.now() - t0, by };
      }),
    );
    await sleep(PROBE_EVERY_MS);
  }
  await Promise.all(inflight);
  if (!done) throw new Error(`nothing served through the VIP 15 s after pulling ${pulled}`);
  return done;
}

const ewsBoard = (body: string) => {
  try {
    return (JSON.parse(body) as { board?: string }).board;
  } catch {
    return undefined;
  }
};

async function ewsPulls(lan: Lan): Promise<Pull[]> {
  const out: Pull[] = [];
  for (let i = 0; i < PULLS; i++) {
    const master = (await settled(lan, lan.ids, 20_000)).master!;
    const phaseMs = Math.random() * heartbeatMs;
    await sleep(phaseMs);
    const t0 = Date.now();
    lan.pull(master);
    const served = await firstServed(t0, master, ewsBoard);
    await sleep(300);
    lan.plug(master);
    const t1 = Date.now();
    await settled(lan, lan.ids, 10_000);
    const old = await health(lan, master);
    if (old?.role !== 'node') throw new Error(`${master} is ${old?.role} after the replug`);
    out.push({ pulled: master, phaseMs: Math.round(phaseMs), servedMs: served.ms, servedBy: served.by, settleMs: Date.now() - t1 });
    process.stdout.write(`ews pull ${i + 1}: ${master} → ${served.by} served after ${served.ms} ms; one master and one VIP holder ${Date.now() - t1} ms after the replug\n`);
  }
  return out;
}

// ---- keepalived on the same LAN (the boards' namespaces, a tiny HTTP server per board) ----

const PRIORITY = [150, 100, 50];

function inNs(lan: Lan, id: string, cmd: string[]): ChildProcess {
  const p = spawn('ip', ['netns', 'exec', lan.ns(id), ...cmd], { stdio: 'ignore' });
  p.on('error', () => {});
  return p;
}

const stop = (procs: ChildProcess[]) => stopAll(procs, 2000);

async function keepalivedPulls(lan: Lan, advertS: number): Promise<Pull[]> {
  const dir = mkdtempSync(join(tmpdir(), 'ews-ka-'));
  const procs: ChildProcess[] = [];
  const server = `require('http').createServer((q,s)=>{s.writeHead(200,{connection:'close'});s.end(process.argv[1])}).listen(${PORT},'0.0.0.0')`;
  lan.ids.forEach((id, i) => {
    procs.push(inNs(lan, id, [process.execPath, '-e', server, id]));
    const conf = join(dir, `${id}.conf`);
    writeFileSync(
      conf,
      `global_defs {\n  router_id ${id}\n  vrrp_version 3\n}\nvrrp_instance VI_1 {\n  state ${i === 0 ? 'MASTER' : 'BACKUP'}\n  interface eth0\n  virtual_router_id 51\n  priority ${PRIORITY[i]}\n  advert_int ${advertS}\n  virtual_ipaddress {\n    ${VIP}/24 dev eth0\n  }\n}\n`,
    );
    procs.push(inNs(lan, id, ['keepalived', '-f', conf, '-p', join(dir, `${id}.pid`), '-r', join(dir, `${id}.vrrp.pid`), '-c', join(dir, `${id}.chk.pid`), '-n', '-l', '-D', '-G', '-P']));
  });
  const home = lan.ids[0]!;
  const steady = () =>
    until(
      'keepalived: the VIP on the first board alone, serving',
      async () => {
        const h = lan.vipHolders();
        return h.length === 1 && h[0] === home && (await request(VIP, '/', { timeoutMs: 300 })).body === home;
      },
      20_000,
    );
  const out: Pull[] = [];
  try {
    await steady();
    for (let i = 0; i < PULLS; i++) {
      const phaseMs = Math.random() * advertS * 1000;
      await sleep(phaseMs);
      const t0 = Date.now();
      lan.pull(home);
      const served = await firstServed(t0, home, (b) => b || undefined);
      await sleep(300);
      lan.plug(home);
      const t1 = Date.now();
      await steady(); // preemption: the first board takes the address back
      out.push({ pulled: home, phaseMs: Math.round(phaseMs), servedMs: served.ms, servedBy: served.by, settleMs: Date.now() - t1 });
      process.stdout.write(`keepalived ${advertS} s pull ${i + 1}: served by ${served.by} after ${served.ms} ms\n`);
    }
  } finally {
    await stop(procs);
  }
  return out;
}

// ---- false takeovers under stress (ews) ----

async function terms(lan: Lan): Promise<string> {
  const hs = await Promise.all(lan.ids.map((id) => health(lan, id)));
  return hs.map((h) => `${h?.master}@${h?.term}`).join(' ');
}

async function saturated(lan: Lan, seconds: number): Promise<{ before: string; after: string; requests: number; errors: number; busyLoops: number }> {
  const before = await terms(lan);
  const burners = [0, 1].map(() => spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
  let stopFlag = false,
    requests = 0,
    errors = 0;
  const client = async () => {
    while (!stopFlag) {
      const r = await request(VIP, '/cgi-bin/echo?ms=1', { timeoutMs: 2000 });
      requests++;
      if (r.status !== 200) errors++;
    }
  };
  const clients = Array.from({ length: 64 }, client);
  await sleep(seconds * 1000);
  stopFlag = true;
  await Promise.all(clients);
  await stop(burners);
  return { before, after: await terms(lan), requests, errors, busyLoops: burners.length };
}

async function lossy(lan: Lan, seconds: number): Promise<{ before: string; after: string; dropRule: string }> {
  const rule = 'udp dport 5050 numgen random mod 100 lt 5 drop';
  for (const id of lan.ids) {
    const nft = (...a: string[]) => execFileSync('ip', ['netns', 'exec', lan.ns(id), 'nft', ...a]);
    nft('add', 'table', 'inet', 'loss');
    nft('add', 'chain', 'inet', 'loss', 'in', '{ type filter hook input priority 0; }');
    nft('add', 'rule', 'inet', 'loss', 'in', ...rule.split(' '));
  }
  const before = await terms(lan);
  await sleep(seconds * 1000);
  const after = await terms(lan);
  for (const id of lan.ids) execFileSync('ip', ['netns', 'exec', lan.ns(id), 'nft', 'delete', 'table', 'inet', 'loss']);
  return { before, after, dropRule: rule };
}

// ---- the run ----

const started = new Date().toISOString();
const lan = await buildLan({ cluster: { heartbeatMs: undefined, tmaxMs: undefined, tthresholdMs: undefined, staggerMs: undefined } });
let ews: Pull[] = [],
  ka05: Pull[] = [],
  ka10: Pull[] = [];
let sat: Awaited<ReturnType<typeof saturated>> | undefined, loss: Awaited<ReturnType<typeof lossy>> | undefined;
try {
  await settled(lan, lan.ids, 20_000);
  ews = await ewsPulls(lan);
  sat = await saturated(lan, SATURATION_S);
  process.stdout.write(`saturated ${SATURATION_S} s: ${sat.before} → ${sat.after} (${sat.requests} requests, ${sat.errors} errors)\n`);
  await settled(lan, lan.ids, 20_000);
  loss = await lossy(lan, LOSS_S);
  process.stdout.write(`5 % UDP loss ${LOSS_S} s: ${loss.before} → ${loss.after}\n`);
  for (const id of lan.ids) await lan.kill(id);
  ka05 = await keepalivedPulls(lan, 0.05);
  ka10 = await keepalivedPulls(lan, 0.1);
} finally {
  await lan.close();
}

const kaVersion = (() => {
  const r = spawnSync('keepalived', ['--version'], { encoding: 'utf8' });
  return `${r.stdout}${r.stderr}`.split('\n')[0]!.trim() || 'keepalived';
})();
const systems = [
  { name: `ews (defaults: heartbeat ${heartbeatMs} ms, Tmax ${tmaxMs} ms)`, pulls: ews, color: '#c0392b' },
  { name: 'keepalived VRRPv3 advert 0.05 s', pulls: ka05, color: '#2980b9' },
  { name: 'keepalived VRRPv3 advert 0.1 s', pulls: ka10, color: '#7f8c8d' },
];
const result = {
  run: started,
  node: process.version,
  keepalived: kaVersion,
  what: `${PULLS} pulls each on one 3-board namespace LAN (a bridge namespace; a pull is the master's switch port going down at a random phase to its heartbeat or advert); a new request to the VIP every ${PROBE_EVERY_MS} ms, each with its own ${PROBE_TIMEOUT_MS} ms timeout; served = the first 200 through the VIP from another board`,
  ewsConfig: { heartbeatMs, tmaxMs, tthresholdMs, staggerMs, vipDuplicateCheck: false },
  servedMs: Object.fromEntries(systems.map((s) => [s.name, spread(s.pulls.map((p) => p.servedMs))])),
  settleAfterReplugMs: { ews: spread(ews.map((p) => p.settleMs)) },
  falseTakeovers: {
    saturated: sat && { seconds: SATURATION_S, ...sat, falseTakeover: sat.before !== sat.after },
    udpLoss5pct: loss && { seconds: LOSS_S, ...loss, falseTakeover: loss.before !== loss.after },
  },
  samples: Object.fromEntries(systems.map((s) => [s.name, s.pulls])),
};
mkdirSync(RESULTS, { recursive: true });
writeFileSync(join(RESULTS, 'failover.json'), `${JSON.stringify(result, null, 2)}\n`);
const cdf = (xs: number[]): Array<[number, number]> => [...xs].sort((a, b) => a - b).map((v, i) => [v, (i + 1) / xs.length]);
writeFileSync(
  join(RESULTS, 'failover.svg'),
  lineChart(
    'Link down → first 200 through the VIP (CDF over the pulls)',
    "ms after the master's link went down",
    'fraction of pulls served',
    systems.map((s) => ({ name: s.name, points: cdf(s.pulls.map((p) => p.servedMs)), color: s.color })),
  ),
);
const row = (s: (typeof systems)[number]) => {
  const st = spread(s.pulls.map((p) => p.servedMs));
  return `| ${s.name} | ${s.pulls.length} | ${st.min} / ${st.median} / ${st.p90} / ${st.max} |`;
};
const md = `# Failover: ews against keepalived, same LAN, same run

${result.what}. Run ${started}, Node ${process.version}, ${kaVersion}.

| system | pulls | served after link-down, min / median / p90 / max (ms) |
|---|---|---|
${systems.map(row).join('\n')}

ews after each replug: exactly one master and one VIP holder (the master) after ${JSON.stringify(result.settleAfterReplugMs.ews)} ms.

False takeovers (ews defaults; the term or the master changes on any board):
- ${SATURATION_S} s with the machine saturated (2 busy loops on 2 cores, 64 clients through the VIP): ${sat ? `${sat.before} → ${sat.after}: **${sat.before === sat.after ? 'none' : 'TAKEOVER'}** (${sat.requests} requests, ${sat.errors} not 200)` : 'not run'}
- ${LOSS_S} s of 5 % random UDP loss on every board (nftables: \`${loss?.dropRule ?? ''}\`): ${loss ? `${loss.before} → ${loss.after}: **${loss.before === loss.after ? 'none' : 'TAKEOVER'}**` : 'not run'}
- A 1 s and a 500 ms+ synchronous block of the master's request thread: test/integration/cluster-plane.test.ts (no takeover; the cluster plane runs on its own thread).

Choosing the defaults. A node takes over after hearing no STATE for Tmax, so a pull is served
after Tmax − U(0, heartbeat) + the claim (adding the address, the first gratuitous ARP, the
client's next probe): 100–120 ms + ~25 ms at heartbeat ${heartbeatMs} ms and Tmax ${tmaxMs} ms. A false takeover
needs every STATE lost for Tmax, i.e. Tmax / heartbeat = ${tmaxMs / heartbeatMs} in a row: at 5 % independent loss
0.05^${tmaxMs / heartbeatMs} ≈ ${(0.05 ** (tmaxMs / heartbeatMs)).toExponential(1)} per heartbeat, about one in ${Math.round(1 / (0.05 ** (tmaxMs / heartbeatMs) * (1000 / heartbeatMs) * 2 * 86_400))} days for two nodes. Halving Tmax
would halve detection but make it ${tmaxMs / heartbeatMs / 2} losses in a row (≈ ${(0.05 ** (tmaxMs / heartbeatMs / 2)).toExponential(1)}), and a scheduling
stall of the plane's thread over Tmax would hand mastership on; keepalived at 0.05 s waits
3 adverts + skew (≈ 180 ms).

![CDF](failover.svg)
`;
writeFileSync(join(RESULTS, 'failover.md'), md);
process.stdout.write(md);
