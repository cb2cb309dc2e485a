// The experiments of papers 004, 003, 000 and 002, replicated on a running 3-board cluster on
// board-like CPUs under open-loop load (scaled to a few seconds). Each writes a table and an SVG into bench/results/.
// Each paper's controllers run alone: the standing-queue cut, on by default for the first class,
// is off (classes[].standingWaitMs 0).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runCalibrate } from '../node/cli/calibrate.ts';
import { BOARD_NODE_FLAGS } from '../shared/node-flags.ts';
import { freePorts, waitFor } from '../test/integration/harness.ts';
import { type CpuGroup, cgroupsAvailable, cpuGroup } from './cgroup.ts';
import { openLoop, pct } from './open-loop.ts';
import { lineChart } from './svg.ts';

const ROOT = resolve(import.meta.dirname, '..');
const OUT = join(ROOT, 'bench/results');
mkdirSync(OUT, { recursive: true });
const only = process.argv[2];
const S = 100,
  C = 4,
  BOARDS = 3;

/**
 * Board-like CPUs: every board in its own CPU cgroup at this share of a core (BOARD_SHARE, 0.2 by
 * default; 0 runs them unconstrained), where this machine lets us write cgroups.
 */
const SHARE = cgroupsAvailable() && Number(process.env.BOARD_SHARE ?? 0.2) > 0 ? Number(process.env.BOARD_SHARE ?? 0.2) : undefined;
const CPUS = SHARE === undefined ? 'unconstrained boards' : `every board in its own CPU cgroup at ${Math.round(SHARE * 100)} % of a core`;

/** A 3-board cluster on board-like CPUs (SHARE). */
async function cluster(extra: Record<string, unknown>, cpuShare = SHARE): Promise<{ base: string; stop(): Promise<void> }> {
  const ports = await freePorts(2 * BOARDS);
  const boards = Array.from({ length: BOARDS }, (_, i) => ({ id: `b${i + 1}`, address: '127.0.0.1', httpPort: ports[2 * i]!, udpPort: ports[2 * i + 1]! }));
  const file = join(mkdtempSync(join(tmpdir(), 'ews-qos-')), 'c.json');
  writeFileSync(
    file,
    JSON.stringify({
      cluster: { name: 'qos', key: randomBytes(32).toString('hex'), heartbeatMs: 100, tmaxMs: 1000, tthresholdMs: 1000, masterWork: 'forward' },
      boards,
      limits: { inFlightPerBoardMax: C, queueMax: 5000, connectionsMax: 8192 },
      auth: { disabled: true },
      stateDir: false, // memory only, said so: a bench run leaves nothing behind
      ...extra,
    }),
  );
  const procs = boards.map((b) =>
    spawn(process.execPath, [...BOARD_NODE_FLAGS, join(ROOT, 'dist/ews.js'), 'start', '--config', file, '--board', b.id], { stdio: 'ignore', env: { ...process.env, EWS_LOG_LEVEL: 'error' } }),
  );
  const groups: CpuGroup[] =
    cpuShare === undefined
      ? []
      : procs.map((p, i) => {
          const g = cpuGroup(`qos-b${i + 1}`, cpuShare);
          g.add(p.pid!);
          return g;
        });
  const base = `http://127.0.0.1:${boards[0]!.httpPort}`;
  await waitFor(
    'cluster up',
    async () => {
      const v = (await (await fetch(`http://127.0.0.1:${boards[2]!.httpPort}/api/cluster`)).json()) as { master: string | null; boards: Array<{ runstate: number }> };
      return v.master === 'b1' && v.boards.every((x) => x.runstate === 1);
    },
    20_000,
    50,
  );
  return {
    base,
    stop: () =>
      Promise.all(
        procs.map(
          (p) =>
            new Promise<void>((r) => {
              p.once('exit', () => r());
              p.kill('SIGTERM');
            }),
        ),
      ).then(() => {
        for (const g of groups) g.remove();
      }),
  };
}

/** The master's per-class quotas (the first three classes), read from /api/stats every control period. */
function sampleQuotas(base: string): { trace: number[][]; sampler: NodeJS.Timeout } {
  const trace: number[][] = [];
  const sampler = setInterval(async () => {
    const st = (await fetch(`${base}/api/stats`)
      .then((r) => r.json())
      .catch(() => ({}))) as { qos?: { quotas?: number[] } };
    if (st.qos?.quotas) trace.push(st.qos.quotas.slice(0, 3));
  }, 250);
  return { trace, sampler };
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const md: string[] = [];

// ---- 004: FIFO vs DWFS near and past saturation: response time, queue lengths over time, shortest job first as a reference ----
if (!only || only === '004') {
  const kinds = ['browse', 'checkout', 'search', 'static'];
  const ms = { browse: 100, checkout: 160, search: 120, static: 40 } as Record<string, number>;
  // One of each kind in turn: the mean service is (100 + 160 + 120 + 40) / 4 = 105 ms, and the two
  // boards that run work (4 each) serve 8 at once: capacity 8 / 0.105 = 76.2 requests/s.
  const MEAN_SERVICE = 105;
  const SERVERS = 8;
  const capacity = (SERVERS * 1000) / MEAN_SERVICE;
  const RUNS = Number(process.env.QOS_RUNS ?? 5);
  const classes = kinds.map((k, i) => ({ name: k, priority: i, weight: [1, 3, 2, 1][i], match: [{ pathPrefix: `/echo/${k}` }], deadlineMs: 30_000, standingWaitMs: 0 }));
  const rows: string[] = [];
  /** The same arrivals served by 8 servers, FIFO or shortest job first: a reference for what reordering gains (SJF is a heuristic here, not a bound: with several servers and online arrivals it is not optimal). */
  const simulate = (rate: number, seconds: number, sjf: boolean): number => {
    const n = Math.floor(rate * seconds);
    const free = new Array<number>(SERVERS).fill(0);
    const waiting: Array<{ at: number; s: number }> = [];
    let sum = 0,
      done = 0,
      i = 0,
      t = 0;
    while (done < n) {
      const nextArrival = i < n ? (i * 1000) / rate : Infinity;
      const nextFree = Math.min(...free);
      if (waiting.length > 0 && nextFree <= nextArrival) {
        t = Math.max(t, nextFree);
        let k = 0;
        if (sjf) for (let j = 1; j < waiting.length; j++) if (waiting[j]!.s < waiting[k]!.s) k = j;
        const job = waiting.splice(k, 1)[0]!;
        const server = free.indexOf(nextFree);
        free[server] = t + job.s;
        sum += free[server]! - job.at;
        done++;
      } else {
        t = nextArrival;
        waiting.push({ at: t, s: ms[kinds[i % 4]!]! });
        i++;
      }
    }
    return sum / n;
  };
  const queueSeries: Array<{ name: string; color: string; dash?: boolean; points: Array<[number, number]> }> = [];
  const LOADS = [0.95, 1.1, 1.3];
  const meanSeries: typeof queueSeries = [
    { name: 'fifo', color: '#e8710a', points: [] },
    { name: 'dwfs', color: '#0b63c5', points: [] },
    { name: 'simulated SJF', color: '#999999', dash: true, points: LOADS.map((l) => [l, simulate(l * capacity, 8, true)]) },
  ];
  for (const load of LOADS) {
    const rate = load * capacity;
    for (const scheduler of ['fifo', 'dwfs']) {
      const means: number[] = [],
        p99s: number[] = [],
        perKind: number[][] = kinds.map(() => []);
      let lastQueues: number[][] = [];
      for (let run = 0; run < RUNS; run++) {
        const c = await cluster({ classes: [...classes, { name: 'other', priority: 9, match: [{ pathPrefix: '/' }] }], qos: { scheduler, periodMs: 500, dwfsBeta: 0.2 } });
        const queues: number[][] = [];
        const sampler = setInterval(async () => {
          const st = (await fetch(`${c.base}/api/stats`)
            .then((r) => r.json())
            .catch(() => ({}))) as { classes?: Array<{ queued: number }> };
          if (st.classes) queues.push(st.classes.slice(0, 4).map((x) => x.queued));
        }, 250);
        const r = await openLoop(
          c.base,
          rate,
          8,
          (i) => {
            const k = kinds[i % 4]!;
            return { cls: k, path: `/echo/${k}?ms=${ms[k]}` };
          },
          30_000,
        );
        clearInterval(sampler);
        await c.stop();
        const all = Object.values(r.classes).flatMap((x) => x.latencies);
        means.push(mean(all));
        p99s.push(pct(all, 0.99));
        for (const [j, k] of kinds.entries()) perKind[j]!.push(mean(r.classes[k]?.latencies ?? []));
        lastQueues = queues;
      }
      const range = (xs: number[]) => `${Math.round(mean(xs))} (${Math.round(Math.min(...xs))}–${Math.round(Math.max(...xs))})`;
      meanSeries.find((x) => x.name === scheduler)!.points.push([load, mean(means)]);
      rows.push(`| ${load}× | ${scheduler} | ${range(means)} | ${range(p99s)} | ${perKind.map((x) => Math.round(mean(x))).join(' / ')} |`);
      if (load === 1.1)
        for (const [j, k] of kinds.entries())
          queueSeries.push({
            name: `${scheduler} ${k}`,
            color: ['#0b63c5', '#b3261e', '#1b7f3b', '#8a4fff'][j]!,
            dash: scheduler === 'fifo',
            points: lastQueues.map((q, t) => [t / 4, q[j]!] as [number, number]),
          });
    }
    rows.push(`| ${load}× | simulated FIFO / SJF, same arrivals, 8 servers, no overhead | ${Math.round(simulate(rate, 8, false))} / ${Math.round(simulate(rate, 8, true))} | | |`);
  }
  writeFileSync(join(OUT, 'paper004-dwfs.svg'), lineChart('004: mean response time against load (mean of the runs)', 'load (× capacity)', 'ms', meanSeries));
  writeFileSync(join(OUT, 'paper004-queues.svg'), lineChart('004: queue length per kind at 1.1× capacity (last run; dashed FIFO, solid DWFS)', 'time (s)', 'queued', queueSeries));
  md.push(
    '## 004 — FIFO vs DWFS near and past saturation',
    '',
    `Four request kinds (weights browse 1, checkout 3, search 2, static 1; service 100 / 160 / 120 / 40 ms, one of each in turn: a mean of ${MEAN_SERVICE} ms). Two boards run work, 4 at once each: capacity ${capacity.toFixed(1)} requests/s. Open loop for 8 s, ${RUNS} runs per row (mean, and the range over runs). The simulated rows serve the same arrival sequence on 8 ideal servers: FIFO, and shortest job first, a reference for what reordering can gain (a heuristic, not a bound: with 8 servers and arrivals over time it is not optimal, though it minimises the mean on one server).`,
    '',
    '| load | scheduler | mean ms (range) | p99 ms (range) | mean ms per kind (browse / checkout / search / static) |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    '![](paper004-dwfs.svg)',
    '',
    '![](paper004-queues.svg)',
    '',
  );
}

// ---- 003: per-class worker quota, as the paper ran it (a finite batch) and under sustained load ----
if (!only || only === '003') {
  // The paper: 130/90/50 requests, targets 5/10/15 s, 25 slots each of 75. Here: 16 slots (the two
  // boards that run work, 8 each; the master forwards), 400 ms per request, so the whole batch is
  // 6.75 s of work, 27 control periods of 250 ms; targets 4 / 8 / 12 s of queue wait (the paper's
  // response time). Repeated runs; a quota's turns are counted from /api/stats, sampled every period.
  const Q = 400;
  const targets = [4000, 8000, 12000];
  const SLOTS = 16;
  const limits = { inFlightPerBoardMax: 8, queueMax: 5000, connectionsMax: 8192 };
  const RUNS = Number(process.env.QOS_RUNS ?? 5);
  const batch = Array.from({ length: 270 }, (_, i) => i).map((i) => (i % 27 < 13 ? 0 : i % 27 < 22 ? 1 : 2));
  const classes = [0, 1, 2]
    .map((i) => ({ name: `c${i}`, priority: i, targetMs: targets[i], match: [{ pathPrefix: `/echo/c${i}` }], deadlineMs: 60_000, queueMax: 1000, standingWaitMs: 0 }))
    .concat([{ name: 'other', priority: 9, targetMs: 5000, match: [{ pathPrefix: '/' }], deadlineMs: 60_000, queueMax: 1000 } as never]);
  const rows: string[] = [];
  const series: Array<{ name: string; color: string; dash?: boolean; points: Array<[number, number]> }> = [];
  let quotaTrace: number[][] = [];
  const turnsOf = (trace: number[][]) =>
    [0, 1, 2].map((c) => {
      const steps = trace.map((q) => q[c]!).flatMap((v, i, a) => (i > 0 && v !== a[i - 1] ? [Math.sign(v - a[i - 1]!)] : []));
      return steps.filter((x, i) => i > 0 && x !== steps[i - 1]).length;
    });
  /**
   * RUNS runs of one mode: per class the queue waits (latency − service), class 0's share within
   * its target per run (%), the most times a class's quota turned in one run, and the first run's quotas.
   */
  const runMode = async (mode: string, send: (base: string) => ReturnType<typeof openLoop>) => {
    const closed = mode.startsWith('closed');
    const waits: number[][] = [[], [], []];
    const met0: number[] = [];
    const turns = [0, 0, 0];
    let first: number[][] = [];
    for (let run = 0; run < RUNS; run++) {
      const c = await cluster({ classes, limits, qos: { scheduler: 'fifo', periodMs: 250, ...(closed ? { quota: { gain: 0.5 } } : {}) } });
      const { trace, sampler } = sampleQuotas(c.base);
      const r = await send(c.base);
      clearInterval(sampler);
      await c.stop();
      if (process.env.QOS_DEBUG) process.stdout.write(`# ${mode} trace ${JSON.stringify(trace)}\n`);
      const w = [0, 1, 2].map((k) => (r.classes[`c${k}`]?.latencies ?? []).map((l) => Math.max(0, l - Q)));
      for (let k = 0; k < 3; k++) waits[k]!.push(...w[k]!);
      met0.push((100 * w[0]!.filter((x) => x <= targets[0]!).length) / Math.max(1, w[0]!.length));
      if (closed) {
        const t = turnsOf(trace);
        for (let k = 0; k < 3; k++) turns[k] = Math.max(turns[k]!, t[k]!);
        if (run === 0) first = trace;
      }
    }
    const row = `${waits.map((w) => Math.round(mean(w))).join(' / ')} | ${targets.join(' / ')} | ${mean(met0).toFixed(1)}% (${Math.min(...met0).toFixed(0)}–${Math.max(...met0).toFixed(0)}%) | ${closed ? turns.join(' / ') : '–'} |`;
    const line = { name: mode, color: closed ? '#0b63c5' : '#e8710a', dash: !closed, points: waits.map((w, i) => [i, mean(w)] as [number, number]) };
    return { row, line, first };
  };
  for (const mode of ['open loop (no quota)', 'closed loop (quota)'] as const) {
    // The batch at once: every request is sent in the first instant.
    const m = await runMode(mode, (base) => openLoop(base, 100_000, batch.length / 100_000, (i) => ({ cls: `c${batch[i]}`, path: `/echo/c${batch[i]}?ms=${Q}` }), 60_000));
    if (mode.startsWith('closed')) quotaTrace = m.first;
    rows.push(`| batch 130/90/50, ${mode} | ${m.row}`);
    series.push(m.line);
  }
  series.push({ name: 'target', color: '#888', dash: true, points: targets.map((t, i) => [i, t] as [number, number]) });
  writeFileSync(join(OUT, 'paper003-quota.svg'), lineChart('003: mean queue wait per class in the batch, against its target', 'class (0 highest)', 'mean wait (ms)', series));
  writeFileSync(
    join(OUT, 'paper003-quotas-over-time.svg'),
    lineChart(
      '003: slots per class over the batch (closed loop, first run; 16 in all, one kept by the idle catch-all class)',
      'period (250 ms)',
      'slots',
      [0, 1, 2].map((k) => ({ name: `c${k}`, color: ['#0b63c5', '#1b7f3b', '#8a4fff'][k]!, points: quotaTrace.map((q, i) => [i, q[k]!] as [number, number]) })),
    ),
  );
  // Sustained: the same mix at 1.1× capacity for 10 s, repeated like the batch.
  const sustained: typeof series = [];
  for (const mode of ['open loop (no quota)', 'closed loop (quota)'] as const) {
    const m = await runMode(mode, (base) => openLoop(base, (1.1 * SLOTS * 1000) / Q, 10, (i) => ({ cls: `c${batch[i % 270]}`, path: `/echo/c${batch[i % 270]}?ms=${Q}` }), 60_000));
    rows.push(`| sustained 1.1× capacity 10 s, ${mode} | ${m.row}`);
    sustained.push(m.line);
  }
  sustained.push({ name: 'target', color: '#888', dash: true, points: targets.map((t, i) => [i, t] as [number, number]) });
  writeFileSync(join(OUT, 'paper003-sustained.svg'), lineChart('003: mean queue wait per class, sustained 1.1× for 10 s, against its target', 'class (0 highest)', 'mean wait (ms)', sustained));
  md.push(
    '## 003 — per-class worker quota',
    '',
    `Three classes; 16 slots (the two boards that run work, 8 each), 400 ms per request; targets 4 / 8 / 12 s of queue wait (the paper: 5 / 10 / 15 s, 75 slots). The batch is the paper's: 130 / 90 / 50 requests sent at once; sustained: the same mix at 1.1× capacity for 10 s; ${RUNS} runs per mode each (mean, and the range of class 0's share over the runs). Turns: the most times one class's quota changed direction in any run.`,
    '',
    '| run | mean queue wait ms (c0 / c1 / c2) | targets | class 0 within its target | quota turns (c0 / c1 / c2) |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    '![](paper003-quota.svg)',
    '',
    '![](paper003-quotas-over-time.svg)',
    '',
    '![](paper003-sustained.svg)',
    '',
  );
}

// ---- 000: admission and content adaptation under a load step, calibrated; FPD against priority ----
if (!only || only === '000') {
  // Pages whose cost is their size (no sleep): 60 kB at the full level, proportionally less at
  // lighter levels, from 200 client addresses. The work is CPU, so the boards run board-like CPUs
  // (each in its own cgroup at BOARD_SHARE of a core) where this machine allows it. a and b come
  // from `ews calibrate` on the same cluster; the step goes from half the calibrated capacity at
  // that size to 1.5× it.
  const RUNS = Number(process.env.QOS_RUNS ?? 3);
  const SIZE = 60_000;
  const cal = await cluster({});
  const { a, b, points } = await runCalibrate(cal.base, { seconds: 2, sizes: [4096, 16_384, SIZE, 131_072] }, () => {});
  await cal.stop();
  const rmax = points.find((p) => p.bytes === SIZE)!.R;
  const pick = (cls: string) => (i: number) => ({ cls, path: `/echo/${cls}?ms=0&bytes=${SIZE}`, headers: { 'x-forwarded-for': `10.1.0.${i % 200}` } });
  const adaptation = { levels: 3, targetUtilization: 0.85, k: 1, a, b };
  const admission = { targetQueue: 8, q0: 0.8, q1: -0.5, refuseAfterPeriods: 2, reserveMax: 2000 };
  const rows: string[] = [];
  const series: Array<{ name: string; color: string; dash?: boolean; points: Array<[number, number]> }> = [];
  const range = (xs: number[], d = 0) => `${mean(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)})`;
  const modes = [
    { name: 'neither', qos: {}, color: '#e8710a' },
    { name: 'admission', qos: { admission }, color: '#8a4fff' },
    { name: "admission, the paper's law alone", qos: { admission: { ...admission, probeGrowth: 1 } }, color: '#999999', dash: true },
    { name: 'adaptation', qos: { adaptation }, color: '#0b63c5' },
    { name: 'both', qos: { admission, adaptation }, color: '#1b7f3b' },
  ];
  for (const m of modes) {
    const p50: number[] = [],
      p99: number[] = [],
      refused: number[] = [],
      rate: number[] = [],
      quality: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const c = await cluster({ qos: { scheduler: 'priority', periodMs: 250, ...m.qos } });
      await openLoop(c.base, 0.5 * rmax, 3, pick('page'), 5000);
      const high = await openLoop(c.base, 1.5 * rmax, 6, pick('page'), 5000);
      await c.stop();
      const x = high.classes.page!;
      p50.push(pct(x.latencies, 0.5));
      p99.push(pct(x.latencies, 0.99));
      refused.push((100 * x.refused) / Math.max(1, x.sent));
      rate.push(x.ok / high.elapsedS);
      quality.push(x.levels.length ? mean(x.levels) / 3 : 1);
    }
    rows.push(`| ${m.name} | ${range(p50)} | ${range(p99)} | ${range(refused, 1)} | ${range(rate)} | ${range(quality, 2)} |`);
    series.push({
      name: m.name,
      color: m.color,
      ...(m.dash ? { dash: true } : {}),
      points: [
        [0, mean(p50)],
        [1, mean(p99)],
      ],
    });
  }
  writeFileSync(join(OUT, 'paper000-adaptation.svg'), lineChart('000: latency after a step to 1.5× the calibrated capacity (0 = p50, 1 = p99)', 'percentile', 'ms', series));
  // FPD against priority: two classes, gold (share 2, priority 0) and silver (share 1), half the
  // traffic each, full pages, a 1 s class deadline, over a load sweep. Past capacity some requests
  // must be dropped (quality 0): the scheduler decides whose. FPD should keep the classes'
  // delivered quality at the 2:1 of their shares; priority drops silver first.
  const LOADS = [1, 1.5, 2];
  const fpdRows: string[] = [];
  const fpdSeries: typeof series = [{ name: 'the shares (2:1)', color: '#999999', dash: true, points: LOADS.map((l) => [l, 2]) }];
  for (const scheduler of ['priority', 'fpd']) {
    const pts: Array<[number, number]> = [];
    for (const load of LOADS) {
      const got: Record<string, { ok: number[]; quality: number[] }> = { gold: { ok: [], quality: [] }, silver: { ok: [], quality: [] } };
      const ratio: number[] = [];
      for (let run = 0; run < RUNS; run++) {
        const c = await cluster({
          classes: [
            { name: 'gold', priority: 0, share: 2, deadlineMs: 1000, standingWaitMs: 0, match: [{ pathPrefix: '/echo/gold' }] },
            { name: 'silver', priority: 1, share: 1, deadlineMs: 1000, match: [{ pathPrefix: '/' }] },
          ],
          qos: { scheduler, periodMs: 250, historyK: 50 },
        });
        const r = await openLoop(c.base, load * rmax, 6, (i) => pick(i % 2 ? 'silver' : 'gold')(i), 5000);
        await c.stop();
        const q: Record<string, number> = {};
        for (const k of ['gold', 'silver']) {
          const x = r.classes[k]!;
          // Delivered quality per request sent: the answer's level / 3, 0 when refused or dropped (the paper's D).
          q[k] = x.levels.reduce((s, t) => s + t / 3, 0) / Math.max(1, x.sent);
          got[k]!.ok.push((100 * x.ok) / Math.max(1, x.sent));
          got[k]!.quality.push(q[k]!);
        }
        ratio.push(q.gold! / Math.max(1e-9, q.silver!));
      }
      pts.push([load, mean(ratio)]);
      fpdRows.push(`| ${load}× | ${scheduler} | ${range(got.gold!.ok)} / ${range(got.silver!.ok)} | ${range(got.gold!.quality, 2)} / ${range(got.silver!.quality, 2)} | ${range(ratio, 2)} |`);
    }
    fpdSeries.push({ name: scheduler, color: scheduler === 'fpd' ? '#0b63c5' : '#e8710a', points: pts });
  }
  writeFileSync(join(OUT, 'paper000-fpd.svg'), lineChart('000: delivered quality gold / silver (shares 2:1) against load', 'load (× calibrated capacity)', 'quality ratio', fpdSeries));
  md.push(
    '## 000 — admission and content adaptation under a load step, calibrated',
    '',
    `Pages of 60 kB at the full level (cost = size; lighter levels send less), 200 client addresses. \`ews calibrate\` on the same cluster: a = ${(a * 1000).toFixed(3)} ms per request, b = ${(b * 1e6).toFixed(4)} µs per byte; capacity at 60 kB ${rmax.toFixed(0)} pages/s. Load: half of that for 3 s, then 1.5× for 6 s (measured). ${RUNS} runs per mode (mean and range). Admission: target queue 8, q0 0.8, q1 −0.5, period 250 ms, refused after 2 periods in the reserve, probe growth 1.25 (the paper's law alone: 1).`,
    '',
    '| mode | p50 ms | p99 ms | refused (503) % | answered /s | delivered quality (1 = full) |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    '![](paper000-adaptation.svg)',
    '',
    'FPD against priority: two classes, gold (share 2, priority 0) and silver (share 1), half the traffic each, full pages, class deadline 1 s, over a load sweep. Quality per request sent: level / 3 when answered, 0 when refused or dropped.',
    '',
    '| load | scheduler | answered % gold / silver | delivered quality gold / silver | quality ratio gold / silver (shares: 2) |',
    '|---|---|---|---|---|',
    ...fpdRows,
    '',
    '![](paper000-fpd.svg)',
    '',
  );
}

// ---- 002: six classes A–F, (m,k) per class: FCFS, WQS precise, WQS imprecise over a load sweep ----
if (!only || only === '002') {
  const names = ['A', 'B', 'C', 'D', 'E', 'F'];
  // Pages of 100 ms at the full level on the two boards that run work (4 each): 80 pages/s.
  const PAGE_CAPACITY = 80;
  const RUNS = Number(process.env.QOS_RUNS ?? 5);
  const loads = [0.75, 1, 1.5, 2];
  const modes = [
    { name: 'FCFS', scheduler: 'fifo', adapt: false, color: '#e8710a', dash: true },
    { name: 'WQS precise', scheduler: 'weakly-hard', adapt: false, color: '#8a4fff', dash: true },
    { name: 'WQS imprecise', scheduler: 'weakly-hard', adapt: true, color: '#0b63c5', dash: false },
  ] as const;
  const rows: string[] = [];
  const series = modes.map((m) => ({ name: m.name, color: m.color, dash: m.dash, points: [] as Array<[number, number]> }));
  const spread = (xs: number[]) => `${mean(xs).toFixed(1)} (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;
  for (const load of loads) {
    for (const [mi, m] of modes.entries()) {
      const onTime: number[] = [];
      const perClass: number[][] = names.map(() => []);
      for (let run = 0; run < RUNS; run++) {
        const c = await cluster({
          classes: names
            .map((n, i) => ({ name: n, priority: i, mk: [3, 5], share: 6 - i, setQoS: 0.3, targetMs: 400, deadlineMs: 1500, standingWaitMs: 0, match: [{ header: `x-class=${n}` }] }))
            .concat([{ name: 'other', priority: 9, mk: [0, 1], match: [{ pathPrefix: '/' }] } as never]),
          qos: { scheduler: m.scheduler, periodMs: 500, historyK: 20, ...(m.adapt ? { adaptation: { levels: 3, targetUtilization: 0.85, k: 0.5, a: 0.006, b: 0.0000001 } } : {}) },
        });
        const r = await openLoop(
          c.base,
          load * PAGE_CAPACITY,
          4,
          (i) => ({ cls: names[i % 6]!, path: `/echo/p?ms=${S}&bytes=20000`, headers: { 'x-class': names[i % 6]!, 'x-forwarded-for': `10.2.0.${i % 250}` } }),
          1500,
        );
        await c.stop();
        let sent = 0,
          ok = 0;
        names.forEach((n, k) => {
          const x = r.classes[n]!;
          const met = x.latencies.filter((l) => l <= 400).length;
          sent += x.sent;
          ok += met;
          perClass[k]!.push((100 * met) / Math.max(1, x.sent));
        });
        onTime.push((100 * ok) / Math.max(1, sent));
      }
      rows.push(`| ${load}× | ${m.name} | ${spread(onTime)} | ${perClass.map((p) => mean(p).toFixed(0)).join(' / ')} |`);
      series[mi]!.points.push([load, mean(onTime)]);
    }
  }
  writeFileSync(join(OUT, 'paper002-weakly-hard.svg'), lineChart('002: answered within the 400 ms target, all classes (mean of the runs)', 'offered load (× capacity)', 'within target (%)', series));
  md.push(
    '## 002 — weakly-hard scheduling: FCFS against WQS, precise and imprecise',
    '',
    '![](paper002-weakly-hard.svg)',
    '',
    `Six classes A–F, (3,5) each, shares 6:5:4:3:2:1, SetQoS 0.3, target 400 ms; pages of 100 ms at the full level (80/s is capacity), open loop for 4 s per run, ${RUNS} runs per point. FCFS: one queue in arrival order, full pages; WQS precise: the weakly-hard scheduler, full pages; WQS imprecise: the scheduler with content adaptation (lighter pages under load, never for a class in panic or critical).`,
    '',
    '| load | mode | within target, all classes % (range over runs) | within target per class A / B / C / D / E / F % |',
    '|---|---|---|---|',
    ...rows,
    '',
  );
}

md.unshift(`Boards: ${CPUS}.`, '');
const name = `qos-papers${only ? `-${only}` : ''}`;
writeFileSync(join(OUT, `${name}.md`), `${md.join('\n')}\n`);
// Every table on the page, as data: its section, its columns and its rows (the same cells).
const tables: Array<{ section: string; columns: string[]; rows: string[][] }> = [];
let section = '';
const cells = (line: string) =>
  line
    .slice(1, -1)
    .split('|')
    .map((c) => c.trim());
for (let i = 0; i < md.length; i++) {
  const line = md[i]!;
  if (line.startsWith('## ')) section = line.slice(3);
  else if (line.startsWith('|') && md[i + 1]?.startsWith('|---')) {
    const rows: string[][] = [];
    for (let j = i + 2; md[j]?.startsWith('|'); j++) rows.push(cells(md[j]!));
    tables.push({ section, columns: cells(line), rows });
  }
}
writeFileSync(join(OUT, `${name}.json`), `${JSON.stringify({ at: new Date().toISOString(), boards: CPUS, tables }, null, 2)}\n`);
process.stdout.write(`${md.join('\n')}\n`);
