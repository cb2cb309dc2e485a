// The intent log: a command's start is on disk before the device is touched; a start with no
// outcome after a restart makes the key IDEMPOTENCY_UNKNOWN, never a second run.

import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { IdempotentExecutor } from '../../node/idempotency/idempotent-exec.ts';
import { IntentLog, openIntentLog } from '../../node/idempotency/intent-log.ts';
import { EwsError } from '../../shared/errors.ts';
import { IdempotencyStore, type IdemRecord, idemWire, parseIdem } from '../../shared/idempotency-store.ts';

const logs = mkdtempSync(join(tmpdir(), 'ews-intents-'));
after(() => rmSync(logs, { recursive: true, force: true }));
let made = 0;
const fresh = () => {
  const dir = join(logs, String(made++));
  mkdirSync(dir);
  return join(dir, 'b1.intents.log');
};

test('a start is on disk when started() resolves; concurrent starts share the writes; a new log reads starts and outcomes back', async () => {
  const file = fresh();
  const log = new IntentLog(file, 100, 60_000);
  await Promise.all(Array.from({ length: 20 }, (_, i) => log.started(`k${i}`, 'h')));
  assert.equal(readFileSync(file, 'utf8').trim().split('\n').length, 20);
  log.finished('k0', 'h', 200, '{"ok":true}');
  log.forget('k1');
  await log.started('k20', 'h'); // the outcome and the forget are written by now (one queue)
  log.close();
  const again = new IntentLog(file, 100, 60_000);
  const byKey = new Map(again.entries().map((e) => [e.key, e]));
  assert.equal(byKey.get('k0')?.state, 'done');
  assert.equal(byKey.get('k0')?.body, '{"ok":true}');
  assert.equal(byKey.has('k1'), false, 'forgotten: the device was never touched');
  assert.equal(byKey.get('k2')?.state, 'started');
  assert.equal(byKey.size, 20);
  again.close();
});

test('bounded: entries past the TTL are dropped at boot; the file is compacted past 4 × keysMax lines; a torn line is skipped', async () => {
  const file = fresh();
  let now = 1_000_000;
  const log = new IntentLog(file, 4, 10_000, () => now);
  for (let i = 0; i < 20; i++) {
    await log.started(`k${i}`, 'h');
    log.forget(`k${i}`);
  }
  await log.started('last', 'h');
  assert.ok(readFileSync(file, 'utf8').trim().split('\n').length <= 4 * 4 + 2, 'compacted');
  log.close();
  appendFileSync(file, '{"k":"torn","h":"h","s":"s"');
  now += 11_000;
  const later = new IntentLog(file, 4, 10_000, () => now);
  assert.deepEqual(later.entries(), [], 'past the TTL');
  later.close();
  assert.equal(openIntentLog(undefined, 'b1', 4, 1000), undefined, 'no stateDir, no log');
});

test('compaction keeps every live key, however many: only the TTL removes one', async () => {
  const file = fresh();
  let now = 1_000_000;
  const log = new IntentLog(file, 4, 10_000, () => now);
  // 30 live keys against a bound of 4: the store would have refused them, the log must not forget any it holds.
  for (let i = 0; i < 30; i++) {
    await log.started(`k${i}`, 'h');
    log.finished(`k${i}`, 'h', 200, '{}');
  }
  await log.started('last', 'h');
  log.close();
  now += 5_000;
  const again = new IntentLog(file, 4, 10_000, () => now);
  assert.equal(again.entries().length, 31, 'all live');
  again.close();
  now += 6_000;
  const later = new IntentLog(file, 4, 10_000, () => now);
  assert.equal(later.entries().length, 0, 'all expired');
  later.close();
});

test('killed between the device and the outcome: after the restart the key is IDEMPOTENCY_UNKNOWN on every board, and the command never runs again', async () => {
  const file = fresh();
  const sent: IdemRecord[] = [];
  let runs = 0;
  const log1 = new IntentLog(file, 100, 60_000);
  const first = new IdempotentExecutor(new IdempotencyStore(100, 60_000), 2, Date.now, () => {}, log1);
  // The device is driven, then the board dies before the answer is recorded: the attempt never ends.
  let driven: () => void = () => {};
  const wasDriven = new Promise<void>((r) => (driven = r));
  void first.run('cmd-1', 'h', async () => {
    runs++;
    driven();
    return new Promise(() => {});
  });
  await wasDriven;
  assert.equal(runs, 1);
  // A completed one, for contrast: its answer is replayed after the restart.
  await first.run('cmd-2', 'h', async () => ({ status: 200, body: '{"done":2}' }));
  await log1.started('flush', 'h'); // the log is one queue: the outcome before it is on disk too

  const restarted = new IdempotentExecutor(new IdempotencyStore(100, 60_000), 2, Date.now, (rec) => sent.push(rec), new IntentLog(file, 100, 60_000));
  await assert.rejects(
    restarted.run('cmd-1', 'h', async () => {
      runs++;
      return { status: 200, body: '{}' };
    }),
    (e: unknown) => e instanceof EwsError && e.code === 'IDEMPOTENCY_UNKNOWN',
  );
  assert.equal(runs, 1, 'never a second run');
  const replay = await restarted.run('cmd-2', 'h', async () => ({ status: 500, body: 'must not run' }));
  assert.deepEqual([replay.replayed, replay.body], [true, '{"done":2}']);
  // Once on the network it tells the others, who answer the key the same way.
  restarted.announceRecovered();
  assert.equal(sent.find((r) => r.key === 'cmd-1')?.state, 'unknown');
  assert.equal(
    sent.some((r) => r.key === 'cmd-2'),
    false,
    'finished keys are not announced as unknown',
  );
  const peer = new IdempotencyStore(100, 60_000);
  const unknown = sent.find((r) => r.key === 'cmd-1')!;
  peer.put(parseIdem(idemWire(unknown, 0), 3)!, 0);
  assert.equal(peer.check('cmd-1', 'h', 1).kind, 'unknown');
  peer.put({ ...unknown, state: 'pending' }, 2);
  assert.equal(peer.check('cmd-1', 'h', 3).kind, 'unknown', 'a late pending never hides it');
});
