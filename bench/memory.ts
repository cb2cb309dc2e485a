// npm run bench:memory — what a master holds in memory, idle and under load, on this machine (x64)
// and on an armv7l board's Node (the official Node 20 armv7l binary under qemu user-mode
// emulation), side by side in one run. Each platform: a bare `node`, a bare `node` with one worker
// thread (what the cluster plane's thread costs at least), then the master of a 3-board loopback
// cluster (board 1 on the platform, boards 2 and 3 x64), with the cluster plane on its own thread
// and on the request thread (cluster.planeThread false), idle and at its peak under wrk with 64 and
// then 256 connections on the I/O CGI. All with the board flags. The budget is private dirty
// memory (smaps Private_Dirty: heaps, stacks, written pages; what a board cannot give back under
// pressure); RSS is shown beside it, split into file-backed pages (the `node` binary's code and
// data and the libraries, clean and shared with the page cache) and anonymous memory. And what
// node-cron costs: a bare `node` with node-cron loaded and one task running, beside a bare `node`.
//
// Then what the plane on the request thread costs: takeovers (term changes) while 3 boards at 20 %
// of a core serve the CPU-bound CGI, the plane on its own thread with the default timings against
// the plane on the request thread with the least Tmax the config accepts for it.
//
// Under qemu the process is the emulator: a 32-bit guest lives below 4 GiB of the emulator's address
// space (guest_base 0, the rest reserved), so the guest's RSS is the resident pages of the mappings
// there, read from /proc/PID/smaps. The emulator's own memory (its heap, its translation cache) is
// above. Needs wrk, qemu-arm-static and hw-test/arm-setup.sh's cache (fetched when missing).
// Writes bench/results/memory.{md,json}.

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BOARD_NODE_FLAGS } from '../shared/node-flags.ts';
import { freePorts, waitFor } from '../test/integration/harness.ts';
import { cgroupsAvailable, cpuGroup } from './cgroup.ts';
import { writeResults } from './dispatch.ts';
import { type Resident, resident } from './resident.ts';
import { stopAll } from './stop-all.ts';
import { type Wrk, wrk } from './wrk.ts';

const ROOT = resolve(import.meta.dirname, '..');
const BUNDLE = join(ROOT, 'dist/ews.js');
const LOAD_S = Number(process.env.BENCH_SECONDS ?? 30);
const IO_CGI = '/cgi-bin/echo?ms=20';
const CPU_CGI = '/cgi-bin/burn?ms=2';
const TAKEOVER_S = Number(process.env.BENCH_TAKEOVER_SECONDS ?? 40);
const SAMPLE_MS = 500;

interface Platform {
  name: 'x64' | 'armv7l';
  /** The command that runs this platform's `node`. */
  node: string[];
  /** RSS is the guest's part of a qemu process. */
  guest32: boolean;
}

/** The highest private dirty and the highest RSS sampled while `work` runs (the file/anon split of the RSS sample). */
async function peakDuring<T>(pid: number, guest32: boolean, work: Promise<T>): Promise<{ peak: Resident; result: T }> {
  let peak = resident(pid, guest32);
  const timer = setInterval(() => {
    const r = resident(pid, guest32);
    peak = r.rssMb > peak.rssMb ? { ...r, privateDirtyMb: Math.max(r.privateDirtyMb, peak.privateDirtyMb) } : { ...peak, privateDirtyMb: Math.max(r.privateDirtyMb, peak.privateDirtyMb) };
  }, SAMPLE_MS);
  try {
    const result = await work;
    return { peak, result };
  } finally {
    clearInterval(timer);
  }
}

const BARE = {
  plain: 'setInterval(() => {}, 1e6)',
  worker: "new (require('node:worker_threads').Worker)('setInterval(() => {}, 1e6)', { eval: true }); setInterval(() => {}, 1e6)",
  // What the schedules cost a master: node-cron loaded and one task due every second.
  cron: "require('node-cron').schedule('* * * * * *', () => {}); setInterval(() => {}, 1e6)",
} as const;

/** A bare `node` (with one idle worker thread, or node-cron running one task), 3 s after start. */
async function bare(p: Platform, kind: keyof typeof BARE): Promise<Resident> {
  const child = spawn(p.node[0]!, [...p.node.slice(1), ...BOARD_NODE_FLAGS, '-e', BARE[kind]], { stdio: 'ignore', cwd: ROOT });
  try {
    await sleep(3000);
    return resident(child.pid!, p.guest32);
  } finally {
    await stopAll([child]);
  }
}

interface MasterRow {
  idle: Resident;
  load: Array<{ conns: number; peak: Resident; wrk: Wrk }>;
}

const BENCH_TIMINGS = { heartbeatMs: 100, tmaxMs: 1000, tthresholdMs: 1000, staggerMs: 200 };

interface Cluster {
  url: string;
  master: ChildProcess;
  stop(): Promise<void>;
}

/**
 * A 3-board loopback cluster whose board 1 (the master) runs on `node`; `cluster` adds to the
 * cluster section, `share` puts each board in a CPU group of its own.
 */
async function cluster(node: string[], extra: Record<string, unknown>, share?: { of: number; periodUs: number; cpu?: number }): Promise<Cluster> {
  const ports = await freePorts(6);
  const cfg = {
    cluster: { name: 'bench', key: randomBytes(32).toString('hex'), broadcast: 'peers', ...extra },
    boards: [1, 2, 3].map((i) => ({ id: `b${i}`, address: '127.0.0.1', httpPort: ports[2 * i - 2]!, udpPort: ports[2 * i - 1]! })),
    limits: { inFlightPerBoardMax: 16, connectionsMax: 4096, queueMax: 4096 },
    auth: { disabled: true },
    stateDir: false, // memory only, said so: a bench run leaves nothing behind
    benchmarkHandlers: true,
  };
  const file = join(mkdtempSync(join(tmpdir(), 'ews-memory-')), 'c.json');
  writeFileSync(file, JSON.stringify(cfg));
  const url = (i: number) => `http://127.0.0.1:${cfg.boards[i]!.httpPort}`;
  const groups = share ? [1, 2, 3].map((i) => cpuGroup(`mem-${i}`, share.of, share.periodUs)) : [];
  const procs: ChildProcess[] = [];
  const start = (board: string[], id: string) => {
    // Pinned, every thread of the board shares one CPU, as on a one-core board (taskset execs it: same PID).
    const cmd = share?.cpu === undefined ? board : ['taskset', '-c', String(share.cpu), ...board];
    const c = spawn(cmd[0]!, [...cmd.slice(1), ...BOARD_NODE_FLAGS, BUNDLE, 'start', '--config', file, '--board', id], { stdio: 'ignore', env: { ...process.env, EWS_LOG_LEVEL: 'warn' } });
    groups[procs.length]?.add(c.pid!);
    procs.push(c);
    return c;
  };
  const stop = async () => {
    await stopAll(procs);
    for (const g of groups) g.remove();
  };
  try {
    // Board 1 first, so that it is the master even when it boots slower (emulated).
    const m = start(node, 'b1');
    await waitFor('board 1 serving', async () => (await fetch(`${url(0)}/api/cluster`)).ok, 120_000, 200);
    start([process.execPath], 'b2');
    start([process.execPath], 'b3');
    await waitFor(
      'the cluster formed under b1',
      async () => {
        const v = (await (await fetch(`${url(0)}/api/cluster`)).json()) as { master: string | null; boards: Array<{ runstate: number }> };
        return v.master === 'b1' && v.boards.every((b) => b.runstate === 1);
      },
      120_000,
      200,
    );
    return { url: url(0), master: m, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** The master's RSS idle and at its peak under 64, then 256 connections. */
async function master(p: Platform, planeThread: boolean): Promise<MasterRow> {
  const c = await cluster(p.node, { ...BENCH_TIMINGS, planeThread });
  try {
    await sleep(3000);
    const idle = resident(c.master.pid!, p.guest32);
    const load: MasterRow['load'] = [];
    for (const conns of [64, 256]) {
      const { peak, result } = await peakDuring(c.master.pid!, p.guest32, wrk(c.url + IO_CGI, LOAD_S, conns));
      load.push({ conns, peak, wrk: result });
      process.stdout.write(
        `${p.name} master (plane ${planeThread ? 'thread' : 'inline'}), ${conns} connections: ${result.rps} req/s, peak private dirty ${peak.privateDirtyMb} MB, RSS ${peak.rssMb} (file ${peak.fileMb}, anon ${peak.anonMb})\n`,
      );
    }
    return { idle, load };
  } finally {
    await c.stop();
  }
}

interface TakeoverRow {
  plane: 'thread' | 'inline';
  timings: string;
  periodMs: number;
  pinned: boolean;
  termChanges: number;
  masterAfter: string | null;
  /** The longest gap between two STATEs of one master's term that a board read (ms). */
  stateGapMaxMs: number;
  wrk: Wrk;
}

/** Term changes while 3 boards at 20 % of a core serve the CPU-bound CGI for TAKEOVER_S. */
async function takeovers(planeThread: boolean, timings: 'default' | 'Tmax 1 s', periodUs: number, pinned: boolean): Promise<TakeoverRow> {
  const c = await cluster([process.execPath], { planeThread, ...(timings === 'default' ? {} : BENCH_TIMINGS) }, { of: 0.2, periodUs, cpu: pinned ? 1 : undefined });
  const term = async () => (await (await fetch(`${c.url}/api/cluster`)).json()) as { master: string | null; term: number; boards: Array<{ url: string }> };
  const gapMs = async (url: string) => 1000 * Number(/^ews_state_gap_max_seconds (\S+)$/m.exec(await (await fetch(`${url}/metrics`)).text())?.[1] ?? 0);
  try {
    const before = await term();
    const r = await wrk(c.url + CPU_CGI, TAKEOVER_S, 64);
    const after = await term();
    const stateGapMaxMs = Math.round(Math.max(...(await Promise.all(after.boards.map((b) => gapMs(b.url))))));
    const row: TakeoverRow = {
      plane: planeThread ? 'thread' : 'inline',
      timings,
      periodMs: periodUs / 1000,
      pinned,
      termChanges: after.term - before.term,
      masterAfter: after.master,
      stateGapMaxMs,
      wrk: r,
    };
    process.stdout.write(
      `takeovers: plane ${row.plane}, ${timings}, CFS period ${row.periodMs} ms${pinned ? ', pinned' : ''}: ${row.termChanges} term changes in ${TAKEOVER_S} s, longest STATE gap ${stateGapMaxMs} ms, ${r.rps} req/s, ${r.errors} errors\n`,
    );
    return row;
  } finally {
    await c.stop();
  }
}

function armPlatform(): Platform | undefined {
  if (spawnSync('qemu-arm-static', ['--version']).status !== 0) return undefined;
  const cache = join(ROOT, '.cache/arm/armhf');
  if (!existsSync(join(cache, 'node/bin/node'))) spawnSync('bash', [join(ROOT, 'hw-test/arm-setup.sh'), 'armhf'], { stdio: 'inherit' });
  if (!existsSync(join(cache, 'node/bin/node'))) return undefined;
  return { name: 'armv7l', node: ['qemu-arm-static', '-L', join(cache, 'sysroot'), join(cache, 'node/bin/node')], guest32: true };
}

const platforms: Platform[] = [{ name: 'x64', node: [process.execPath], guest32: false }];
const arm = armPlatform();
if (arm) platforms.push(arm);
else process.stdout.write('qemu-arm-static or the armv7l Node is missing: x64 only\n');

const rows: Array<{ platform: string; node: string; bare: Resident; bareWithWorker: Resident; bareWithCron: Resident; master: MasterRow; masterPlaneInline: MasterRow }> = [];
for (const p of platforms) {
  const version = spawnSync(p.node[0]!, [...p.node.slice(1), '-p', 'process.arch + " " + process.version'], { encoding: 'utf8' }).stdout.trim();
  const row = {
    platform: p.name,
    node: version,
    bare: await bare(p, 'plain'),
    bareWithWorker: await bare(p, 'worker'),
    bareWithCron: await bare(p, 'cron'),
    master: await master(p, true),
    masterPlaneInline: await master(p, false),
  };
  rows.push(row);
  process.stdout.write(
    `${p.name}: bare ${row.bare.privateDirtyMb} MB private dirty, with a worker ${row.bareWithWorker.privateDirtyMb}, with node-cron ${row.bareWithCron.privateDirtyMb}, master idle ${row.master.idle.privateDirtyMb} (plane inline ${row.masterPlaneInline.idle.privateDirtyMb})\n`,
  );
}

const takeoverRows: TakeoverRow[] = [];
if (cgroupsAvailable()) {
  takeoverRows.push(await takeovers(true, 'default', 100_000, false));
  takeoverRows.push(await takeovers(true, 'default', 10_000, true));
  takeoverRows.push(await takeovers(false, 'Tmax 1 s', 100_000, false));
} else process.stdout.write('no writable cgroup v1 cpu controller: takeovers not measured\n');

const data = {
  what: `Private dirty memory and RSS of a bare node, a bare node with one worker thread, a bare node running one node-cron task, and the master of a 3-board loopback cluster (idle, and its peak sampled every ${SAMPLE_MS} ms under wrk ${IO_CGI} for ${LOAD_S} s at 64 then 256 connections), the cluster plane on its own thread and on the request thread; unconstrained CPU; board flags ${BOARD_NODE_FLAGS.join(' ')}; armv7l under qemu user-mode emulation (the guest's mappings only)`,
  budgetMb: { what: 'private dirty', idle: 20, underLoad: 40 },
  at: new Date().toISOString(),
  rows,
  takeovers: { what: `3 boards each in a cgroup at 20 % of a core, wrk 64 connections on ${CPU_CGI} for ${TAKEOVER_S} s; term changes seen at the master's address`, rows: takeoverRows },
};
const cell = (r: Resident) => `${r.privateDirtyMb} (RSS ${r.rssMb}: ${r.fileMb} file + ${r.anonMb} anon)`;
const masterCells = (m: MasterRow) => `${cell(m.idle)} | ${cell(m.load[0]!.peak)} | ${cell(m.load[1]!.peak)}`;
const within = (mb: number, budget: number) => (mb <= budget ? `within ${budget}` : `over ${budget}`);
const verdicts = rows
  .map((r) => {
    const peak = (m: MasterRow) => Math.max(...m.load.map((l) => l.peak.privateDirtyMb));
    return `${r.platform}: idle ${r.master.idle.privateDirtyMb} MB (${within(r.master.idle.privateDirtyMb, data.budgetMb.idle)}), under load at most ${peak(r.master)} MB (${within(peak(r.master), data.budgetMb.underLoad)}); with the plane on the request thread ${r.masterPlaneInline.idle.privateDirtyMb} / ${peak(r.masterPlaneInline)} MB`;
  })
  .join('; ');
const cronCost = rows
  .map((r) => `${r.platform} +${(r.bareWithCron.privateDirtyMb - r.bare.privateDirtyMb).toFixed(1)} MB private dirty, +${(r.bareWithCron.rssMb - r.bare.rssMb).toFixed(1)} MB RSS`)
  .join('; ');
const changes = (plane: 'thread' | 'inline') => takeoverRows.filter((t) => t.plane === plane).map((t) => t.termChanges);
const md = `# Memory: a master's private dirty memory and RSS, x64 and an armv7l board's Node

${data.what}. Run ${data.at}. Budget (${data.budgetMb.what}): ≤ ${data.budgetMb.idle} MB idle, ≤ ${data.budgetMb.underLoad} MB under load.

MB private dirty (RSS beside it):

| platform | node | bare \`node\` | with one worker thread | with node-cron running one task |
|---|---|---|---|---|
${rows.map((r) => `| ${r.platform} | ${r.node} | ${cell(r.bare)} | ${cell(r.bareWithWorker)} | ${cell(r.bareWithCron)} |`).join('\n')}

| platform | cluster plane | master idle | master peak, 64 connections | master peak, 256 connections |
|---|---|---|---|---|
${rows.map((r) => `| ${r.platform} | own thread (default) | ${masterCells(r.master)} |\n| ${r.platform} | request thread | ${masterCells(r.masterPlaneInline)} |`).join('\n')}

Against the budget: ${verdicts}.

What node-cron costs (loaded, one task due every second, against a bare \`node\`): ${cronCost}. A
master loads it only when it has schedules (node/services/schedules.ts).

Throughput during the load (req/s, 64 / 256 connections): ${rows.map((r) => `${r.platform} ${r.master.load.map((l) => l.wrk.rps).join(' / ')} (plane on the request thread ${r.masterPlaneInline.load.map((l) => l.wrk.rps).join(' / ')})`).join('; ')}.

Private dirty pages are what the board cannot give back under memory pressure: V8's heaps (the
request thread's and the cluster plane's), malloc, stacks, and written pages of the binary. The
rest of the RSS is clean file-backed pages, shared with the page cache and dropped by the kernel
under pressure (read back from flash when touched again). Under qemu, V8's page releases go through
the emulator, so the armv7l figures are what qemu left resident in the guest's mappings, not a
kernel's exact accounting on a board.

## What the plane on the request thread costs: takeovers under CPU-bound load

${data.takeovers.what}.

| cluster plane | timings | CFS period | boards' threads | term changes | longest STATE gap read | master after | req/s | errors |
|---|---|---|---|---|---|---|---|---|
${takeoverRows.map((t) => `| ${t.plane === 'thread' ? 'own thread' : 'request thread'} | ${t.timings} | ${t.periodMs} ms | ${t.pinned ? 'all on one CPU' : 'any CPU'} | ${t.termChanges} | ${t.stateGapMaxMs} ms | ${t.masterAfter} | ${t.wrk.rps} | ${t.wrk.errors} |`).join('\n')}

${takeoverRows.length === 0 ? 'Not measured in this run (no writable cgroup v1 cpu controller).' : `Term changes in this run: plane on its own thread ${changes('thread').join(', ')}; on the request thread ${changes('inline').join(', ')}.`}
A node's cluster link reads the packets waiting in its socket before its tick judges the master
(node/cluster-plane/cluster-link.ts); the seeded simulator fails when that is undone. The first
row's setup is \`bench:boards\`'s: a 100 ms CFS period, so a board that used its 20 ms stops for
80 ms, and its threads on either of this machine's 2 CPUs (the CPU-bound request thread on one can
use the group's quota before the plane on the other gets any). A one-core board has neither: the
second row puts every thread of a board on one CPU with a 10 ms period. The gap column counts gaps
within one master's term only, so the silence before a takeover is not in it. The config refuses
\`planeThread: false\` with a Tmax under 1 s: on the request thread the plane beats only between
requests.
`;
writeResults('memory', data, md);
process.stdout.write(md);
