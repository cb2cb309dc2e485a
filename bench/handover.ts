// npm run bench:handover (inside unshare -rnm): planned handovers of the master (POST
// /api/cluster/handover) on a 3-board namespace LAN with a VIP, the product's default timings,
// under load through the VIP (keyed commands and pages, a new connection each), beside a probe of
// the VIP every 10 ms. Per handover: how long the API took, when the VIP first answered from the
// new master, the longest gap between two answers of the probe, and the load's answers that were
// not 2xx and its connections that failed. Results: bench/results/handover.{json,md}.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildLan, request, settled, VIP } from '../hw-test/lan.ts';
import { parseConfig } from '../shared/config.ts';
import { spread } from './spread.ts';

const HANDOVERS = Number(process.env.BENCH_HANDOVERS ?? 10);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 16);
const PROBE_EVERY_MS = 10,
  PROBE_TIMEOUT_MS = 300;
const RESULTS = join(import.meta.dirname, 'results');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const defaults = parseConfig({ cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' }, boards: [{ id: 'a', address: '127.0.0.1' }] }).cluster;

interface Round {
  from: string;
  to: string;
  apiMs: number;
  /** From the handover call to the VIP's first answer from the new master. */
  servedMs: number;
  /** The longest time between two answers of the probe, from 100 ms before the call to the end. */
  gapMs: number;
  requests: number;
  non2xx: number;
  failedConnections: number;
}

async function round(lan: Awaited<ReturnType<typeof buildLan>>, n: number): Promise<Round> {
  const from = (await settled(lan, lan.ids, 20_000)).master!;
  let stop = false;
  const probes: Array<[number, string | undefined]> = [];
  const probe = (async () => {
    const inflight: Promise<void>[] = [];
    while (!stop) {
      inflight.push(
        request(VIP, '/healthz', { timeoutMs: PROBE_TIMEOUT_MS }).then((r) => {
          if (r.status === 200) probes.push([performance.now(), (JSON.parse(r.body) as { board: string }).board]);
        }),
      );
      await sleep(PROBE_EVERY_MS);
    }
    await Promise.all(inflight);
  })();
  const load = { requests: 0, non2xx: 0, failed: 0 };
  const client = async (c: number) => {
    for (let i = 0; !stop; i++) {
      const keyed = i % 2 === 0;
      const r = keyed
        ? await request(VIP, '/cgi-bin/echo?ms=5', { method: 'POST', body: '{}', headers: { 'idempotency-key': `h${n}-${c}-${i}` }, timeoutMs: 5000 })
        : await request(VIP, '/echo?ms=5', { timeoutMs: 5000 });
      load.requests++;
      if (r.status === 0) load.failed++;
      else if (r.status < 200 || r.status > 299) load.non2xx++;
    }
  };
  const clients = Array.from({ length: CLIENTS }, (_, c) => client(c));
  await sleep(500);
  const t0 = performance.now();
  const answer = await request(lan.addr(from), '/api/cluster/handover', { method: 'POST', timeoutMs: 5000 });
  const apiMs = performance.now() - t0;
  if (answer.status !== 200) throw new Error(`handover ${n}: ${answer.status} ${answer.body}`);
  const to = (JSON.parse(answer.body) as { to: string }).to;
  await sleep(1000);
  stop = true;
  await Promise.all([...clients, probe]);
  const served = probes.find(([t, b]) => t >= t0 && b === to);
  const window = probes.filter(([t]) => t >= t0 - 100).map(([t]) => t);
  let gap = 0;
  for (let i = 1; i < window.length; i++) gap = Math.max(gap, window[i]! - window[i - 1]!);
  const r: Round = {
    from,
    to,
    apiMs: Math.round(apiMs),
    servedMs: served ? Math.round(served[0] - t0) : NaN,
    gapMs: Math.round(gap),
    requests: load.requests,
    non2xx: load.non2xx,
    failedConnections: load.failed,
  };
  process.stdout.write(`handover ${n + 1}: ${JSON.stringify(r)}\n`);
  return r;
}

const started = new Date().toISOString();
const lan = await buildLan({ cluster: { heartbeatMs: undefined, tmaxMs: undefined, tthresholdMs: undefined, staggerMs: undefined } });
const rounds: Round[] = [];
try {
  for (let i = 0; i < HANDOVERS; i++) rounds.push(await round(lan, i));
} finally {
  await lan.close();
}
const sum = (k: 'requests' | 'non2xx' | 'failedConnections') => rounds.reduce((a, r) => a + r[k], 0);
const data = {
  run: started,
  node: process.version,
  what: `${HANDOVERS} planned handovers (POST /api/cluster/handover to the master, each to the next board) on one 3-board namespace LAN with a VIP, the default timings (heartbeat ${defaults.heartbeatMs} ms, Tmax ${defaults.tmaxMs} ms); ${CLIENTS} clients through the VIP alternating a keyed POST /cgi-bin/echo?ms=5 and a page /echo?ms=5, a new connection each; a probe GET /healthz to the VIP every ${PROBE_EVERY_MS} ms (${PROBE_TIMEOUT_MS} ms timeout)`,
  apiMs: spread(rounds.map((r) => r.apiMs)),
  servedMs: spread(rounds.map((r) => r.servedMs)),
  gapMs: spread(rounds.map((r) => r.gapMs)),
  load: { requests: sum('requests'), non2xx: sum('non2xx'), failedConnections: sum('failedConnections') },
  rounds,
};
mkdirSync(RESULTS, { recursive: true });
writeFileSync(join(RESULTS, 'handover.json'), `${JSON.stringify(data, null, 2)}\n`);
const md = `# Planned handover of the master (${started})

Generated by \`npm run bench:handover\`: ${data.what}.

| | min | median | max |
|---|---|---|---|
| the handover call, answered | ${data.apiMs.min} ms | ${data.apiMs.median} ms | ${data.apiMs.max} ms |
| the VIP first answers from the new master | ${data.servedMs.min} ms | ${data.servedMs.median} ms | ${data.servedMs.max} ms |
| the longest gap between two answers of the 10 ms probe | ${data.gapMs.min} ms | ${data.gapMs.median} ms | ${data.gapMs.max} ms |

The load: ${data.load.requests} requests, ${data.load.non2xx} answered other than 2xx, ${data.load.failedConnections} connections that failed (reset or timed out: a request in flight on the old VIP holder when the address moved).

| # | from → to | call | new master answers | longest probe gap | requests | non-2xx | failed connections |
|---|---|---|---|---|---|---|---|
${rounds.map((r, i) => `| ${i + 1} | ${r.from} → ${r.to} | ${r.apiMs} ms | ${r.servedMs} ms | ${r.gapMs} ms | ${r.requests} | ${r.non2xx} | ${r.failedConnections} |`).join('\n')}
`;
writeFileSync(join(RESULTS, 'handover.md'), md);
process.stdout.write(md);
