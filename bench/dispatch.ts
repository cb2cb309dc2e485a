// Master dispatch overhead, side by side in one run: a plain Node HTTP server doing the same
// work (the floor), one board alone (intake + queue, no hop), and a 3-board cluster (most
// requests forwarded by the master). Also board RSS idle and under load, and heartbeat gaps
// while the master is saturated. Boards run the compiled bundle, as on real boards.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { closedLoop, type LoadResult } from '../node/cli/load-gen.ts';
import { BOARD_NODE_FLAGS } from '../shared/node-flags.ts';
import { freePorts, waitFor } from '../test/integration/harness.ts';

const ROOT = resolve(import.meta.dirname, '..');
const BUNDLE = join(ROOT, 'dist/ews.js');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONCURRENCY = 32;
const PATH = '/cgi-bin/echo?ms=0';

interface Cluster {
  urls: string[];
  procs: ChildProcess[];
  stop(): Promise<void>;
}

async function cluster(n: number): Promise<Cluster> {
  const ports = await freePorts(2 * n);
  const cfg = {
    cluster: { name: 'bench', key: randomBytes(32).toString('hex'), broadcast: 'peers', heartbeatMs: 100, tmaxMs: 500, tthresholdMs: 500, masterWork: 'forward' },
    boards: Array.from({ length: n }, (_, i) => ({ id: `b${i + 1}`, address: '127.0.0.1', httpPort: ports[2 * i]!, udpPort: ports[2 * i + 1]! })),
    limits: { inFlightPerBoardMax: 64, connectionsMax: 4096 },
    auth: { disabled: true },
    stateDir: false, // memory only, said so: a bench run leaves nothing behind
  };
  const file = join(mkdtempSync(join(tmpdir(), 'ews-bench-')), 'c.json');
  writeFileSync(file, JSON.stringify(cfg));
  const procs = cfg.boards.map((b) =>
    spawn(process.execPath, [...BOARD_NODE_FLAGS, BUNDLE, 'start', '--config', file, '--board', b.id], { stdio: 'ignore', env: { ...process.env, EWS_LOG_LEVEL: 'warn' } }),
  );
  const urls = cfg.boards.map((b) => `http://127.0.0.1:${b.httpPort}`);
  await waitFor(
    'bench cluster',
    async () => {
      const v = (await (await fetch(`${urls[n - 1]}/api/cluster`)).json()) as { master: string | null; boards: Array<{ runstate: number }> };
      return v.master !== null && v.boards.every((b) => b.runstate === 1);
    },
    20_000,
    50,
  );
  return {
    urls,
    procs,
    async stop() {
      await Promise.all(
        procs.map(
          (p) =>
            new Promise<void>((r) => {
              p.once('exit', () => r());
              p.kill('SIGTERM');
            }),
        ),
      );
    },
  };
}

/** The same answer a board's echo gives, with nothing in between. */
async function plainServer(): Promise<{ url: string; proc: ChildProcess; stop(): Promise<void> }> {
  const [port] = await freePorts(1);
  const src = `const http=require('http');http.createServer((q,s)=>{const b=JSON.stringify({ok:true,board:'raw',ms:0,bytes:0});s.writeHead(200,{'content-type':'application/json','content-length':Buffer.byteLength(b)});s.end(b)}).listen(${port},'127.0.0.1')`;
  const proc = spawn(process.execPath, ['-e', src], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  await waitFor('plain server', async () => (await fetch(url)).ok, 10_000, 50);
  return { url, proc, stop: async () => void proc.kill() };
}

const rssMb = (pid: number): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name));
  return line ? Number(line.split(' ').pop()) : NaN;
}

export async function runDispatchBench(): Promise<Record<string, unknown>> {
  const raw = await plainServer();
  const one = await cluster(1);
  const three = await cluster(3);
  await new Promise((r) => setTimeout(r, 1500)); // let boot settle before reading idle memory
  const idleRss = three.procs.map((p) => rssMb(p.pid!));
  const runs: Record<string, LoadResult[]> = { raw: [], single: [], cluster: [] };
  let peakRss = 0;
  const sampler = setInterval(() => {
    for (const p of three.procs) peakRss = Math.max(peakRss, rssMb(p.pid!));
  }, 100);
  // Interleave the three targets so machine noise hits all of them alike.
  for (let round = 0; round < ROUNDS; round++) {
    runs.raw!.push(await closedLoop(raw.url + PATH, CONCURRENCY, SECONDS));
    runs.single!.push(await closedLoop(one.urls[0] + PATH, CONCURRENCY, SECONDS));
    runs.cluster!.push(await closedLoop(three.urls[0] + PATH, CONCURRENCY, SECONDS));
  }
  // Saturate the master with slow requests for a while and see whether heartbeats kept flowing.
  const term0 = await metric(three.urls[1]!, 'ews_term');
  const sat = await closedLoop(`${three.urls[0]}/cgi-bin/echo?ms=5`, 256, SECONDS * 2);
  clearInterval(sampler);
  const gaps = await Promise.all(three.urls.slice(1).map((u) => metric(u, 'ews_state_gap_max_seconds').then((s) => s * 1000)));
  const loopMax = await metric(three.urls[0]!, 'ews_event_loop_delay_seconds{q="max"}').then((s) => s * 1000);
  const term1 = await metric(three.urls[1]!, 'ews_term');
  await Promise.all([raw.stop(), one.stop(), three.stop()]);

  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const summary = (k: string) => ({
    rps: Math.round(med(runs[k]!.map((r) => r.rps))),
    p50Ms: +med(runs[k]!.map((r) => r.p50Ms)).toFixed(2),
    p99Ms: +med(runs[k]!.map((r) => r.p99Ms)).toFixed(2),
    errors: runs[k]!.reduce((n, r) => n + r.errors, 0),
  });
  const s = { raw: summary('raw'), single: summary('single'), cluster: summary('cluster') };
  return {
    what: `closed loop, ${CONCURRENCY} keep-alive clients, GET ${PATH}, ${SECONDS}s × ${ROUNDS} rounds interleaved, median of rounds`,
    node: process.version,
    boardNodeFlags: BOARD_NODE_FLAGS,
    results: s,
    ratios: {
      clusterVsRawRps: +(s.cluster.rps / s.raw.rps).toFixed(3),
      singleVsRawRps: +(s.single.rps / s.raw.rps).toFixed(3),
      clusterVsSingleRps: +(s.cluster.rps / s.single.rps).toFixed(3),
      clusterVsSingleP50: +(s.cluster.p50Ms / s.single.p50Ms).toFixed(3),
      clusterVsSingleP99: +(s.cluster.p99Ms / s.single.p99Ms).toFixed(3),
    },
    memory: { boardIdleRssMb: idleRss.map((x) => +x.toFixed(1)), boardPeakRssUnderLoadMb: +peakRss.toFixed(1) },
    saturation: {
      clients: 256,
      seconds: SECONDS * 2,
      served: sat.requests,
      rps: Math.round(sat.rps),
      errors: sat.errors,
      p99Ms: +sat.p99Ms.toFixed(1),
      nodeStateGapMaxMs: gaps,
      masterEventLoopDelayMaxMs: +loopMax.toFixed(1),
      heartbeatMs: 100,
      tmaxMs: 500,
      termBefore: term0,
      termAfter: term1,
      falseTakeover: term0 !== term1,
    },
  };
}

export function writeResults(name: string, data: unknown, markdown: string): void {
  const dir = join(ROOT, 'bench/results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${name}.json`), `${JSON.stringify(data, null, 2)}\n`);
  writeFileSync(join(dir, `${name}.md`), markdown);
}
