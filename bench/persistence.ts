// npm run bench:persistence: what durability costs a board.
// 1. Bytes a board writes to its stateDir per hour at the default history settings (intervalS 5,
//    flushS 60): a 3-board cluster of the bundle with the demo's three simulated devices, idle and
//    with one keyed command a second, measured by ews_state_written_bytes_total over a window.
// 2. Restore time of a full set: every journal at its bound (history rings full for a site of
//    many points, the audit log at auditLogMax, every alarm with an episode, the intent log at
//    idempotencyKeysMax), read back by a board's constructor; median of repeats.
// Results: bench/results/persistence.{json,md}.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { demoDevices } from '../dev/demo.ts';
import { IntentLog } from '../node/idempotency/intent-log.ts';
import { OperatorDisk } from '../node/operator/operator-disk.ts';
import { OperatorState } from '../node/operator/operator-state.ts';
import { parseConfig } from '../shared/config.ts';
import { BOARD_NODE_FLAGS } from '../shared/node-flags.ts';
import { freePorts, metric, waitFor } from '../test/integration/harness.ts';

const ROOT = resolve(import.meta.dirname, '..');
const RESULTS = join(ROOT, 'bench/results');
const WINDOW_S = Number(process.env.BENCH_WINDOW_S ?? 180);
const KEY = 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function writtenPerHour(commandsPerS: number): Promise<{ perBoard: number[]; windowS: number; commands: number }> {
  const ports = await freePorts(6);
  const boards = ['b1', 'b2', 'b3'].map((id, i) => ({ id, address: '127.0.0.1', httpPort: ports[2 * i]!, udpPort: ports[2 * i + 1]! }));
  const dir = mkdtempSync(join(tmpdir(), 'ews-bench-persist-'));
  const file = join(dir, 'cluster.json');
  writeFileSync(file, JSON.stringify({ cluster: { key: KEY }, boards, devices: demoDevices(boards.map((b) => b.id)), auth: { disabled: true }, stateDir: join(dir, 'state') }));
  const procs = boards.map((b) =>
    spawn(process.execPath, [...BOARD_NODE_FLAGS, '--import', 'tsx', join(ROOT, 'dev/cabled-board.ts'), 'start', '--config', file, '--board', b.id, '--simulate-devices'], {
      cwd: ROOT,
      stdio: 'ignore',
      env: { ...process.env, EWS_LOG_LEVEL: 'error' },
    }),
  );
  try {
    const url = (b: (typeof boards)[number]) => `http://127.0.0.1:${b.httpPort}`;
    await waitFor('boards up', async () => (await Promise.all(boards.map((b) => fetch(`${url(b)}/healthz`).then((r) => r.ok)))).every(Boolean), 60_000, 200);
    // Past boot: the boot-time rewrites are not what a board writes per hour.
    await new Promise((r) => setTimeout(r, 10_000));
    const before = await Promise.all(boards.map((b) => metric(url(b), 'ews_state_written_bytes_total')));
    const t0 = Date.now();
    let commands = 0;
    while (Date.now() - t0 < WINDOW_S * 1000) {
      const next = t0 + (commands + 1) * (commandsPerS > 0 ? 1000 / commandsPerS : WINDOW_S * 1000);
      await new Promise((r) => setTimeout(r, Math.max(0, Math.min(next, t0 + WINDOW_S * 1000) - Date.now())));
      if (commandsPerS > 0 && Date.now() - t0 < WINDOW_S * 1000) {
        await fetch(`${url(boards[0]!)}/cgi-bin/devices/valve3/set`, {
          method: 'POST',
          body: JSON.stringify({ value: commands % 100 }),
          headers: { 'idempotency-key': `bench-${t0}-${commands}` },
        }).catch(() => undefined);
        commands++;
      }
    }
    const windowS = (Date.now() - t0) / 1000;
    const after = await Promise.all(boards.map((b) => metric(url(b), 'ews_state_written_bytes_total')));
    return { perBoard: after.map((a, i) => Math.round(((a - before[i]!) * 3600) / windowS)), windowS: Math.round(windowS), commands };
  } finally {
    for (const p of procs) p.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A site of `points` points (the demo's devices repeated), every journal at its bound; ms to read it back. */
async function restoreTime(points: number): Promise<{ points: number; samples: number; entries: number; intents: number; bytes: number; ms: number[]; intentsMs: number[] }> {
  const base = demoDevices(['b1']) as Array<Record<string, unknown> & { id: string }>;
  const perCopy = base.reduce((n, d) => n + Object.keys(d.points as object).length, 0);
  const devices = Array.from({ length: Math.ceil(points / perCopy) }, (_, i) => base.map((d) => ({ ...d, id: `${d.id}-${i}` }))).flat();
  const cfg = parseConfig({ cluster: { key: KEY }, boards: [{ id: 'b1', address: '127.0.0.1' }], devices, auth: { disabled: true } });
  const dir = mkdtempSync(join(tmpdir(), 'ews-bench-restore-'));
  try {
    const open = () => {
      const disk = new OperatorDisk(dir, 'b1', () => {});
      const op = new OperatorState({ cfg, self: 0, bootEpoch: 1, broadcast: () => true, isMaster: () => true, devices: () => [], boards: () => [], alarmsChanged: () => {}, logged: () => {}, disk });
      return { op, disk };
    };
    const now = Date.now();
    const first = open();
    const { intervalS, retentionS } = cfg.history;
    const history = cfg.devices.flatMap((d) =>
      d.points.map(
        (p) =>
          [d.id, p.name, Array.from({ length: retentionS / intervalS }, (_, k) => [now - retentionS * 1000 + (k + 1) * intervalS * 1000, k % 97] as [number, number])] as [
            string,
            string,
            Array<[number, number]>,
          ],
      ),
    );
    first.op.mergeSync({ log: [], history }, now);
    for (let i = 0; i < cfg.limits.auditLogMax; i++) first.op.record('command', { user: 'operator', subject: 'valve3-0', status: 200, text: `set ${i} → 200 on b1` });
    await first.disk.close();
    // The intent log at its bound: every key started, then done (the lines a board writes).
    const intentFile = join(dir, 'b1.intents.log');
    const body = '{"ok":true,"device":"valve3","action":"set","board":"b1"}';
    writeFileSync(
      intentFile,
      Array.from(
        { length: cfg.limits.idempotencyKeysMax },
        (_, i) => `${JSON.stringify({ k: `key-${i}`, h: 'h'.repeat(22), s: 's', t: now })}\n${JSON.stringify({ k: `key-${i}`, h: 'h'.repeat(22), s: 'd', st: 200, r: body, t: now })}\n`,
      ).join(''),
    );
    const ms: number[] = [],
      intentsMs: number[] = [];
    let samples = 0,
      entries = 0;
    for (let r = 0; r < 7; r++) {
      const t = performance.now();
      const again = open();
      ms.push(Math.round((performance.now() - t) * 10) / 10);
      samples = again.op.history.samplesAfter(-Infinity).reduce((n, [, , s]) => n + s.length, 0);
      entries = again.op.log.size;
      await again.disk.close();
      const ti = performance.now();
      new IntentLog(intentFile, cfg.limits.idempotencyKeysMax, cfg.limits.idempotencyTtlMs).close();
      intentsMs.push(Math.round((performance.now() - ti) * 10) / 10);
    }
    const bytes = ['audit', 'alarms', 'history', 'intents'].reduce((n, f) => n + statSync(join(dir, `b1.${f}.log`)).size, 0);
    return { points: cfg.devices.reduce((n, d) => n + d.points.length, 0), samples, entries, intents: cfg.limits.idempotencyKeysMax, bytes, ms, intentsMs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const idle = await writtenPerHour(0);
const busy = await writtenPerHour(1);
const restore = [await restoreTime(7), await restoreTime(100)];
const result = { run: new Date().toISOString(), node: process.version, defaults: { intervalS: 5, flushS: 60, retentionS: 3600 }, written: { idle, busy }, restore };
mkdirSync(RESULTS, { recursive: true });
writeFileSync(join(RESULTS, 'persistence.json'), `${JSON.stringify(result, null, 2)}\n`);
const kb = (b: number) => `${(b / 1024).toFixed(0)} KiB`;
const md = `# What durability costs a board

Run ${result.run}, Node ${result.node}, x64 (\`npm run bench:persistence\`).

## Bytes written to stateDir per hour, at the defaults (history every 5 s, flushed every 60 s)

A 3-board cluster (the bundle's code through tsx) with the demo's three simulated devices (${restore[0]!.points} points), measured by \`ews_state_written_bytes_total\` over ${idle.windowS} s and scaled to an hour; boot-time rewrites excluded.

| load | b1 | b2 | b3 |
|---|---|---|---|
| readings only | ${idle.perBoard.map(kb).join(' | ')} |
| and ${busy.commands} keyed commands (1 a second) | ${busy.perBoard.map(kb).join(' | ')} |

Every board writes every point's history (each sees every reading) and every audit entry; the board that runs a command also writes its intent (start and outcome, each fsync'd).

## Restore time of a full set

Every journal at its bound, read back as a board boots (median of ${restore[0]!.ms.length}; history, audit log and alarm episodes together, then the intent log alone):

| points | samples | audit entries | on disk | operator state restore | intent log (${restore[0]!.intents} keys) |
|---|---|---|---|---|---|
${restore.map((r) => `| ${r.points} | ${r.samples} | ${r.entries} | ${kb(r.bytes)} | ${median(r.ms)} ms | ${median(r.intentsMs)} ms |`).join('\n')}
`;
writeFileSync(join(RESULTS, 'persistence.md'), md);
process.stdout.write(md);
