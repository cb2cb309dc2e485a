// npm run bench:boards — paper 001 Fig. 5 on board-like CPUs: does a cluster of boards serve more
// than one? Every board process runs in its own cgroup with a CPU quota (a fraction of one core);
// 1, 2 and 3 boards at 20 %, single boards at 25 % and 12 %, and the paper's mixed set (two at
// 25 % and one at 12 %, "UP-ARM3000 ×2 + XSBase255"). Two CGIs: one that waits on I/O
// (/cgi-bin/echo?ms=20) and one that burns CPU (/cgi-bin/burn?ms=2). HAProxy (leastconn, maxconn
// C) in front of the same number of plain servers with the same service model runs in the same
// run, HAProxy in board 1's cgroup. Then, unconstrained, a same-run wrk comparison (each system RUNS times, interleaved, the median;
// a ratio is the median of the rounds' ratios): the 3-board master against HAProxy + 3 plain servers, one board against a plain
// Node server. The baselines answer what a board answers, security headers included (bench/backend.ts).
// In the board-like setups the boards (and HAProxy with its plain servers) run on CPU 0, wrk on CPU 1
// (bench/placement.ts).
// Writes bench/results/boards.{md,json,svg}.

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REHEARSAL_FIRST_MS } from '../node/http/rehearsal.ts';
import { REHEARSE_REQUESTS_MAX } from '../shared/config.ts';
import { BOARD_NODE_FLAGS } from '../shared/node-flags.ts';
import { securityHeaders } from '../shared/security-headers.ts';
import { freePorts, metric, waitFor } from '../test/integration/harness.ts';
import { type CpuGroup, cgroupsAvailable, cpuGroup, PERIOD_US } from './cgroup.ts';
import { writeResults } from './dispatch.ts';
import { boardSide, placementText } from './placement.ts';
import { spread } from './spread.ts';
import { stopAll } from './stop-all.ts';
import { lineChart } from './svg.ts';
import { type Wrk, wrk } from './wrk.ts';

const ROOT = resolve(import.meta.dirname, '..');
const BUNDLE = join(ROOT, 'dist/ews.js');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const CONNS = Number(process.env.BENCH_CONNS ?? 64);
/** CFS periods in a measured run. */
const PERIODS = Math.round((SECONDS * 1e6) / PERIOD_US);
const C = 16;
// Runs per point: this machine's speed drifts by up to 2× over minutes (a shared host).
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const WARM_WINDOW_S = 3;
const WARM_WINDOWS_MIN = 5;
const WARM_WINDOWS = Number(process.env.BENCH_WARM_WINDOWS ?? 10);
const WORKLOADS = { io: '/cgi-bin/echo?ms=20', cpu: '/cgi-bin/burn?ms=2' } as const;
type Workload = keyof typeof WORKLOADS;

interface Target {
  url: string;
  groups: CpuGroup[];
  pids: number[];
  stop(): Promise<void>;
}

/** What a started system is: its entry URL, CPU groups and processes, and how to stop it. */
const target = (url: string, groups: CpuGroup[], procs: ChildProcess[], dir: string): Target => ({
  url,
  groups,
  pids: procs.map((p) => p.pid!),
  stop: async () => {
    await stopAll(procs);
    rmSync(dir, { recursive: true, force: true });
    for (const g of groups) g.remove();
  },
});

const groupsFor = (tag: string, shares: readonly number[]): CpuGroup[] => shares.map((s, i) => cpuGroup(`${tag}-${i + 1}`, s));

/** What a board's /api/cluster says, as far as the benches read it. */
const clusterAt = async (url: string) => (await (await fetch(`${url}/api/cluster`)).json()) as { term: number; master: string | null; boards: Array<{ id: string; url: string; runstate: number }> };

/** An ews cluster; `shares` undefined = unconstrained. Board 1 is the master and the entry. */
async function ews(n: number, shares: readonly number[] | undefined, timings: 'bench' | 'default' = 'bench', cluster: Record<string, unknown> = {}, placed = true): Promise<Target> {
  const ports = await freePorts(2 * n);
  const cfg = {
    cluster: {
      name: 'bench',
      key: randomBytes(32).toString('hex'),
      broadcast: 'peers',
      ...(timings === 'bench' ? { heartbeatMs: 100, tmaxMs: 1000, tthresholdMs: 1000, staggerMs: 200 } : {}),
      masterWork: process.env.BENCH_MASTER_WORK ?? 'spill',
      ...cluster,
    },
    boards: Array.from({ length: n }, (_, i) => ({ id: `b${i + 1}`, address: '127.0.0.1', httpPort: ports[2 * i]!, udpPort: ports[2 * i + 1]! })),
    limits: { inFlightPerBoardMax: C, connectionsMax: 4096, queueMax: 4096 },
    auth: { disabled: true },
    stateDir: false, // memory only, said so: a bench run leaves nothing behind
    benchmarkHandlers: true,
  };
  const dir = mkdtempSync(join(tmpdir(), 'ews-boards-'));
  const file = join(dir, 'c.json');
  writeFileSync(file, JSON.stringify(cfg));
  const groups = shares ? groupsFor(`ews${n}`, shares) : [];
  const procs = cfg.boards.map((b, i) => {
    // BENCH_BOARD_LOGS=DIR: each board's log (info and up) in DIR/<board>.log, to see what happened in a run.
    const logs = process.env.BENCH_BOARD_LOGS;
    const out = logs ? openSync(join(logs, `${b.id}.log`), 'a') : 'ignore';
    const argv = [...BOARD_NODE_FLAGS, BUNDLE, 'start', '--config', file, '--board', b.id];
    const [cmd, args] = boardSide(process.execPath, argv, shares !== undefined && placed);
    const p = spawn(cmd, args, { stdio: ['ignore', out, out], env: { ...process.env, EWS_LOG_LEVEL: logs ? 'info' : 'warn' } });
    groups[i]?.add(p.pid!);
    return p;
  });
  const url = `http://127.0.0.1:${cfg.boards[0]!.httpPort}`;
  await waitFor(
    'ews boards',
    async () => {
      const v = await clusterAt(url);
      // The bench timings stagger the boot so that b1 wins; at the defaults any master will do.
      return (timings === 'bench' ? v.master === 'b1' : v.master !== null) && v.boards.every((b) => b.runstate === 1);
    },
    30_000,
    100,
  );
  return target(url, groups, procs, dir);
}

/** The security headers a board's answers carry, added by HAProxy as an ews master adds them (the same answer). */
const frontHeaders = (port: number): string =>
  securityHeaders(`http://127.0.0.1:${port} http://localhost:${port}`, false)
    .map(([k, v]) => `  http-after-response set-header ${k} "${v}"`)
    .join('\n');

/** HAProxy (leastconn, maxconn C) in front of n plain servers; HAProxy shares board 1's group. */
async function haproxy(n: number, shares: readonly number[] | undefined): Promise<Target> {
  const [front, ...backs] = await freePorts(1 + n);
  const groups = shares ? groupsFor(`hap${n}`, shares) : [];
  const procs = backs.map((p, i) => {
    const argv = ['--import', 'tsx', join(ROOT, 'bench/backend.ts'), String(p)];
    const [cmd, args] = boardSide(process.execPath, argv, shares !== undefined);
    const c = spawn(cmd, args, { stdio: 'ignore' });
    groups[i]?.add(c.pid!);
    return c;
  });
  const dir = mkdtempSync(join(tmpdir(), 'ews-haproxy-'));
  writeFileSync(
    join(dir, 'haproxy.cfg'),
    `global
  maxconn 8192
  nbthread 1
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  timeout queue 10s
  http-reuse always
frontend fe
  bind 127.0.0.1:${front}
${frontHeaders(front!)}
  default_backend be
backend be
  balance leastconn
${backs.map((p, i) => `  server s${i + 1} 127.0.0.1:${p} maxconn ${C}`).join('\n')}
`,
  );
  const hpArgv = ['-db', '-f', join(dir, 'haproxy.cfg')];
  const [hpCmd, hpArgs] = boardSide('haproxy', hpArgv, shares !== undefined);
  const hp = spawn(hpCmd, hpArgs, { stdio: 'ignore' });
  groups[0]?.add(hp.pid!);
  procs.push(hp);
  const url = `http://127.0.0.1:${front}`;
  await waitFor('haproxy up', async () => (await fetch(`${url}/cgi-bin/echo?ms=1`)).ok, 20_000, 50);
  return target(url, groups, procs, dir);
}

/** A plain Node HTTP server answering what a board's echo answers, security headers included. */
async function plain(): Promise<Target> {
  const [port] = await freePorts(1);
  const p = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/backend.ts'), String(port), '--front'], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  await waitFor('plain server', async () => (await fetch(`${url}/cgi-bin/echo?ms=0`)).ok, 10_000, 50);
  return { url, groups: [], pids: [p.pid!], stop: () => stopAll([p]) };
}

const cpuOf = (pid: number): number => {
  // utime + stime in clock ticks (100 Hz) → µs.
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * 10_000;
};

interface Row {
  system: 'ews' | 'haproxy';
  set: string;
  workload: Workload;
  boards: number;
  shares: readonly number[];
  rps: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  cpuPctPerBoard: number[];
  entryCpuUsPerRequest: number;
  /** CFS periods of the measured run in which the entry board's group hit its quota (of PERIODS). */
  entryThrottled: number;
  proxyCpuUsPerRequest?: number;
  /** Seconds of load before the measured run (until throughput settled). */
  warmS: number;
  /** Lowest and highest req/s over the runs of this point. */
  rpsRange?: [number, number];
}

/**
 * Load until throughput settles: at least WARM_WINDOWS_MIN windows of WARM_WINDOW_S, then until
 * two in a row agree within 5 % (at most WARM_WINDOWS). At 20 % of a core V8 keeps optimising
 * the request path for 15-20 s of load; a 1 s warm-up measured the JIT, not the board (3 boards:
 * 440-580 req/s after 1 s, 850-980 after 15 s, same bundle), and two close 3 s windows early in
 * the climb stopped the warm-up at 9 s. A board runs for days: the settled figure is the one that counts.
 */
async function warmUp(url: string, boardLike = true): Promise<number> {
  let last = 0;
  for (let i = 1; i <= WARM_WINDOWS; i++) {
    const { rps } = await wrk(url, WARM_WINDOW_S, CONNS, boardLike);
    if (i >= WARM_WINDOWS_MIN && Math.abs(rps - last) <= 0.05 * Math.max(rps, last)) return i * WARM_WINDOW_S;
    last = rps;
  }
  return WARM_WINDOWS * WARM_WINDOW_S;
}

async function measure(system: Row['system'], set: string, shares: readonly number[], workload: Workload): Promise<Row> {
  const t = system === 'ews' ? await ews(shares.length, shares) : await haproxy(shares.length, shares);
  try {
    const warmS = await warmUp(t.url + WORKLOADS[workload]);
    const before = t.groups.map((g) => g.usageUs());
    const throttledBefore = t.groups[0]!.throttledPeriods();
    const hpBefore = system === 'haproxy' ? cpuOf(t.pids.at(-1)!) : 0;
    const r = await wrk(t.url + WORKLOADS[workload], SECONDS, CONNS, true);
    const used = t.groups.map((g, i) => g.usageUs() - before[i]!);
    const total = r.rps * SECONDS;
    const row: Row = {
      system,
      set,
      workload,
      boards: shares.length,
      shares,
      rps: r.rps,
      p50Ms: r.p50Ms,
      p99Ms: r.p99Ms,
      errors: r.errors,
      cpuPctPerBoard: used.map((u) => +((100 * u) / (SECONDS * 1e6)).toFixed(1)),
      entryCpuUsPerRequest: Math.round(used[0]! / Math.max(1, total)),
      entryThrottled: t.groups[0]!.throttledPeriods() - throttledBefore,
      warmS,
    };
    if (system === 'haproxy') row.proxyCpuUsPerRequest = Math.round((cpuOf(t.pids.at(-1)!) - hpBefore) / Math.max(1, total));
    process.stdout.write(
      `${system.padEnd(8)} ${set.padEnd(10)} ${workload.padEnd(4)} ${String(r.rps).padStart(6)} req/s p50 ${r.p50Ms} p99 ${r.p99Ms} err ${r.errors} cpu% ${row.cpuPctPerBoard.join('/')} throttled ${row.entryThrottled} warm ${warmS} s\n`,
    );
    return row;
  } finally {
    await t.stop();
  }
}

/** Each unconstrained system's median run, its range, and every round's req/s in round order. */
type Free = Record<string, Wrk & { rpsRange: [number, number]; runsRps: number[] }>;

/** a against b: the median of the runs' ratios, each from two systems measured one after the other in the same round. */
const pairedRatio = (free: Free, a: string, b: string): number => +spread(free[a]!.runsRps.map((x, r) => x / free[b]!.runsRps[r]!)).median.toFixed(2);

/** Unconstrained, side by side: each system RUNS times, interleaved; each one's median run. */
async function unconstrained(): Promise<Free> {
  const runs: Record<string, Wrk[]> = {};
  const path = '/cgi-bin/echo?ms=0';
  const systems = [
    ['plain', () => plain()],
    ['ews1', () => ews(1, undefined)],
    ['ews3', () => ews(3, undefined)],
    ['haproxy3', () => haproxy(3, undefined)],
  ] as const;
  for (let r = 0; r < RUNS; r++) {
    for (const [name, make] of systems) {
      const t = await make();
      try {
        await warmUp(t.url + path, false);
        const w = await wrk(t.url + path, SECONDS, CONNS);
        runs[name] = [...(runs[name] ?? []), w];
        process.stdout.write(`unconstrained ${name.padEnd(9)} run ${r + 1}: ${w.rps} req/s p50 ${w.p50Ms} p99 ${w.p99Ms}\n`);
      } finally {
        await t.stop();
      }
    }
  }
  return Object.fromEntries(
    Object.entries(runs).map(([name, list]) => {
      const sorted = [...list].sort((a, b) => a.rps - b.rps);
      return [name, { ...sorted[Math.floor((sorted.length - 1) / 2)]!, rpsRange: [sorted[0]!.rps, sorted.at(-1)!.rps] as [number, number], runsRps: list.map((w) => w.rps) }];
    }),
  );
}

if (!cgroupsAvailable()) {
  process.stderr.write('bench:boards needs the cgroup v1 cpu and cpuacct controllers at /sys/fs/cgroup (as root)\n');
  process.exit(2);
}

/**
 * BENCH_ONLY=takeovers: the CPU-bound setup (3 boards at 20 %, wrk 64 connections on the CPU CGI
 * through the master) at the product's default timings, TAKEOVER_RUNS runs of TAKEOVER_S: term
 * changes, and how far apart the master sent its STATEs and the nodes read them.
 */
async function takeovers(): Promise<void> {
  const S = Number(process.env.TAKEOVER_S ?? 60);
  const runsN = Number(process.env.TAKEOVER_RUNS ?? 3);
  const metricIn = (text: string, name: string) =>
    Number(
      text
        .split('\n')
        .find((l) => l.startsWith(`${name} `))
        ?.slice(name.length + 1) ?? NaN,
    );
  const runs = [];
  for (let r = 1; r <= runsN; r++) {
    const t = await ews(3, [0.2, 0.2, 0.2], 'default', {}, false);
    try {
      const cluster = () => clusterAt(t.url);
      const before = await cluster();
      // The load enters at the master, as a client's would through the VIP.
      const entry = before.boards.find((b) => b.id === before.master)!.url;
      const w = await wrk(entry + WORKLOADS.cpu, S, CONNS);
      const after = await cluster();
      const texts = await Promise.all(after.boards.map(async (b) => [b.id, await (await fetch(`${b.url}/metrics`)).text()] as const));
      const masterText = texts.find(([id]) => id === before.master)![1];
      const nodeTexts = texts.filter(([id]) => id !== before.master).map(([, x]) => x);
      const run = {
        run: r,
        termChanges: after.term - before.term,
        termAtLoad: before.term,
        masterBefore: before.master,
        masterAfter: after.master,
        rps: w.rps,
        errors: w.errors,
        masterSendGapMaxMs: Math.round(1000 * metricIn(masterText, 'ews_state_send_gap_max_seconds')),
        nodeReadGapMaxMs: Math.round(1000 * Math.max(...nodeTexts.map((x) => metricIn(x, 'ews_state_gap_max_seconds')))),
        nodeReadGapsOverTmax: nodeTexts.reduce((a, x) => a + metricIn(x, 'ews_state_gaps_late_total{over="tmax"}'), 0),
        masterSendGapsOverTmax: metricIn(masterText, 'ews_state_gaps_late_total{over="tmax_sending"}'),
      };
      runs.push(run);
      process.stdout.write(`takeovers run ${r}: ${JSON.stringify(run)}\n`);
    } finally {
      await t.stop();
    }
  }
  const data = {
    what: `3 ews boards each in a cgroup v1 CPU quota of 20 % of a core (CFS period 100 ms, threads free on both CPUs), the default timings (heartbeat 20 ms, Tmax 120 ms), wrk ${CONNS} connections on ${WORKLOADS.cpu} through the master for ${S} s, ${runsN} runs`,
    at: new Date().toISOString(),
    runs,
  };
  const md = `# Term changes under CPU saturation (${data.at})

Generated by \`BENCH_ONLY=takeovers npm run bench:boards\`: ${data.what}.

| run | term when the load began | term changes under load | master before → after | req/s | errors | master's longest STATE send gap | its sends > Tmax apart | nodes' longest read gap | reads > Tmax apart |
|---|---|---|---|---|---|---|---|---|---|
${runs.map((x) => `| ${x.run} | ${x.termAtLoad} | ${x.termChanges} | ${x.masterBefore} → ${x.masterAfter} | ${x.rps} | ${x.errors} | ${x.masterSendGapMaxMs} ms | ${x.masterSendGapsOverTmax} | ${x.nodeReadGapMaxMs} ms | ${x.nodeReadGapsOverTmax} |`).join('\n')}

Term changes in all: ${runs.reduce((a, x) => a + x.termChanges, 0)}. A read gap past Tmax is not a silence the node judged:
it reads what waits in its socket before its tick (its own stall and the master's add up in the
gap, not in the judgement).
`;
  writeResults('takeovers', data, md);
  process.stdout.write(md);
}

/**
 * BENCH_ONLY=takeover-speed: how fast a new master forwards. 4 boards at 20 %, the I/O CGI through
 * b1 until throughput settles; then b1 is killed (SIGKILL), and as soon as a new master is named
 * the load goes to it: req/s in its first TAKEOVER_FIRST_S, then after it has settled, beside one
 * board at 20 % (settled) in the same run. Each round five times: the new master a node until
 * then (it rehearsed the master's path, the default), a node that did not (cluster.rehearseRequests
 * 0), one that had been the master under the same load (its code warm, though the handover back
 * deoptimizes some of it), a node whose rehearsal was of 10 000 requests (the bound; not the
 * default, for its memory); and no takeover at all: 3 boards, the load on a settled master paused
 * and started again (the most warming could give). RUNS rounds; the median of each figure.
 */
async function takeoverSpeed(): Promise<void> {
  const FIRST_S = Number(process.env.TAKEOVER_FIRST_S ?? 8);
  // The issue's other window (a new master at 80 % of its settled rate in its first 5 s): read from
  // the new master's count of served requests during the first FIRST_S's one wrk run.
  const FIVE_S = Math.min(5, FIRST_S);
  const served = (url: string): Promise<number> => metric(url, 'ews_requests_total', { outcome: 'served' });
  const path = WORKLOADS.io;
  // 'node, 10 000 rehearsed': cluster.rehearseRequests at its bound, and the kill only after every
  // node's rehearsal has ended (about 50 s): what a longer rehearsal gives. Not the default: it
  // costs a node more than the idle memory budget on armv7l (bench/results/README.md).
  // 'no takeover': 3 boards, b1 the master under the same load, the load stopped for PAUSE_MS (about
  // what a takeover takes at the bench timings) and started again, no board lost: a master whose
  // code is warm, with the boards a takeover leaves, the most any warming could give.
  const KINDS = ['node', 'node, no rehearsal', 'master', 'node, 10 000 rehearsed', 'no takeover'] as const;
  const PAUSE_MS = 1000;
  const clusterFor: Record<(typeof KINDS)[number], Record<string, unknown>> = {
    node: {},
    'node, no rehearsal': { rehearseRequests: 0 },
    master: {},
    'node, 10 000 rehearsed': { rehearseRequests: REHEARSE_REQUESTS_MAX },
    'no takeover': {},
  };
  const rehearsalsEnded = (urls: readonly string[]) =>
    waitFor(
      "the nodes' rehearsals",
      async () => {
        for (const u of urls) if ((await metric(u, 'ews_rehearsing')) !== 0 || (await metric(u, 'ews_rehearsed_requests_total')) === 0) return false;
        return true;
      },
      120_000,
      500,
    );
  type Run = { run: number; before: (typeof KINDS)[number]; takeoverMs: number | null; newMaster: string; first5Rps: number; firstRps: number; settledRps: number; oneRps: number };
  const runs: Run[] = [];
  const handover = async (from: string, to: string) => {
    const r = await fetch(`${from}/api/cluster/handover?to=${to}`, { method: 'POST' });
    if (!r.ok) throw new Error(`handover to ${to}: ${r.status} ${await r.text()}`);
    await waitFor(`${to} master`, async () => (await clusterAt(from)).master === to, 10_000, 20);
  };
  for (let r = 1; r <= RUNS; r++) {
    const one = await ews(1, [0.2]);
    let oneRps: number;
    try {
      await warmUp(one.url + path);
      oneRps = (await wrk(one.url + path, FIRST_S, CONNS, true)).rps;
    } finally {
      await one.stop();
    }
    // 'node': the board that takes over never forwarded a client's request; it rehearsed the
    // master's path soon after it started (node/http/rehearsal.ts), and 'node, no rehearsal' did
    // not. 'master': it was the master under the same load until b1 took the cluster back (two
    // planned handovers) and settled: a board whose code the master's path has warmed, though the
    // handover back deoptimizes some of it (traced: bench/results/README.md).
    for (const before of KINDS) {
      const n = before === 'no takeover' ? 3 : 4;
      const t = await ews(n, Array<number>(n).fill(0.2), 'bench', clusterFor[before]);
      try {
        const urls = (await clusterAt(t.url)).boards.map((b) => b.url);
        if (before === 'master') {
          await handover(t.url, 'b2');
          await warmUp(urls[1]! + path);
          await handover(urls[1]!, 'b1');
        }
        await warmUp(t.url + path);
        if (before === 'node, 10 000 rehearsed') await rehearsalsEnded(urls.slice(1));
        let entry: string | undefined;
        let newMaster = '';
        // null with no takeover: nothing was measured.
        let takeoverMs: number | null = null;
        if (before === 'no takeover') {
          await new Promise((r) => setTimeout(r, PAUSE_MS));
          entry = t.url;
          newMaster = 'b1';
        } else {
          const killedAt = performance.now();
          process.kill(t.pids[0]!, 'SIGKILL');
          await waitFor(
            'a new master',
            async () => {
              const v = await clusterAt(urls[1]!);
              if (v.master === null || v.master === 'b1') return false;
              newMaster = v.master;
              entry = v.boards.find((b) => b.id === v.master)!.url;
              return true;
            },
            10_000,
            10,
          );
          takeoverMs = Math.round(performance.now() - killedAt);
        }
        const servedBefore = await served(entry!);
        const loadAt = performance.now();
        const running = wrk(entry! + path, FIRST_S, CONNS, true);
        await new Promise((r) => setTimeout(r, FIVE_S * 1000));
        // Counted up to the moment the count is read, a little after FIVE_S: the rate errs low.
        const first5Rps = ((await served(entry!)) - servedBefore) / ((performance.now() - loadAt) / 1000);
        const firstRps = (await running).rps;
        await warmUp(entry! + path);
        const settled = await wrk(entry! + path, FIRST_S, CONNS, true);
        const run = { run: r, before, takeoverMs, newMaster, first5Rps: Math.round(first5Rps), firstRps, settledRps: settled.rps, oneRps };
        runs.push(run);
        process.stdout.write(`takeover-speed run ${r}: ${JSON.stringify(run)}\n`);
      } finally {
        await t.stop();
      }
    }
  }
  const med = (before: Run['before'], f: (x: Run) => number) => spread(runs.filter((x) => x.before === before).map(f)).median;
  // A ratio per round (the round's own anchor, measured minutes apart at most), then their median.
  const ratio = (a: number, b: number) => +(a / b).toFixed(2);
  const medians = (before: Run['before']) => ({
    first: med(before, (x) => x.firstRps),
    settled: med(before, (x) => x.settledRps),
    one: med(before, (x) => x.oneRps),
    firstPerOne: med(before, (x) => ratio(x.firstRps, x.oneRps)),
    settledPerOne: med(before, (x) => ratio(x.settledRps, x.oneRps)),
    firstPerSettled: med(before, (x) => ratio(x.firstRps, x.settledRps)),
    first5PerSettled: med(before, (x) => ratio(x.first5Rps, x.settledRps)),
  });
  const data = {
    what: `4 ews boards each in a cgroup v1 CPU quota of 20 % of a core (bench timings: heartbeat 100 ms, Tmax 1 s), ${placementText(false)}, wrk ${CONNS} connections on ${path} through b1 until throughput settled; b1 killed (SIGKILL); the load moved to the new master as soon as it was named: req/s in its first ${FIRST_S} s (and in its first ${FIVE_S} s, from its own count of served requests, read before the load and ${FIVE_S} s into it), and ${FIRST_S} s after it settled; beside one board at 20 % (settled), ${RUNS} runs. ${KINDS.length} kinds of run, one after the other in each round: the new master was a node until then that rehearsed the master's path ${REHEARSAL_FIRST_MS / 1000} s after it started (before: node, the default), a node with cluster.rehearseRequests 0 (before: node, no rehearsal), or it had been the master under the same load until it handed the cluster back to b1 (two planned handovers) and b1 settled (before: master): a board whose code the master's path has warmed, though the handover back deoptimizes some of it; or a node whose rehearsals were of ${REHEARSE_REQUESTS_MAX} requests (cluster.rehearseRequests at its bound, not the default), killed only after every node's rehearsal had ended (before: node, 10 000 rehearsed); and, with no takeover (before: no takeover), 3 boards whose master b1 settled under the same load, the load stopped for ${PAUSE_MS / 1000} s (about what a takeover takes here) and started again on b1: a master whose code is warm, with as many boards as a takeover leaves, the most any warming could give`,
    at: new Date().toISOString(),
    runs,
    medians: Object.fromEntries(KINDS.map((k) => [k, medians(k)])),
  };
  const line = (before: Run['before']) => {
    const m = medians(before);
    return `- before: ${before}: the first ${FIRST_S} s ${m.first} req/s, settled ${m.settled}, one board ${m.one}; the rounds' own ratios: first ${FIRST_S} s ${m.firstPerOne}× one board (settled ${m.settledPerOne}×), ${m.firstPerSettled}× its settled rate; first ${FIVE_S} s ${m.first5PerSettled}× its settled rate`;
  };
  const md = `# A new master's speed after a takeover (${data.at})

Generated by \`BENCH_ONLY=takeover-speed npm run bench:boards\`: ${data.what}.

| run | before | takeover (kill → named) | new master | its first ${FIVE_S} s | its first ${FIRST_S} s | settled | one board at 20 % | first ${FIRST_S} s / one board | first ${FIRST_S} s / settled | first ${FIVE_S} s / settled |
|---|---|---|---|---|---|---|---|---|---|---|
${runs.map((x) => `| ${x.run} | ${x.before} | ${x.takeoverMs === null ? `none (load paused ${PAUSE_MS / 1000} s)` : `${x.takeoverMs} ms`} | ${x.newMaster} | ${x.first5Rps} req/s | ${x.firstRps} req/s | ${x.settledRps} req/s | ${x.oneRps} req/s | ${ratio(x.firstRps, x.oneRps)}× | ${ratio(x.firstRps, x.settledRps)}× | ${ratio(x.first5Rps, x.settledRps)}× |`).join('\n')}

Medians (3 boards serve in every kind: those left after the kill, or the 3 of the run with no takeover; a ratio is the median of the rounds' ratios):
${KINDS.map(line).join('\n')}
`;
  writeResults('takeover-speed', data, md);
  process.stdout.write(md);
}

const SETS: Record<string, readonly number[]> = { '1×20%': [0.2], '2×20%': [0.2, 0.2], '3×20%': [0.2, 0.2, 0.2], '1×25%': [0.25], '1×12%': [0.12], mixed: [0.25, 0.25, 0.12] };
// BENCH_ONLY=ews,io,1×20%,3×20% (a quick look at a few points; the full run writes the results)
const only = process.env.BENCH_ONLY?.split(',');
if (only?.includes('takeovers')) {
  await takeovers();
  process.exit(0);
}
if (only?.includes('takeover-speed')) {
  await takeoverSpeed();
  process.exit(0);
}
if (only?.includes('unconstrained')) {
  // BENCH_ONLY=unconstrained: the same-run unconstrained comparison alone, in a page of its own.
  const free = await unconstrained();
  const ratio = (a: string, b: string) => pairedRatio(free, a, b);
  const range = (k: string) => `${free[k]!.rpsRange[0]}-${free[k]!.rpsRange[1]}`;
  const data = {
    what: `wrk, ${CONNS} keep-alive connections, ${SECONDS} s per run after a warm-up, /cgi-bin/echo?ms=0 (answered at once by both: the plain server with the same body and headers as a board, security headers included; HAProxy adds those headers as an ews master does), each system ${RUNS} times interleaved (the median run); a ratio is the median of the rounds' ratios, each between two systems measured one after the other`,
    at: new Date().toISOString(),
    node: process.version,
    boardNodeFlags: BOARD_NODE_FLAGS,
    unconstrained: free,
    ratios: { ews1VsPlainNode: ratio('ews1', 'plain'), ews3MasterVsHaproxy3: ratio('ews3', 'haproxy3') },
  };
  const md = `# Unconstrained: one ews board against a plain Node server, a 3-board master against HAProxy (${data.at})

${data.what}; no CPU quotas, the 2 cores shared with wrk.

| system | req/s (median) | runs' range | p50 ms | p99 ms |
|---|---|---|---|---|
${(['plain', 'ews1', 'haproxy3', 'ews3'] as const).map((k) => `| ${k} | ${free[k]!.rps} | ${range(k)} | ${free[k]!.p50Ms} | ${free[k]!.p99Ms} |`).join('\n')}

One ews board / plain Node: ${data.ratios.ews1VsPlainNode}× (rounds: ${free.ews1!.runsRps.map((x, r) => (x / free.plain!.runsRps[r]!).toFixed(2)).join(', ')}); a 3-board ews master / HAProxy + 3 plain servers: ${data.ratios.ews3MasterVsHaproxy3}× (rounds: ${free.ews3!.runsRps.map((x, r) => (x / free.haproxy3!.runsRps[r]!).toFixed(2)).join(', ')}).
`;
  writeResults('boards-unconstrained', data, md);
  process.stdout.write(md);
  process.exit(0);
}
const rows: Row[] = [];
for (const workload of Object.keys(WORKLOADS) as Workload[]) {
  if (only && !only.includes(workload)) continue;
  for (const [set, shares] of Object.entries(SETS)) {
    if (only && !only.includes(set)) continue;
    if (only) {
      for (const system of ['ews', 'haproxy'] as const) if (only.includes(system)) await measure(system, set, shares, workload);
      continue;
    }
    // Side by side: the same set on both systems, one after the other, RUNS times; the row is the
    // run with the median throughput, with the range of all runs beside it.
    const runs: Record<Row['system'], Row[]> = { ews: [], haproxy: [] };
    for (let r = 0; r < RUNS; r++) for (const system of ['ews', 'haproxy'] as const) runs[system].push(await measure(system, set, shares, workload));
    for (const system of ['ews', 'haproxy'] as const) {
      const sorted = runs[system].sort((x, y) => x.rps - y.rps);
      rows.push({ ...sorted[Math.floor((sorted.length - 1) / 2)]!, rpsRange: [sorted[0]!.rps, sorted.at(-1)!.rps] });
    }
  }
}
if (only) process.exit(0);
const free = await unconstrained();

const get = (system: string, set: string, w: Workload) => rows.find((r) => r.system === system && r.set === set && r.workload === w)!;
const scale: Record<string, Record<string, number>> = {};
for (const system of ['ews', 'haproxy']) {
  for (const w of Object.keys(WORKLOADS) as Workload[]) {
    const one = get(system, '1×20%', w).rps;
    const mixedSum = 2 * get(system, '1×25%', w).rps + get(system, '1×12%', w).rps;
    scale[`${system} ${w}`] = {
      twoVsOne: +(get(system, '2×20%', w).rps / one).toFixed(2),
      threeVsOne: +(get(system, '3×20%', w).rps / one).toFixed(2),
      mixedVsSumOfSingles: +(get(system, 'mixed', w).rps / mixedSum).toFixed(2),
    };
  }
}
const vsHaproxy = Object.fromEntries((Object.keys(WORKLOADS) as Workload[]).map((w) => [w, +(get('ews', '3×20%', w).rps / get('haproxy', '3×20%', w).rps).toFixed(2)]));
const freeRatios = { ews3MasterVsHaproxy3: pairedRatio(free, 'ews3', 'haproxy3'), ews1VsPlainNode: pairedRatio(free, 'ews1', 'plain') };
const data = {
  what: `wrk, ${CONNS} keep-alive connections, ${SECONDS} s per point after a warm-up until throughput settles (${WARM_WINDOW_S} s windows, at least ${WARM_WINDOWS_MIN}, until two agree within 5 %, at most ${WARM_WINDOWS}), ${RUNS} runs per point alternating the two systems (the median run shown); boards in cgroup v1 CPU quotas, ${placementText(true)}; C = ${C} in flight per board; I/O CGI ${WORKLOADS.io}, CPU CGI ${WORKLOADS.cpu}`,
  node: process.version,
  boardNodeFlags: BOARD_NODE_FLAGS,
  at: new Date().toISOString(),
  rows,
  scale,
  ews3VsHaproxy3: vsHaproxy,
  unconstrained: free,
  unconstrainedRatios: freeRatios,
};

const table = rows
  .map(
    (r) =>
      `| ${r.system} | ${r.workload} | ${r.set} | ${r.rps} | ${r.rpsRange?.join('–') ?? ''} | ${r.p50Ms} | ${r.p99Ms} | ${r.errors} | ${r.cpuPctPerBoard.join(' / ')} | ${r.entryCpuUsPerRequest}${r.proxyCpuUsPerRequest !== undefined ? ` (HAProxy alone ${r.proxyCpuUsPerRequest})` : ''} | ${r.entryThrottled} |`,
  )
  .join('\n');
const md = `# Boards: does a cluster serve more than one board? (paper 001 Fig. 5)

${data.what}. Run ${data.at}, ${data.node}.

Paper 001 (Fig. 5): with the same load, three boards answer more requests than one; the mixed
cluster (two UP-ARM3000 + one XSBase255) sits between.

| system | CGI | boards | req/s (median) | range over runs | p50 ms | p99 ms | errors | CPU % of a core per board | entry board CPU µs per request | entry board throttled periods (of ${PERIODS}) |
|---|---|---|---|---|---|---|---|---|---|---|
${table}

Throttled periods: the ${PERIOD_US / 1000} ms CFS periods of the median run in which the entry board's group used its
whole quota and was stopped until the next one. The entry board's answers, and at a master those of
every board, wait out the rest of such a period.

Scale (req/s against one board at 20 %): ${Object.entries(scale)
  .map(([k, v]) => `**${k}**: 2 boards ${v.twoVsOne}×, 3 boards ${v.threeVsOne}×, mixed ${v.mixedVsSumOfSingles}× of the sum of its single boards`)
  .join('; ')}.

ews 3×20 % against HAProxy + 3 plain servers on the same quotas: I/O ${vsHaproxy.io}×, CPU ${vsHaproxy.cpu}×.

The I/O CGI is bound by slots, not CPU, on one board: C = ${C} in flight of 20 ms each is at most
${Math.round(C / 0.02)} req/s, whatever the quota. With \`masterWork: forward\` the master runs no
CGI while another board can, so n ews boards have n − 1 boards of slots: at most
${Math.round(C / 0.02)} × (n − 1) req/s, 2 boards ≈ 1×, 3 boards ≈ 2× one board. HAProxy's plain servers all
serve. \`spill\` (the default, measured here) adds the master's slots: it takes the overflow
when the other boards are full, until forwarding and its own work fill its quota (dispatch-path.md).

Unconstrained (2 cores shared with wrk), echo?ms=0 (the plain server answers it at once too, with a board's body and headers; HAProxy adds the security headers as an ews master does), the median of ${RUNS} interleaved runs each, the ratios the median of the rounds': plain Node ${free.plain!.rps} req/s, one ews board
${free.ews1!.rps} (${freeRatios.ews1VsPlainNode}×); HAProxy + 3 plain servers ${free.haproxy3!.rps}, 3-board ews master
${free.ews3!.rps} (${freeRatios.ews3MasterVsHaproxy3}×).

![throughput against board count](boards.svg)
`;
writeResults('boards', data, md);
const colors = { ews: '#0b63c5', haproxy: '#e8710a' } as const;
writeFileSync(
  join(ROOT, 'bench/results/boards.svg'),
  lineChart(
    'Throughput against boards at 20 % of a core (Fig. 5)',
    'boards',
    'req/s',
    (['ews', 'haproxy'] as const).flatMap((s) =>
      (Object.keys(WORKLOADS) as Workload[]).map((w) => ({
        name: `${s} ${w}`,
        color: colors[s],
        dash: w === 'cpu',
        points: (['1×20%', '2×20%', '3×20%'] as const).map((set, i) => [i + 1, get(s, set, w).rps] as [number, number]),
      })),
    ),
  ),
);
process.stdout.write(md);
