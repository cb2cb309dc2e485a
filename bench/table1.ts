// Paper 001, Table 1, replicated on a running 3-board cluster, side by side with HAProxy in one
// run under the same open-loop load: HIGH (/cgi-bin/) = 25% and 50% of the traffic, at 0.5×, 1×,
// 2× and 3× capacity. Every board (ews) and backend (HAProxy) has the same service model: C
// requests at once, S ms each. Results: bench/results/table1.{json,md} and table1-*.svg.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BOARD_NODE_FLAGS } from '../shared/node-flags.ts';
import { freePorts, waitFor } from '../test/integration/harness.ts';
import { type ClassResult, openLoop, pct } from './open-loop.ts';
import { lineChart } from './svg.ts';

const ROOT = resolve(import.meta.dirname, '..');
const S = 100,
  C = 4,
  BOARDS = 3,
  TIMEOUT_MS = 2000;
const CAPACITY = (BOARDS * C * 1000) / S; // requests per second
// BENCH_LOADS=3 BENCH_SHARES=0.25 BENCH_SYSTEMS='ews priority,HAProxy priority': a quick look at a few points (the full run writes the results).
const list = (v: string | undefined, d: number[]) => (v ? v.split(',').map(Number) : d);
const LOADS = list(process.env.BENCH_LOADS, [0.5, 1, 2, 3]);
const SHARES = list(process.env.BENCH_SHARES, [0.25, 0.5]);
const SYSTEMS = process.env.BENCH_SYSTEMS?.split(',');
const QUICK = !!(process.env.BENCH_LOADS || process.env.BENCH_SHARES || SYSTEMS);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);

interface System {
  name: string;
  base: string;
  wastedMs(): Promise<number>;
  stop(): Promise<void>;
}

const stopAll = (ps: ChildProcess[]) =>
  Promise.all(
    ps.map(
      (p) =>
        new Promise<void>((r) => {
          if (p.exitCode !== null) return r();
          p.once('exit', () => r());
          p.kill('SIGTERM');
        }),
    ),
  );

/**
 * ews with BOARDS working boards and a master that only forwards (masterWork forward), as HAProxy
 * fronts BOARDS backends: the same serving capacity on both sides (BOARDS × C at S ms).
 */
interface EwsKnobs {
  highReserve?: number;
  standingWaitMs?: number;
  paceFill?: false;
  highWaitMs?: number;
}
async function ews(scheduler: 'priority' | 'fifo', { highReserve, standingWaitMs, paceFill, highWaitMs }: EwsKnobs = {}): Promise<System> {
  const n = BOARDS + 1;
  const ports = await freePorts(2 * n);
  const boards = Array.from({ length: n }, (_, i) => ({ id: `b${i + 1}`, address: '127.0.0.1', httpPort: ports[2 * i]!, udpPort: ports[2 * i + 1]! }));
  const dir = mkdtempSync(join(tmpdir(), 'ews-t1-'));
  const file = join(dir, 'c.json');
  writeFileSync(
    file,
    JSON.stringify({
      cluster: { name: 'table1', key: randomBytes(32).toString('hex'), heartbeatMs: 100, tmaxMs: 1000, tthresholdMs: 1000, masterWork: 'forward' },
      boards,
      classes: [
        { name: 'control', priority: 0, match: [{ pathPrefix: '/cgi-bin/' }], deadlineMs: TIMEOUT_MS, ...(standingWaitMs === undefined ? {} : { standingWaitMs }) },
        { name: 'browse', priority: 1, match: [{ pathPrefix: '/' }], deadlineMs: TIMEOUT_MS },
      ],
      qos: { scheduler, ...(highReserve === undefined ? {} : { highReserve }), ...(paceFill === undefined ? {} : { paceFill }), ...(highWaitMs === undefined ? {} : { highWaitMs }) },
      limits: { inFlightPerBoardMax: C, queueMax: 5000, connectionsMax: 8192 },
      auth: { disabled: true },
      stateDir: false, // memory only, said so: a bench run leaves nothing behind
    }),
  );
  const procs = boards.map((b) =>
    spawn(process.execPath, [...BOARD_NODE_FLAGS, join(ROOT, 'dist/ews.js'), 'start', '--config', file, '--board', b.id], { stdio: 'ignore', env: { ...process.env, EWS_LOG_LEVEL: 'error' } }),
  );
  const urls = boards.map((b) => `http://127.0.0.1:${b.httpPort}`);
  await waitFor(
    'ews up',
    async () => {
      const v = (await (await fetch(`${urls[n - 1]}/api/cluster`)).json()) as { master: string | null; boards: Array<{ runstate: number }> };
      return v.master === 'b1' && v.boards.every((b) => b.runstate === 1);
    },
    20_000,
    50,
  );
  const wasted = async () => {
    let n = 0;
    for (const u of urls) {
      const m = /ews_abandoned_work_seconds_total ([\d.e+-]+)/.exec(await (await fetch(`${u}/metrics`)).text());
      n += 1000 * Number(m?.[1] ?? 0); // seconds on /metrics, ms here
    }
    return n;
  };
  return {
    // fifo: plain least-connection, everything of the priority path off (the makers say so).
    name:
      scheduler === 'fifo'
        ? 'ews fifo'
        : `ews ${scheduler}${highReserve === undefined ? '' : ` reserve ${+highReserve.toFixed(2)}`}${standingWaitMs === undefined ? '' : standingWaitMs === 0 ? ' standing off' : ` standing ${standingWaitMs} ms`}${paceFill === false ? ' unpaced' : ''}${highWaitMs === undefined ? '' : ` wait ${highWaitMs} ms`}`,
    base: urls[0]!,
    wastedMs: wasted,
    stop: () => stopAll(procs).then(() => rmSync(dir, { recursive: true, force: true })),
  };
}

async function haproxy(priority: boolean): Promise<System> {
  const [front, ...backs] = await freePorts(1 + BOARDS);
  const procs = backs.map((p) => spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/backend.ts'), String(p)], { stdio: 'ignore' }));
  const dir = mkdtempSync(join(tmpdir(), 'ews-haproxy-'));
  writeFileSync(
    join(dir, 'haproxy.cfg'),
    `global
  maxconn 8192
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  timeout queue ${TIMEOUT_MS}ms
  option abortonclose
frontend fe
  bind 127.0.0.1:${front}
${priority ? '  http-request set-priority-class int(-10) if { path_beg /cgi-bin/ }\n' : ''}  default_backend be
backend be
  balance leastconn
${backs.map((p, i) => `  server s${i + 1} 127.0.0.1:${p} maxconn ${C}`).join('\n')}
`,
  );
  const hp = spawn('haproxy', ['-db', '-f', join(dir, 'haproxy.cfg')], { stdio: 'ignore' });
  procs.push(hp);
  const base = `http://127.0.0.1:${front}`;
  await waitFor('haproxy up', async () => (await fetch(`${base}/echo?ms=1`)).ok, 20_000, 50);
  const wasted = async () => {
    let n = 0;
    for (const p of backs) n += ((await (await fetch(`http://127.0.0.1:${p}/stats`)).json()) as { wastedMs: number }).wastedMs;
    return n;
  };
  return { name: `HAProxy ${priority ? 'priority' : 'fifo'}`, base, wastedMs: wasted, stop: () => stopAll(procs).then(() => rmSync(dir, { recursive: true, force: true })) };
}

interface Row {
  system: string;
  highShare: number;
  load: number;
  rate: number;
  high: Summary;
  low: Summary;
  wastedBoardMs: number;
}
interface Summary {
  donePerS: number;
  p50Ms: number;
  p99Ms: number;
  /** p99 of the requests sent after the first second: the steady state, without the load's step from nothing. */
  p99SteadyMs: number;
  failures: number;
  sent: number;
}
const summarise = (r: ClassResult | undefined, elapsedS: number): Summary => ({
  sent: r?.sent ?? 0,
  donePerS: +((r?.ok ?? 0) / elapsedS).toFixed(1),
  p50Ms: Math.round(pct(r?.latencies ?? [], 0.5)),
  p99Ms: Math.round(pct(r?.latencies ?? [], 0.99)),
  p99SteadyMs: Math.round(
    pct(
      (r?.latencies ?? []).filter((_, i) => r!.sentAtMs[i]! >= 1000),
      0.99,
    ),
  ),
  failures: (r?.failed ?? 0) + (r?.timeouts ?? 0),
});

const rows: Row[] = [];
// ews at its defaults (qos.highReserve keeps 1 of the 12 slots free for HIGH while HIGH is active, waived for a page when a job in
// service is due to answer within qos.highWaitMs and HIGH's recent longest wait is under it; qos.paceFill fills idle slots no faster
// than they empty; HIGH's standing queue cut at half its deadline), then each of those changed alone: no fill pace; no standing-queue
// cut; the reserve never waived (wait 0), or waived on half or twice the budget; no reserve (the pace alone); neither reserve nor pace
// (ews before both: the LOW baseline); 2 of 12 reserved. What each buys HIGH and costs LOW.
const makers: Array<[string, () => Promise<System>]> = [
  ['ews priority', () => ews('priority')],
  ['ews priority unpaced', () => ews('priority', { paceFill: false })],
  ['ews priority standing off', () => ews('priority', { standingWaitMs: 0 })],
  ['ews priority wait 0 ms', () => ews('priority', { highWaitMs: 0 })],
  ['ews priority wait 5 ms', () => ews('priority', { highWaitMs: 5 })],
  ['ews priority wait 20 ms', () => ews('priority', { highWaitMs: 20 })],
  ['ews priority reserve 0', () => ews('priority', { highReserve: 0 })],
  ['ews priority reserve 0 unpaced', () => ews('priority', { highReserve: 0, paceFill: false })],
  ['ews priority reserve 0.17', () => ews('priority', { highReserve: 2 / (BOARDS * C) })],
  // HIGH's standing queue cut at 3 service times instead of half the deadline: what a tighter bound does when HIGH alone exceeds capacity.
  ['ews priority standing 300 ms', () => ews('priority', { standingWaitMs: 3 * S })],
  ['HAProxy priority', () => haproxy(true)],
  ['ews fifo', () => ews('fifo', { highReserve: 0, standingWaitMs: 0, paceFill: false })], // plain least-connection: no priority of any kind, so no HIGH reserve, fill pace or standing-queue cut either
  ['HAProxy fifo', () => haproxy(false)],
];
for (const [name, make] of makers) {
  if (SYSTEMS && !SYSTEMS.includes(name)) continue;
  const sys = await make();
  try {
    for (const share of SHARES) {
      for (const load of LOADS) {
        const rate = CAPACITY * load;
        const every = Math.round(1 / share);
        const before = await sys.wastedMs();
        const res = await openLoop(sys.base, rate, SECONDS, (i) => (i % every === 0 ? { cls: 'high', path: `/cgi-bin/echo?ms=${S}` } : { cls: 'low', path: `/echo?ms=${S}` }), TIMEOUT_MS);
        await new Promise((r) => setTimeout(r, 300)); // let the last board-side work finish and be counted
        const row = {
          system: sys.name,
          highShare: share,
          load,
          rate,
          high: summarise(res.classes.high, res.elapsedS),
          low: summarise(res.classes.low, res.elapsedS),
          wastedBoardMs: (await sys.wastedMs()) - before,
        };
        rows.push(row);
        process.stdout.write(
          `${sys.name.padEnd(16)} HIGH ${share * 100}% ${load}×: HIGH ${row.high.donePerS}/s p99 ${row.high.p99Ms} ms (after 1 s ${row.high.p99SteadyMs}) fail ${row.high.failures} | LOW ${row.low.donePerS}/s p99 ${row.low.p99Ms} ms fail ${row.low.failures} | wasted ${row.wastedBoardMs} ms\n`,
        );
      }
    }
  } finally {
    await sys.stop();
  }
}

if (QUICK) process.exit(0); // a quick look writes nothing
const dir = join(ROOT, 'bench/results');
mkdirSync(dir, { recursive: true });
const meta = {
  what: `open loop, ${SECONDS} s per point, service S = ${S} ms, C = ${C} per board, ${BOARDS} working boards on each side (capacity ${CAPACITY} req/s): ews's master forwards only (masterWork forward, a board of its own, as HAProxy is a process of its own), client timeout ${TIMEOUT_MS} ms`,
  node: process.version,
};
writeFileSync(join(dir, 'table1.json'), `${JSON.stringify({ ...meta, rows }, null, 2)}\n`);
const md = [
  `# Paper 001 Table 1, with HAProxy side by side (${new Date().toISOString()})`,
  '',
  `${meta.what}.`,
  '',
  '| system | HIGH share | load | HIGH done/s | HIGH p50 | HIGH p99 | HIGH p99 after 1 s | HIGH fail | LOW done/s | LOW p50 | LOW p99 | LOW fail | board ms wasted |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ...rows.map(
    (r) =>
      `| ${r.system} | ${r.highShare * 100}% | ${r.load}× | ${r.high.donePerS} | ${r.high.p50Ms} | ${r.high.p99Ms} | ${r.high.p99SteadyMs} | ${r.high.failures} | ${r.low.donePerS} | ${r.low.p50Ms} | ${r.low.p99Ms} | ${r.low.failures} | ${r.wastedBoardMs} |`,
  ),
  '',
  'At 3× capacity, against HAProxy with priority classes (whole run; after the first second), and LOW against ews before the reserve and the pace (reserve 0 unpaced):',
  ...SHARES.flatMap((share) => {
    const at = (system: string) => rows.find((r) => r.system === system && r.highShare === share && r.load === 3)!;
    const hap = at('HAProxy priority');
    const base = at('ews priority reserve 0 unpaced');
    return [...new Set(rows.map((r) => r.system))]
      .filter((x) => x.startsWith('ews priority'))
      .map(
        (x) =>
          `- HIGH ${share * 100}%, ${x}: HIGH p99 ${+(at(x).high.p99Ms / hap.high.p99Ms).toFixed(2)}× HAProxy's (after 1 s: ${+(at(x).high.p99SteadyMs / hap.high.p99SteadyMs).toFixed(2)}×); LOW ${+(at(x).low.donePerS / Math.max(0.1, base.low.donePerS)).toFixed(2)}× the LOW done/s of ews before.`,
      );
  }),
].join('\n');
writeFileSync(join(dir, 'table1.md'), `${md}\n`);
const colors: Record<string, string> = {
  'ews priority': '#0b63c5',
  'ews priority reserve 0': '#2e8b57',
  'ews priority reserve 0.17': '#8b2e6b',
  'ews priority standing 300 ms': '#c0392b',
  'ews priority unpaced': '#6a5acd',
  'ews priority reserve 0 unpaced': '#16a085',
  'ews priority standing off': '#7f8c8d',
  'ews priority wait 0 ms': '#2c3e50',
  'ews priority wait 5 ms': '#a04000',
  'ews priority wait 20 ms': '#d4ac0d',
  'HAProxy priority': '#e8710a',
  'ews fifo': '#7cb2e8',
  'HAProxy fifo': '#f5b27a',
};
for (const share of SHARES) {
  for (const [metric, label] of [
    ['p99Ms', 'HIGH p99 (ms)'],
    ['donePerS', 'HIGH done per second'],
  ] as const) {
    const series = [...new Set(rows.map((r) => r.system))].map((sys) => ({
      name: sys,
      color: colors[sys] ?? '#888',
      dash: sys.endsWith('fifo'),
      points: rows.filter((r) => r.system === sys && r.highShare === share).map((r) => [r.load, r.high[metric]] as [number, number]),
    }));
    writeFileSync(
      join(dir, `table1-high-${metric === 'p99Ms' ? 'p99' : 'done'}-${share * 100}.svg`),
      lineChart(`${label}, HIGH = ${share * 100}% of traffic`, 'offered load (× capacity)', label, series),
    );
  }
}
process.stdout.write(`${md}\n`);
