import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IdempotencyStore, type IdemRecord, idemWire, parseIdem, requestHash } from '../../shared/idempotency-store.ts';

const rec = (key: string, state: 'pending' | 'done', extra: Partial<IdemRecord> = {}): IdemRecord => ({ key, hash: 'h1', state, board: 1, status: 200, body: '{"ok":true}', atMs: 0, ...extra });

test('new, pending, done, conflict', () => {
  const s = new IdempotencyStore(10, 1000);
  assert.deepEqual(s.check('k', 'h1', 0), { kind: 'new' });
  s.put(rec('k', 'pending'), 0);
  assert.deepEqual(s.check('k', 'h1', 1), { kind: 'pending', board: 1 });
  s.put(rec('k', 'done'), 2);
  const d = s.check('k', 'h1', 3);
  assert.equal(d.kind === 'done' && d.rec.body, '{"ok":true}');
  assert.deepEqual(s.check('k', 'h2', 3), { kind: 'conflict' });
  s.put(rec('k', 'pending'), 4);
  assert.equal(s.check('k', 'h1', 5).kind, 'done', 'a late pending never replaces done');
});

test('at the bound a new key is refused, never a live one forgotten; an old key still replays; after the TTL there is room again', () => {
  const s = new IdempotencyStore(3, 1000);
  for (let i = 0; i < 3; i++) assert.equal(s.put(rec(`k${i}`, 'done'), i, true), true);
  assert.equal(s.size, 3);
  assert.deepEqual(s.check('k3', 'h1', 10), { kind: 'full', retryAfterS: 1 }, 'the next new key is refused');
  assert.equal(s.put(rec('k3', 'pending'), 10, true), false, 'and not taken');
  assert.equal(s.refused, 1);
  assert.equal(s.check('k0', 'h1', 10).kind, 'done', 'the oldest still replays');
  assert.equal(s.put(rec('k2', 'done', { status: 201 }), 11, true), true, 'a held key is updated at the bound');
  // Peers' copies get twice the room, then are dropped and counted; nothing held is forgotten.
  for (let i = 0; i < 3; i++) assert.equal(s.put(rec(`p${i}`, 'done'), 20), true);
  assert.equal(s.put(rec('p3', 'done'), 20), false);
  assert.equal(s.dropped, 1);
  assert.equal(s.check('k1', 'h1', 20).kind, 'done');
  // k0 was put at 0: it expires after 1000 ms, and its place is free for a new key.
  assert.deepEqual(s.check('n', 'h1', 1000), { kind: 'full', retryAfterS: 1 });
  assert.equal(s.check('n', 'h1', 1005).kind, 'full', 'k1, k2 and the peers are still live: 5 of 6, but a new own key needs a place below 3');
  assert.equal(s.check('n', 'h1', 1021).kind, 'new', 'every record expired');
  assert.equal(s.size, 0);
});

test('the store says how long until the oldest record expires', () => {
  const s = new IdempotencyStore(1, 60_000);
  s.put(rec('a', 'done'), 0, true);
  assert.deepEqual(s.check('b', 'h1', 15_000), { kind: 'full', retryAfterS: 45 });
});

test('wire form round-trips; large answers travel without their body; bad records are refused', () => {
  const r = rec('key-1', 'done', { body: 'x'.repeat(50) });
  assert.deepEqual(parseIdem(idemWire(r, 100), 3), { ...r, atMs: 0 });
  assert.equal(parseIdem(idemWire(r, 10), 3)!.body, undefined);
  assert.equal(parseIdem({ ...idemWire(r, 100), b: 3 }, 3), undefined);
  assert.equal(parseIdem({ ...idemWire(r, 100), k: 'has space' }, 3), undefined);
  assert.equal(parseIdem({ ...idemWire(r, 100), st: 42 }, 3), undefined);
  assert.notEqual(requestHash('POST', '/a', Buffer.from('1')), requestHash('POST', '/b', Buffer.from('1')));
});

test('executor: one run per key; a concurrent retry waits for it; failures before the device are not recorded', async () => {
  const { IdempotentExecutor } = await import('../../node/idempotency/idempotent-exec.ts');
  const sent: IdemRecord[] = [];
  const ex = new IdempotentExecutor(
    new IdempotencyStore(10, 60_000),
    0,
    () => 0,
    (r) => sent.push(r),
  );
  let runs = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const exec = async () => {
    runs++;
    await gate;
    return { status: 200, body: '{"ok":true}' };
  };
  const a = ex.run('k', 'h', exec);
  const b = ex.run('k', 'h', exec);
  release();
  const [ra, rb] = await Promise.all([a, b]);
  assert.equal(runs, 1);
  assert.deepEqual([ra.replayed, rb.replayed, rb.body], [false, true, '{"ok":true}']);
  assert.deepEqual(
    sent.map((r) => r.state),
    ['pending', 'done'],
  );
  await assert.rejects(ex.run('k', 'other', exec), /IDEMPOTENCY_CONFLICT|another body/);
  const offline = await ex.run('k2', 'h', async () => ({ status: 503, body: '{}' }));
  assert.equal(offline.status, 503);
  assert.equal((await ex.run('k2', 'h', async () => ({ status: 200, body: '{"second":true}' }))).body, '{"second":true}', 'a 503 before the device leaves the key free');
});

test('executor: a key pending on another board is IDEMPOTENCY_PENDING here, never a second run', async () => {
  const { IdempotentExecutor } = await import('../../node/idempotency/idempotent-exec.ts');
  const store = new IdempotencyStore(10, 60_000);
  store.put(rec('k', 'pending', { board: 2, body: undefined, status: 202 }), 0);
  const ex = new IdempotentExecutor(
    store,
    0,
    () => 0,
    () => {},
  );
  let runs = 0;
  await assert.rejects(
    ex.run('k', 'h1', async () => {
      runs++;
      return { status: 200, body: '{}' };
    }),
    (e: { code?: string }) => e.code === 'IDEMPOTENCY_PENDING',
  );
  assert.equal(runs, 0);
});

test('key routing at the master: replay from the record, else the board that holds the key while it runs', async () => {
  const { keyRoute } = await import('../../master/device-route.ts');
  const up = new Set([1, 2]);
  const running = (b: number) => up.has(b);
  const attach = [1, 2];
  assert.deepEqual(keyRoute({ kind: 'new' }, attach, running), { kind: 'boards', boards: [1, 2] });
  assert.deepEqual(keyRoute({ kind: 'pending', board: 2 }, attach, running), { kind: 'boards', boards: [2] }, 'a retry joins the run on its board');
  const done = rec('k', 'done', { board: 2 });
  assert.deepEqual(keyRoute({ kind: 'done', rec: done }, attach, running), { kind: 'replay', rec: done, body: '{"ok":true}' });
  const big = rec('k', 'done', { board: 2, body: undefined });
  assert.deepEqual(keyRoute({ kind: 'done', rec: big }, attach, running), { kind: 'boards', boards: [2] }, 'an answer too large to replicate is replayed by its board');
  up.delete(2);
  assert.deepEqual(
    keyRoute({ kind: 'pending', board: 2 }, attach, running),
    { kind: 'boards', boards: [1, 2] },
    'its board down: any attached board (which answers IDEMPOTENCY_PENDING from the record)',
  );
  assert.deepEqual(keyRoute({ kind: 'conflict' }, attach, running), { kind: 'refuse', code: 'IDEMPOTENCY_CONFLICT' });
  assert.deepEqual(keyRoute({ kind: 'unknown', board: 2 }, attach, running), { kind: 'refuse', code: 'IDEMPOTENCY_UNKNOWN' });
});
