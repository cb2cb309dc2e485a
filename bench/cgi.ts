// npm run bench:cgi — CGI programs (RFC 3875) on board-like CPUs: the same two programs, a
// trivial one and one that waits 20 ms (`sleep 0.02`), run by a 1-board and a 3-board ews cluster
// (every board in its own cgroup v1 CPU quota of 20 % of a core; board 1 the master and the entry)
// and, in the same run, by lighttpd's mod_cgi and BusyBox httpd, each in a cgroup of the same
// quota (one board's worth). The programs' own processes stay in their server's group. Per system
// and program: req/s, p50 and p99, the server process's own CPU per request (for ews the master's,
// without the programs it ran) and its whole group's (programs included). Each point is measured
// RUNS times, the systems interleaved, and the median run kept.
// Writes bench/results/cgi.{md,json}. Root (cgroups); needs `wrk`, Debian's `lighttpd` and `busybox`.

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BOARD_NODE_FLAGS } from '../shared/node-flags.ts';
import { freePorts, waitFor } from '../test/integration/harness.ts';
import { type CpuGroup, cgroupsAvailable, cpuGroup } from './cgroup.ts';
import { writeResults } from './dispatch.ts';
import { stopAll } from './stop-all.ts';
import { wrk } from './wrk.ts';

const ROOT = resolve(import.meta.dirname, '..');
const BUNDLE = join(ROOT, 'dist/ews.js');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const WARM_S = Number(process.env.BENCH_WARM_SECONDS ?? 4);
const CONNS = Number(process.env.BENCH_CONNS ?? 32);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SHARE = 0.2;
/** Runs at once per ews board (cgi.programs.NAME.concurrencyMax): lighttpd and BusyBox start one per request, unbounded. */
const CONCURRENCY = 16;
const PROGRAMS = {
  'trivial.sh': "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\nok\\n'\n",
  'wait20.sh': "#!/bin/sh\nsleep 0.02\nprintf 'Content-Type: text/plain\\r\\n\\r\\nok\\n'\n",
} as const;
type ProgramName = keyof typeof PROGRAMS;
const SYSTEMS = ['ews1', 'ews3', 'lighttpd', 'busybox'] as const;
type System = (typeof SYSTEMS)[number];

interface Target {
  url: string;
  /** The group of the entry (the master, or the server). */
  group: CpuGroup;
  groups: CpuGroup[];
  /** The entry's own process. */
  pid: number;
  stop(): Promise<void>;
}

const ownCpuUs = (pid: number): number => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * 10_000; // utime + stime, 100 Hz ticks: the process alone, not its children
};

function programsDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ews-bench-cgi-'));
  mkdirSync(join(dir, 'cgi-bin'));
  mkdirSync(join(dir, 'www'));
  for (const [name, text] of Object.entries(PROGRAMS)) {
    writeFileSync(join(dir, 'cgi-bin', name), text);
    chmodSync(join(dir, 'cgi-bin', name), 0o755);
  }
  return dir;
}

async function up(url: string): Promise<void> {
  await waitFor('server answers', async () => (await fetch(`${url}/cgi-bin/trivial.sh`).catch(() => undefined))?.ok === true, 30_000, 100);
}

async function ews(n: number, dir: string): Promise<Target> {
  const ports = await freePorts(2 * n);
  const cfg = {
    cluster: { name: 'bench-cgi', key: randomBytes(32).toString('hex'), broadcast: 'peers', heartbeatMs: 100, tmaxMs: 1000, tthresholdMs: 1000, staggerMs: 200 },
    boards: Array.from({ length: n }, (_, i) => ({ id: `b${i + 1}`, address: '127.0.0.1', httpPort: ports[2 * i]!, udpPort: ports[2 * i + 1]! })),
    limits: { inFlightPerBoardMax: CONCURRENCY, connectionsMax: 4096, queueMax: 4096 },
    cgi: { dir: join(dir, 'cgi-bin'), programs: Object.fromEntries(Object.keys(PROGRAMS).map((p) => [p, { concurrencyMax: CONCURRENCY }])) },
    auth: { disabled: true },
    stateDir: false,
  };
  const file = join(dir, `ews${n}.json`);
  writeFileSync(file, JSON.stringify(cfg));
  const groups = cfg.boards.map((_, i) => cpuGroup(`cgi-ews${n}-${i + 1}`, SHARE));
  const procs = cfg.boards.map((b, i) => {
    const p = spawn(process.execPath, [...BOARD_NODE_FLAGS, BUNDLE, 'start', '--config', file, '--board', b.id], { stdio: 'ignore', env: { ...process.env, EWS_LOG_LEVEL: 'warn' } });
    groups[i]!.add(p.pid!);
    return p;
  });
  const url = `http://127.0.0.1:${cfg.boards[0]!.httpPort}`;
  await waitFor(
    'ews boards and their programs',
    async () => {
      const v = (await (await fetch(`${url}/api/cluster`)).json()) as { master: string | null; boards: Array<{ runstate: number }> };
      return v.master === 'b1' && v.boards.every((b) => b.runstate === 1) && (await fetch(`${url}/cgi-bin/trivial.sh`)).ok;
    },
    30_000,
    100,
  );
  return stoppable(url, groups, procs);
}

function stoppable(url: string, groups: CpuGroup[], procs: ChildProcess[]): Target {
  return {
    url,
    group: groups[0]!,
    groups,
    pid: procs[0]!.pid!,
    stop: async () => {
      await stopAll(procs);
      for (const g of groups) g.remove();
    },
  };
}

async function lighttpd(dir: string): Promise<Target> {
  const [port] = await freePorts(1);
  const conf = join(dir, 'lighttpd.conf');
  writeFileSync(
    conf,
    `server.document-root = "${dir}/www"
server.bind = "127.0.0.1"
server.port = ${port}
server.modules = ("mod_alias", "mod_cgi")
server.max-connections = 1024
server.errorlog = "${dir}/lighttpd-error.log"
alias.url = ("/cgi-bin/" => "${dir}/cgi-bin/")
$HTTP["url"] =~ "^/cgi-bin/" { cgi.assign = ("" => "") }
`,
  );
  const group = cpuGroup('cgi-lighttpd', SHARE);
  const p = spawn('lighttpd', ['-D', '-f', conf], { stdio: 'ignore' });
  group.add(p.pid!);
  const url = `http://127.0.0.1:${port}`;
  await up(url);
  return stoppable(url, [group], [p]);
}

async function busybox(dir: string): Promise<Target> {
  const [port] = await freePorts(1);
  // BusyBox httpd runs /cgi-bin/NAME from the cgi-bin beside its home directory.
  const home = join(dir, 'bb');
  mkdirSync(home, { recursive: true });
  const group = cpuGroup('cgi-busybox', SHARE);
  const p = spawn('busybox', ['httpd', '-f', '-p', `127.0.0.1:${port}`, '-h', home], { stdio: 'ignore' });
  group.add(p.pid!);
  const link = join(home, 'cgi-bin');
  rmSync(link, { recursive: true, force: true });
  mkdirSync(link);
  for (const [name, text] of Object.entries(PROGRAMS)) {
    writeFileSync(join(link, name), text);
    chmodSync(join(link, name), 0o755);
  }
  const url = `http://127.0.0.1:${port}`;
  await up(url);
  return stoppable(url, [group], [p]);
}

interface Row {
  system: System;
  program: ProgramName;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  /** The entry process's own CPU per request (µs): the master's for ews, the server's otherwise. */
  entryCpuUsPerRequest: number;
  /** The entry's whole group per request (µs): the programs it ran included. */
  entryGroupCpuUsPerRequest: number;
  /** Every group of the system per request (µs). */
  allCpuUsPerRequest: number;
  rpsRange?: [number, number];
}

async function measure(t: Target, system: System, program: ProgramName): Promise<Row> {
  const url = `${t.url}/cgi-bin/${program}`;
  await wrk(url, WARM_S, CONNS);
  const own0 = ownCpuUs(t.pid);
  const g0 = t.groups.map((g) => g.usageUs());
  const r = await wrk(url, SECONDS, CONNS);
  const served = Math.max(1, r.rps * SECONDS);
  const used = t.groups.map((g, i) => g.usageUs() - g0[i]!);
  return {
    system,
    program,
    rps: r.rps,
    p50Ms: r.p50Ms,
    p99Ms: r.p99Ms,
    errors: r.errors,
    entryCpuUsPerRequest: Math.round((ownCpuUs(t.pid) - own0) / served),
    entryGroupCpuUsPerRequest: Math.round(used[0]! / served),
    allCpuUsPerRequest: Math.round(used.reduce((a, b) => a + b, 0) / served),
  };
}

const start = (system: System, dir: string): Promise<Target> => (system === 'ews1' ? ews(1, dir) : system === 'ews3' ? ews(3, dir) : system === 'lighttpd' ? lighttpd(dir) : busybox(dir));

async function main(): Promise<void> {
  if (!cgroupsAvailable()) throw new Error('bench:cgi needs cgroup v1 cpu and cpuacct (root)');
  const dir = programsDir();
  const runs = new Map<string, Row[]>();
  try {
    for (let run = 1; run <= RUNS; run++) {
      for (const system of SYSTEMS) {
        const t = await start(system, dir);
        try {
          for (const program of Object.keys(PROGRAMS) as ProgramName[]) {
            const row = await measure(t, system, program);
            console.log(`run ${run} ${system} ${program}: ${row.rps} req/s, p99 ${row.p99Ms} ms, entry ${row.entryCpuUsPerRequest} µs/req, errors ${row.errors}`);
            const k = `${system} ${program}`;
            runs.set(k, [...(runs.get(k) ?? []), row]);
          }
        } finally {
          await t.stop();
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const rows = [...runs.values()].map((all) => {
    const sorted = [...all].sort((a, b) => a.rps - b.rps);
    return { ...sorted[Math.floor(sorted.length / 2)]!, rpsRange: [sorted[0]!.rps, sorted.at(-1)!.rps] as [number, number] };
  });
  const rps = (s: System, p: ProgramName) => rows.find((r) => r.system === s && r.program === p)!.rps;
  const ratio = (a: number, b: number) => +(a / Math.max(1, b)).toFixed(2);
  const ratios = {
    ews3VsEws1Wait20: ratio(rps('ews3', 'wait20.sh'), rps('ews1', 'wait20.sh')),
    ews3VsEws1Trivial: ratio(rps('ews3', 'trivial.sh'), rps('ews1', 'trivial.sh')),
    ews1VsLighttpdWait20: ratio(rps('ews1', 'wait20.sh'), rps('lighttpd', 'wait20.sh')),
    ews1VsBusyboxWait20: ratio(rps('ews1', 'wait20.sh'), rps('busybox', 'wait20.sh')),
    ews1VsLighttpdTrivial: ratio(rps('ews1', 'trivial.sh'), rps('lighttpd', 'trivial.sh')),
    ews1VsBusyboxTrivial: ratio(rps('ews1', 'trivial.sh'), rps('busybox', 'trivial.sh')),
  };
  const data = {
    at: new Date().toISOString(),
    what: `wrk, ${CONNS} keep-alive connections, ${WARM_S} s warm-up then ${SECONDS} s per point, ${RUNS} runs per point with the systems interleaved (the median run, the range of all beside it); every board and server in a cgroup v1 CPU quota of ${SHARE * 100} % of a core; ews concurrencyMax ${CONCURRENCY} per board, masterWork spill`,
    rows,
    ratios,
  };
  const md = `# CGI programs on board-like CPUs

Generated by \`npm run bench:cgi\` (bench/cgi.ts) at ${data.at}. ${data.what}.

The programs: \`trivial.sh\` prints a header and a line; \`wait20.sh\` runs \`sleep 0.02\` first.
Every system runs the same files, and their processes count in the server's own group.
BusyBox httpd ends every answer by closing the connection (no Content-Length): wrk reconnects
and counts each such answer as a socket read error, though it was served (its errors column).
The others keep connections open.

| system | program | req/s (median) | runs' range | p50 ms | p99 ms | errors | entry's own CPU µs/req | entry's group µs/req | all groups µs/req |
|---|---|---|---|---|---|---|---|---|---|
${rows.map((r) => `| ${r.system} | ${r.program} | ${r.rps} | ${r.rpsRange![0]}–${r.rpsRange![1]} | ${r.p50Ms} | ${r.p99Ms} | ${r.errors} | ${r.entryCpuUsPerRequest} | ${r.entryGroupCpuUsPerRequest} | ${r.allCpuUsPerRequest} |`).join('\n')}

- 3 ews boards / 1 board: ${ratios.ews3VsEws1Wait20}× on \`wait20.sh\`, ${ratios.ews3VsEws1Trivial}× on \`trivial.sh\`.
- 1 ews board / lighttpd mod_cgi on the same quota: ${ratios.ews1VsLighttpdWait20}× (\`wait20.sh\`), ${ratios.ews1VsLighttpdTrivial}× (\`trivial.sh\`).
- 1 ews board / BusyBox httpd on the same quota: ${ratios.ews1VsBusyboxWait20}× (\`wait20.sh\`), ${ratios.ews1VsBusyboxTrivial}× (\`trivial.sh\`).

"Entry's own CPU" is the entry process alone (utime + stime, not its children): for ews 3 boards
the master's forwarding work per request, for the others the server's own. "Entry's group" adds
the programs the entry ran itself.
`;
  writeResults('cgi', data, md);
  console.log(md);
}

await main();
