// npm run bench:upgrade (inside unshare -rnm): rolling upgrades of a 3-board namespace LAN with a
// VIP, the product's default timings, each board run from its releases layout by a supervisor that
// starts it again when it exits (as systemd does). Each round upgrades to a new bundle of the same
// code (its version raised), under load through the VIP (keyed echo commands and pages, a new
// connection each) beside a probe of the VIP every 10 ms. Per round: each node's time (drained,
// sent the bundle, back healthy on it, from the master's report), the master's turn (from its
// answer, when it hands over and exits, to every board on the new release), the whole rollout, the
// longest gap between two answers of the probe around the master's handover, and the load's
// answers that were not 2xx. Results: bench/results/upgrade.{json,md}.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildLan, type Lan, lanIds, request, settled, until, VIP } from '../hw-test/lan.ts';
import { currentRelease } from '../node/upgrade/releases.ts';
import { parseConfig } from '../shared/config.ts';
import { makeBundles } from '../test/integration/release-fixture.ts';
import { spread } from './spread.ts';
import { PROBE_EVERY_MS, PROBE_TIMEOUT_MS, vipLoad } from './vip-load.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 8);
const RESULTS = join(import.meta.dirname, 'results');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const defaults = parseConfig({ cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' }, boards: [{ id: 'a', address: '127.0.0.1' }] }).cluster;

interface Round {
  to: string;
  master: string;
  /** Each node's time from the master's report (drain, send, back healthy on the new release, undrain). */
  nodesMs: Record<string, number>;
  /** From the master's answer (it hands over and exits) to every board on the new release. */
  masterMs: number;
  totalMs: number;
  /** The longest time between two answers of the probe, from the master's answer to the end. */
  handoverGapMs: number;
  requests: number;
  non2xx: number;
  /** The non-2xx answers by status and error code. */
  non2xxCodes: Record<string, number>;
  failedConnections: number;
}

const dir = mkdtempSync(join(tmpdir(), 'ews-bench-upgrade-'));
const made = makeBundles(dir);
const bundleMb = (readFileSync(made.files.next).length / 1e6).toFixed(1);
const prefix = (id: string) => join(dir, id);

const allOn = (lan: Lan, version: string) =>
  until(
    `every board on ${version}`,
    async () => {
      const v = JSON.parse((await request(VIP, '/api/cluster')).body) as { master: string | null; boards: Array<{ runstate: number; health: { version: string } | null }> };
      return v.master !== null && v.boards.every((b) => b.runstate === 1 && b.health?.version === version) && lan.ids.every((id) => currentRelease(prefix(id)) === version);
    },
    120_000,
    10,
  );

async function round(lan: Lan, n: number): Promise<Round> {
  const master = (await settled(lan, lan.ids, 30_000)).master!;
  const to = `0.2.${n}`;
  const bundle = readFileSync(made.pack(to));
  const load = vipLoad(`u${n}`, CLIENTS);
  await sleep(500);
  const t0 = performance.now();
  const answer = await request(VIP, '/api/upgrade', { method: 'POST', body: bundle, headers: { 'content-type': 'application/octet-stream' }, timeoutMs: 300_000 });
  const tAnswer = performance.now();
  const report = JSON.parse(answer.body || '{}') as { stopped?: string | null; boards?: Record<string, string> };
  if (answer.status !== 200 || report.stopped) throw new Error(`upgrade ${n}: ${answer.status} ${answer.body}`);
  await allOn(lan, to);
  const tDone = performance.now();
  await sleep(500);
  const { probes, codes, ...seen } = await load.stop();
  const window = probes.map(([t]) => t).filter((t) => t >= tAnswer - 100);
  let gap = 0;
  for (let i = 1; i < window.length; i++) gap = Math.max(gap, window[i]! - window[i - 1]!);
  const nodesMs: Record<string, number> = {};
  for (const [id, text] of Object.entries(report.boards ?? {})) {
    const m = / in (\d+) ms/.exec(text);
    if (m) nodesMs[id] = Number(m[1]);
  }
  const r: Round = {
    to,
    master,
    nodesMs,
    masterMs: Math.round(tDone - tAnswer),
    totalMs: Math.round(tDone - t0),
    handoverGapMs: Math.round(gap),
    requests: seen.requests,
    non2xx: seen.non2xx,
    non2xxCodes: codes,
    failedConnections: seen.failed,
  };
  process.stdout.write(`upgrade ${n + 1}: ${JSON.stringify(r)}\n`);
  return r;
}

const started = new Date().toISOString();
for (const id of lanIds()) await made.install(prefix(id));
const lan = await buildLan({
  cluster: { heartbeatMs: undefined, tmaxMs: undefined, tthresholdMs: undefined, staggerMs: undefined },
  upgrade: { publicKey: made.key.publicKey, healthS: 30 },
  releases: prefix,
});
const rounds: Round[] = [];
try {
  await allOn(lan, made.versions.base);
  for (let i = 0; i < ROUNDS; i++) rounds.push(await round(lan, i));
} finally {
  await lan.close();
  rmSync(dir, { recursive: true, force: true });
}
const nodeTimes = rounds.flatMap((r) => Object.values(r.nodesMs));
const sum = (k: 'requests' | 'non2xx' | 'failedConnections') => rounds.reduce((a, r) => a + r[k], 0);
const data = {
  run: started,
  node: process.version,
  what: `${ROUNDS} rolling upgrades (POST /api/upgrade to the VIP, a ${bundleMb} MB bundle of the same code with its version raised each time) of one 3-board namespace LAN with a VIP, the default timings (heartbeat ${defaults.heartbeatMs} ms, Tmax ${defaults.tmaxMs} ms), each board under a supervisor that starts it again 100 ms after it exits; ${CLIENTS} clients through the VIP alternating a keyed POST /cgi-bin/echo?ms=5 and a page /echo?ms=5, a new connection each; a probe GET /healthz to the VIP every ${PROBE_EVERY_MS} ms (${PROBE_TIMEOUT_MS} ms timeout)`,
  nodeMs: spread(nodeTimes),
  masterMs: spread(rounds.map((r) => r.masterMs)),
  totalMs: spread(rounds.map((r) => r.totalMs)),
  handoverGapMs: spread(rounds.map((r) => r.handoverGapMs)),
  load: { requests: sum('requests'), non2xx: sum('non2xx'), failedConnections: sum('failedConnections') },
  rounds,
};
mkdirSync(RESULTS, { recursive: true });
writeFileSync(join(RESULTS, 'upgrade.json'), `${JSON.stringify(data, null, 2)}\n`);
const codesOf = (r: Round): string =>
  r.non2xx
    ? ` (${Object.entries(r.non2xxCodes)
        .map(([c, n]) => `${n}× ${c}`)
        .join(', ')})`
    : '';
const row = (name: string, s: { min: number; median: number; max: number }) => `| ${name} | ${s.min} ms | ${s.median} ms | ${s.max} ms |`;
const md = `# Rolling upgrade (${started})

Generated by \`npm run bench:upgrade\`: ${data.what}.

| | min | median | max |
|---|---|---|---|
${row('a node: drained, sent the bundle, back healthy on it, undrained', data.nodeMs)}
${row("the master's turn: from its answer (it hands over and exits) to every board on the new release", data.masterMs)}
${row('the whole rollout', data.totalMs)}
${row("the longest gap between two answers of the 10 ms probe, from the master's answer on", data.handoverGapMs)}

The load: ${data.load.requests} requests, ${data.load.non2xx} answered other than 2xx, ${data.load.failedConnections} connections that failed (reset or timed out: a request in flight on the old VIP holder when the address moved).

| # | to | master before | nodes | master's turn | whole | probe gap | requests | non-2xx | failed connections |
|---|---|---|---|---|---|---|---|---|---|
${rounds
  .map(
    (r, i) =>
      `| ${i + 1} | ${r.to} | ${r.master} | ${Object.entries(r.nodesMs)
        .map(([id, ms]) => `${id} ${ms} ms`)
        .join(', ')} | ${r.masterMs} ms | ${r.totalMs} ms | ${r.handoverGapMs} ms | ${r.requests} | ${r.non2xx}${codesOf(r)} | ${r.failedConnections} |`,
  )
  .join('\n')}
`;
writeFileSync(join(RESULTS, 'upgrade.md'), md);
process.stdout.write(md);
