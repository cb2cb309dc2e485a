// The experiments of papers 004, 003, 000 and 002, replicated on a running 3-board cluster under
// open-loop load (scaled to a few seconds). Each writes a table and an SVG into bench/results/.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BOARD_NODE_FLAGS } from '../node/node-flags.ts';
import { freePorts, waitFor } from '../test/integration/harness.ts';
import { openLoop, pct } from './open-loop.ts';
import { lineChart } from './svg.ts';

const ROOT = resolve(import.meta.dirname, '..');
const OUT = join(ROOT, 'bench/results');
mkdirSync(OUT, { recursive: true });
const only = process.argv[2];
const S = 100,
  C = 4,
  BOARDS = 3,
  CAPACITY = (BOARDS * C * 1000) / S;

async function cluster(extra: Record<string, unknown>): Promise<{ base: string; stop(): Promise<void> }> {
  const ports = await freePorts(2 * BOARDS);
  const boards = Array.from({ length: BOARDS }, (_, i) => ({ id: `b${i + 1}`, address: '127.0.0.1', httpPort: ports[2 * i]!, udpPort: ports[2 * i + 1]! }));
  const file = join(mkdtempSync(join(tmpdir(), 'ews-qos-')), 'c.json');
  writeFileSync(
    file,
    JSON.stringify({
      cluster: { name: 'qos', key: randomBytes(32).toString('hex'), heartbeatMs: 100, tmaxMs: 1000, tthresholdMs: 1000 },
      boards,
      limits: { inFlightPerBoardMax: C, queueMax: 5000, connectionsMax: 8192 },
      auth: { disabled: true },
      ...extra,
    }),
  );
  const procs = boards.map((b) =>
    spawn(process.execPath, [...BOARD_NODE_FLAGS, join(ROOT, 'dist/ews.js'), 'start', '--config', file, '--board', b.id], { stdio: 'ignore', env: { ...process.env, EWS_LOG_LEVEL: 'error' } }),
  );
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
      ).then(() => {}),
  };
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const md: string[] = [];

// ---- 004: response time, FIFO vs DWFS, at two arrival rates (below and near saturation) ----
if (!only || only === '004') {
  const kinds = ['browse', 'checkout', 'search', 'static'];
  const classes = kinds.map((k, i) => ({ name: k, priority: i, weight: [1, 3, 2, 1][i], match: [{ pathPrefix: `/echo/${k}` }], deadlineMs: 10_000 }));
  const rows: string[] = [];
  const series: Array<{ name: string; color: string; dash?: boolean; points: Array<[number, number]> }> = [];
  for (const [label, rate] of [
    ['below saturation (0.7×)', 0.7 * CAPACITY],
    ['near saturation (1.05×)', 1.05 * CAPACITY],
  ] as const) {
    for (const scheduler of ['fifo', 'dwfs']) {
      const c = await cluster({ classes: [...classes, { name: 'other', priority: 9, match: [{ pathPrefix: '/' }] }], qos: { scheduler, periodMs: 500, dwfsBeta: 0.2 } });
      // Mixed service sizes per kind: checkout is heavy, static light.
      const ms = { browse: 100, checkout: 160, search: 120, static: 40 } as Record<string, number>;
      const r = await openLoop(
        c.base,
        rate,
        8,
        (i) => {
          const k = kinds[i % 4]!;
          return { cls: k, path: `/echo/${k}?ms=${ms[k]}` };
        },
        10_000,
      );
      await c.stop();
      const all = Object.values(r.classes).flatMap((x) => x.latencies);
      rows.push(`| ${label} | ${scheduler} | ${Math.round(mean(all))} | ${Math.round(pct(all, 0.99))} | ${kinds.map((k) => Math.round(mean(r.classes[k]?.latencies ?? []))).join(' / ')} |`);
      if (label.startsWith('near'))
        series.push({
          name: scheduler,
          color: scheduler === 'dwfs' ? '#0b63c5' : '#e8710a',
          dash: scheduler === 'fifo',
          points: kinds.map((k, i) => [i + 1, mean(r.classes[k]?.latencies ?? [])] as [number, number]),
        });
    }
  }
  writeFileSync(join(OUT, 'paper004-dwfs.svg'), lineChart('004: mean response per kind near saturation (1 browse, 2 checkout, 3 search, 4 static)', 'request kind', 'mean response (ms)', series));
  md.push(
    '## 004 — FIFO vs DWFS',
    '',
    'Four request kinds (weights browse 1, checkout 3, search 2, static 1), service 40–160 ms, open loop for 8 s.',
    '',
    '| arrival rate | scheduler | mean ms | p99 ms | mean ms per kind (browse / checkout / search / static) |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    '![](paper004-dwfs.svg)',
    '',
  );
}

// ---- 003: per-class response times against targets, open loop (no quota) vs closed loop ----
if (!only || only === '003') {
  const targets = [300, 600, 900];
  const rows: string[] = [];
  const series: Array<{ name: string; color: string; dash?: boolean; points: Array<[number, number]> }> = [
    { name: 'target', color: '#888', dash: true, points: targets.map((t, i) => [i, t] as [number, number]) },
  ];
  for (const mode of ['open loop (no quota)', 'closed loop (quota)']) {
    const c = await cluster({
      classes: [0, 1, 2]
        .map((i) => ({ name: `c${i}`, priority: i, targetMs: targets[i], match: [{ pathPrefix: `/echo/c${i}` }], deadlineMs: 20_000 }))
        .concat([{ name: 'other', priority: 9, targetMs: 1000, match: [{ pathPrefix: '/' }], deadlineMs: 20_000 } as never]),
      qos: { scheduler: 'fifo', periodMs: 500, ...(mode.startsWith('closed') ? { quota: { gain: 0.5 } } : {}) },
    });
    // 130 / 90 / 50 of every 270 requests (the paper's mix), 10% above capacity.
    const r = await openLoop(
      c.base,
      1.1 * CAPACITY,
      10,
      (i) => {
        const k = i % 27;
        const cls = k < 13 ? 0 : k < 22 ? 1 : 2;
        return { cls: `c${cls}`, path: `/echo/c${cls}?ms=${S}` };
      },
      20_000,
    );
    await c.stop();
    const means = [0, 1, 2].map((i) => mean(r.classes[`c${i}`]?.latencies ?? []));
    const met0 = (r.classes.c0?.latencies ?? []).filter((x) => x <= targets[0]!).length / Math.max(1, r.classes.c0?.latencies.length ?? 0);
    rows.push(`| ${mode} | ${means.map((m) => Math.round(m)).join(' / ')} | ${targets.join(' / ')} | ${(100 * met0).toFixed(1)}% |`);
    series.push({ name: mode, color: mode.startsWith('closed') ? '#0b63c5' : '#e8710a', points: means.map((m, i) => [i, m] as [number, number]) });
  }
  writeFileSync(join(OUT, 'paper003-quota.svg'), lineChart('003: mean response per class against its target', 'class (0 highest)', 'mean response (ms)', series));
  md.push(
    '## 003 — per-class worker quota',
    '',
    'Three classes, 130 : 90 : 50 of the traffic, targets 300 / 600 / 900 ms (the paper: 5 / 10 / 15 s), 10% over capacity for 10 s.',
    '',
    '| mode | mean response ms (c0 / c1 / c2) | targets | class 0 within its target |',
    '|---|---|---|---|',
    ...rows,
    '',
    '![](paper003-quota.svg)',
    '',
  );
}

// ---- 000: U and G over time under a load step, with and without adaptation; requests refused ----
if (!only || only === '000') {
  const rows: string[] = [];
  const series: Array<{ name: string; color: string; dash?: boolean; points: Array<[number, number]> }> = [];
  for (const adapt of [false, true]) {
    const c = await cluster({ qos: { scheduler: 'priority', periodMs: 500, ...(adapt ? { adaptation: { trees: 3, targetUtilization: 0.85, k: 0.5, a: 0.002, b: 0.0000001 } } : {}) } });
    const trace: Array<[number, number]> = [],
      gTrace: Array<[number, number]> = [];
    const t0 = Date.now();
    let stop = false;
    const sampler = (async () => {
      while (!stop) {
        const s = (await (await fetch(`${c.base}/api/stats`)).json()) as { qos: { U?: number; G?: number } };
        if (s.qos.U !== undefined) trace.push([Math.round((Date.now() - t0) / 1000), s.qos.U]);
        if (s.qos.G !== undefined) gTrace.push([Math.round((Date.now() - t0) / 1000), s.qos.G]);
        await new Promise((r) => setTimeout(r, 500));
      }
    })();
    // Pages (60 ms of work, 60 kB at the full level; less at lighter levels) from 200 clients:
    // 60 req/s for 5 s, then 3× for 10 s.
    const pick = (i: number) => ({ cls: 'page', path: `/echo/page?ms=60&bytes=60000`, headers: { 'x-forwarded-for': `10.1.${(i % 200) >> 8}.${i % 200}` } });
    const low = await openLoop(c.base, 60, 5, pick, 5000);
    const high = await openLoop(c.base, 180, 10, pick, 5000);
    stop = true;
    await sampler;
    await c.stop();
    const refused = high.classes.page!.failed;
    rows.push(
      `| ${adapt ? 'with adaptation' : 'without'} | ${low.classes.page!.ok} | ${high.classes.page!.ok} | ${refused} | ${
        adapt
          ? (
              trace
                .slice(-6)
                .map((p) => p[1])
                .reduce((a, b) => a + b, 0) / 6
            ).toFixed(2)
          : '—'
      } | ${adapt ? gTrace.at(-1)?.[1] : 3} |`,
    );
    if (adapt) {
      series.push({ name: 'U', color: '#0b63c5', points: trace });
      series.push({ name: 'G / 3', color: '#1b7f3b', dash: true, points: gTrace.map(([t, g]) => [t, g / 3]) });
    }
  }
  writeFileSync(join(OUT, 'paper000-adaptation.svg'), lineChart('000: utilisation U and content level G under a 3× load step at 5 s', 'seconds', 'U (and G/3)', series));
  md.push(
    '## 000 — content adaptation under a load step',
    '',
    'Pages (60 ms and 60 kB at level 3, proportionally less at lighter levels) from 200 client addresses, 60 req/s for 5 s then 180 req/s for 10 s; a = 2 ms/request, b = 0.1 µs/byte; target U* = 0.85.',
    '',
    '| run | pages served before the step | served after | refused after (503 OVERLOADED) | mean U in the last 3 s | final G |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    '![](paper000-adaptation.svg)',
    '',
  );
}

// ---- 002: six classes A–F, (m,k) per class, precise (best tree only) vs imprecise (adaptation) ----
if (!only || only === '002') {
  const names = ['A', 'B', 'C', 'D', 'E', 'F'];
  const rows: string[] = [];
  const series: Array<{ name: string; color: string; dash?: boolean; points: Array<[number, number]> }> = [];
  for (const imprecise of [false, true]) {
    const c = await cluster({
      classes: names
        .map((n, i) => ({ name: n, priority: i, mk: [3, 5], share: 6 - i, targetMs: 400, deadlineMs: 1500, match: [{ header: `x-class=${n}` }] }))
        .concat([{ name: 'other', priority: 9, mk: [0, 1], match: [{ pathPrefix: '/' }] } as never]),
      qos: { scheduler: 'weakly-hard', periodMs: 500, ...(imprecise ? { adaptation: { trees: 3, targetUtilization: 0.85, k: 0.5, a: 0.006, b: 0.0000001 } } : {}) },
    });
    const perClass: Record<string, { sent: number; ok: number; late: number }> = {};
    // Each class adds 50 req/s in turn (the paper raises load by 50 req/s per class): 6 × 35 = 210 req/s of pages.
    const r = await openLoop(c.base, 210, 8, (i) => ({ cls: names[i % 6]!, path: `/echo/p?ms=${S}&bytes=20000`, headers: { 'x-class': names[i % 6]!, 'x-forwarded-for': `10.2.0.${i % 250}` } }), 1500);
    await c.stop();
    for (const n of names) {
      const x = r.classes[n]!;
      perClass[n] = { sent: x.sent, ok: x.ok, late: x.latencies.filter((l) => l > 400).length + x.timeouts + x.failed };
    }
    rows.push(
      `| ${imprecise ? 'imprecise (WQS)' : 'precise'} | ${names.map((n) => `${((100 * perClass[n]!.ok) / perClass[n]!.sent).toFixed(0)}%`).join(' / ')} | ${names.map((n) => perClass[n]!.late).join(' / ')} |`,
    );
    series.push({
      name: imprecise ? 'imprecise (WQS)' : 'precise',
      color: imprecise ? '#0b63c5' : '#e8710a',
      dash: !imprecise,
      points: names.map((n, i) => [i + 1, (100 * perClass[n]!.ok) / perClass[n]!.sent] as [number, number]),
    });
  }
  writeFileSync(join(OUT, 'paper002-weakly-hard.svg'), lineChart('002: response rate per class (1 = A … 6 = F)', 'class', 'answered (%)', series));
  md.push(
    '## 002 — weakly-hard scheduling, precise vs imprecise',
    '',
    '![](paper002-weakly-hard.svg)',
    '',
    'Six classes A–F, (3,5) each, shares 6:5:4:3:2:1, target 400 ms; 210 page requests/s (100 ms each at the full level: 1.75× capacity) for 8 s. Precise: every answer from the full tree; imprecise: content adaptation lowers the level.',
    '',
    '| mode | response rate per class A / B / C / D / E / F | deadline misses per class |',
    '|---|---|---|',
    ...rows,
    '',
  );
}

writeFileSync(join(OUT, `qos-papers${only ? `-${only}` : ''}.md`), `${md.join('\n')}\n`);
process.stdout.write(`${md.join('\n')}\n`);
