// The station's memory through a power cut: the audit log, alarm episodes (with their
// acknowledgements) and history rings come back from stateDir; a torn last line is skipped; the
// files stay bounded by what memory holds.
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { demoDevices } from '../../dev/demo.ts';
import { OperatorDisk } from '../../node/operator/operator-disk.ts';
import { OperatorState } from '../../node/operator/operator-state.ts';
import { Journal, JournalClosed } from '../../node/state/journal.ts';
import { parseConfig } from '../../shared/config.ts';

const KEY = 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4';
const cfg = parseConfig({
  cluster: { key: KEY },
  boards: [{ id: 'b1', address: '127.0.0.1' }],
  devices: demoDevices(['b1']),
  alarms: [{ id: 'hot', device: 'pump1', point: 'temp', above: 50 }],
  history: { intervalS: 1, retentionS: 60, flushS: 1 },
  limits: { auditLogMax: 10 },
  auth: { disabled: true },
});

function board(dir: string, points: () => Record<string, number | boolean>) {
  const disk = new OperatorDisk(dir, 'b1', (what, e) => assert.fail(`${what}: ${e.message}`));
  let at = Date.now();
  const op = new OperatorState({
    cfg,
    self: 0,
    bootEpoch: at,
    broadcast: () => true,
    isMaster: () => true,
    devices: () => [{ id: 'pump1', online: true, updatedAt: at, error: null, points: points() } as never],
    boards: () => [{ id: 'b1', runstate: 1, durable: true }],
    alarmsChanged: () => {},
    logged: () => {},
    disk,
  });
  return {
    op,
    disk,
    read(t: number) {
      at = t;
      op.reading('pump1', points(), t);
      op.evaluate(t);
    },
  };
}

test('after a power cut a board has its log, its alarm episode with the acknowledgement, and its history up to the last flush', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ews-opdisk-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  let temp = 40;
  const a = board(dir, () => ({ temp, running: true }));
  const t0 = Date.now() - 30_000;
  for (let i = 0; i < 10; i++) a.read(t0 + i * 1000);
  temp = 60;
  a.read(t0 + 10_000);
  assert.equal(a.op.alarms.get('hot')?.active, true);
  a.op.record('alarm-ack', { user: 'op', subject: 'hot', text: 'acknowledged' });
  a.op.record('command', { user: 'op', subject: 'pump1', status: 200, text: 'start → 200' });
  a.op.flushHistory();
  a.read(t0 + 11_000); // after the flush: lost in the cut
  await a.disk.drained();
  // The power cut: nothing is closed, and the last line written is torn.
  appendFileSync(join(dir, 'b1.audit.log'), '{"id":"b1.1.99","at":');

  const b = board(dir, () => ({ temp, running: true }));
  const kinds = b.op.log.since(0).map((e) => e.kind);
  assert.deepEqual(
    kinds.filter((k) => k !== 'alarm'),
    ['alarm-ack', 'command'],
  );
  assert.ok(kinds.includes('alarm'), 'the raise is in the log');
  const hot = b.op.alarms.get('hot')!;
  assert.deepEqual([hot.active, hot.since, hot.acked?.user], [true, t0 + 10_000, 'op'], 'still raised since then, and acknowledged');
  b.read(Date.now());
  assert.equal(b.op.alarms.get('hot')?.acked?.user, 'op', 'not raised again by the next reading: the acknowledgement holds');
  const h = b.op.history.query('pump1', 'temp', 0, Date.now())!;
  assert.equal(h.filter(([at]) => at <= t0 + 10_000).length, 11, 'every sample up to the last flush');
  assert.equal(
    h.some(([at]) => at === t0 + 11_000),
    false,
    'the one after it was lost',
  );
});

test('bounded on disk: the audit journal is compacted to what the log keeps, the history journal to what the rings keep', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ews-opdisk-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const a = board(dir, () => ({ temp: 20 }));
  for (let i = 0; i < 100; i++) a.op.record('command', { user: 'op', subject: 'pump1', status: 200, text: `c${i}` });
  const t0 = Date.now() - 59_000;
  for (let i = 0; i < 200; i++) {
    a.read(t0 + i * 1000);
    a.op.flushHistory();
    await a.disk.drained();
  }
  const lines = (f: string) => readFileSync(join(dir, f), 'utf8').trim().split('\n').length;
  assert.ok(lines('b1.audit.log') <= 2 * 10 + 1, `audit lines ${lines('b1.audit.log')}`);
  const onDisk = readFileSync(join(dir, 'b1.history.log'), 'utf8').match(/\[\d+(\.\d+)?,-?\d/g)?.length ?? 0;
  assert.ok(onDisk <= 2 * a.op.history.capacity + 2 * 61, `history samples on disk ${onDisk}`);
  const b = board(dir, () => ({ temp: 20 }));
  assert.deepEqual(
    b.op.log.since(0).map((e) => e.text),
    a.op.log.since(0).map((e) => e.text),
    'the newest 10, as in memory',
  );
});

test('an entry logged after the disk closed (the board stopping) is refused as JournalClosed, never written to a closed descriptor', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ews-disk-closed-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const errors: Error[] = [];
  const disk = new OperatorDisk(dir, 'b1', (_what, e) => errors.push(e));
  disk.read();
  const entry = { at: 1, kind: 'command', subject: 'valve3', status: 200, text: 'set', user: 'olga', board: 'b1' } as unknown as Parameters<OperatorDisk['logged']>[0];
  disk.logged(entry, () => [entry], 100);
  await disk.close();
  disk.logged({ ...entry, at: 2 }, () => [entry], 100);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(
    errors.map((e) => [e instanceof JournalClosed, e.message.includes('EBADF')]),
    [[true, false]],
  );
  assert.equal(readFileSync(join(dir, 'b1.audit.log'), 'utf8').trim().split('\n').length, 1, 'the entry before the close is on disk');
});

test('a journal closed while a write is under way: what was queued and in flight reaches the file, and the descriptor closes after it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ews-journal-close-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'j.log');
  const j = new Journal(file);
  const inFlight = j.append({ n: 1 });
  const queued = j.append({ n: 2 });
  j.close();
  await Promise.all([inFlight, queued]);
  await assert.rejects(j.append({ n: 3 }), JournalClosed);
  assert.deepEqual(
    readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l)),
    [{ n: 1 }, { n: 2 }],
  );
});
