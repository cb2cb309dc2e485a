// The schedule runner on node-cron, against a real HTTP port standing in for the master's own:
// a run still under way makes the next slot skip (counted as overlap, never stacked); a loop
// stalled past the late tolerance misses the slots it slept through (counted); stop ends them.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { demoDevices } from '../../dev/demo.ts';
import { silentLogger } from '../../node/log.ts';
import { Loopback } from '../../node/services/loopback.ts';
import { Schedules } from '../../node/services/schedules.ts';
import { parseConfig } from '../../shared/config.ts';
import { Registry } from '../../shared/metrics.ts';

const answered: string[] = [];
let holdMs = 0;
const server = http.createServer((req, res) => {
  req.resume();
  setTimeout(() => {
    answered.push(`${req.url} ${req.headers['idempotency-key'] ?? ''}`);
    res.end('{}');
  }, holdMs);
});
server.listen(0, '127.0.0.1');
await once(server, 'listening');
const port = (server.address() as AddressInfo).port;
after(() => server.close());

function schedules(lateToleranceMs: number) {
  const cfg = parseConfig({
    cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' },
    boards: [{ id: 'b1', address: '127.0.0.1', httpPort: port }],
    auth: { disabled: true },
    stateDir: false,
    devices: demoDevices(['b1']),
    schedules: [{ cron: '* * * * * *', device: 'valve3', action: 'set', value: 40 }],
  });
  const metrics = new Registry();
  const s = new Schedules({ cfg }, silentLogger, metrics, () => ({}), new Loopback(cfg.boards[0]!, undefined, 4), lateToleranceMs);
  /** A series' value in the exposition text, 0 when absent. */
  const count = (name: string, labels: Record<string, string>) => {
    const line = metrics
      .render()
      .split('\n')
      .find((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
    return line === undefined ? 0 : Number(line.split(' ').at(-1));
  };

  return { s, count };
}

const until = async (what: string, ok: () => boolean, ms: number) => {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

test('a run still under way makes the next slot skip as overlap; each run gets its own key', async () => {
  holdMs = 2500;
  answered.length = 0;
  const { s, count } = schedules(1000);
  s.start();
  await until('two runs answered and counted', () => count('ews_schedule_runs_total', { schedule: '0', status: '200' }) >= 2, 12_000);
  s.stop();
  assert.ok(count('ews_schedule_skipped_total', { schedule: '0', reason: 'overlap' }) >= 2, 'the slots during a 2.5 s run were skipped');
  // A run is counted when its answer is read: every counted run was answered.
  assert.ok(count('ews_schedule_runs_total', { schedule: '0', status: '200' }) <= answered.length);
  s.close();
  const keys = answered.map((a) => a.split(' ')[1]);
  assert.equal(new Set(keys).size, keys.length, 'a key per slot');
});

test('a loop stalled past the tolerance misses the slots it slept through; stop ends the runs', async () => {
  holdMs = 0;
  answered.length = 0;
  const { s, count } = schedules(1000);
  s.start();
  await until('a first run', () => answered.length >= 1, 5_000);
  const stallUntil = Date.now() + 3500;
  while (Date.now() < stallUntil) {
    // The event loop is held: node-cron's timer cannot fire.
  }
  await until('missed slots counted', () => count('ews_schedule_skipped_total', { schedule: '0', reason: 'missed' }) >= 2, 5_000);
  s.stop();
  assert.equal(s.running, false);
  const n = answered.length;
  await new Promise((r) => setTimeout(r, 2200));
  assert.equal(answered.length, n, 'no run after stop');
  s.close();
});
