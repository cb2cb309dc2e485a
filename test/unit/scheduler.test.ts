import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createClassifier } from '../../master/classify.ts';
import { leastConnection } from '../../master/least-connection.ts';
import { createScheduler, type QueueItem } from '../../master/scheduler.ts';
import { parseConfig } from '../../shared/config.ts';

interface Item extends QueueItem {
  name: string;
}
const classes = [
  { priority: 0, queueMax: 3, deadlineMs: 1000 },
  { priority: 1, queueMax: 3, deadlineMs: 5000 },
];
const limits = { queueBytesMax: 100, scanMax: 16 };
const item = (name: string, cls: number, enqueuedMs = 0, bytes = 0): Item => ({ name, cls, enqueuedMs, bytes });
const takeAll = (s: ReturnType<typeof createScheduler<Item>>, can = (_: Item) => true) => {
  const out: string[] = [];
  for (let it = s.take(0, { canRun: can }); it; it = s.take(0, { canRun: can })) out.push(it.name);
  return out;
};

test('priority: HIGH before LOW, arrival order within a class', () => {
  const s = createScheduler<Item>('priority', classes, limits);
  for (const it of [item('L1', 1), item('H1', 0), item('L2', 1), item('H2', 0)]) assert.equal(s.enqueue(it), 'ok');
  assert.deepEqual(takeAll(s), ['H1', 'H2', 'L1', 'L2']);
});

test('fifo: arrival order across classes', () => {
  const s = createScheduler<Item>('fifo', classes, limits);
  for (const it of [item('L1', 1), item('H1', 0), item('L2', 1), item('H2', 0)]) s.enqueue(it);
  assert.deepEqual(takeAll(s), ['L1', 'H1', 'L2', 'H2']);
});

test('bounds: per-class length and total bytes, at the limit exactly', () => {
  const s = createScheduler<Item>('priority', classes, limits);
  for (let i = 0; i < 3; i++) assert.equal(s.enqueue(item(`H${i}`, 0)), 'ok');
  assert.equal(s.enqueue(item('H3', 0)), 'class-full');
  assert.equal(s.enqueue(item('L0', 1, 0, 100)), 'ok', 'exactly queueBytesMax fits');
  assert.equal(s.enqueue(item('L1', 1, 0, 1)), 'bytes-full');
  assert.equal(s.bytes(), 100);
  assert.equal(s.size(), 4);
});

test('remove, expire past the class deadline, drain', () => {
  const s = createScheduler<Item>('priority', classes, limits);
  const a = item('H-old', 0, 0),
    b = item('H-new', 0, 900),
    c = item('L-old', 1, 0);
  for (const it of [a, b, c]) s.enqueue(it);
  assert.deepEqual(
    s.expire(999).map((x) => x.name),
    [],
  );
  assert.deepEqual(
    s.expire(1000).map((x) => x.name),
    ['H-old'],
  );
  assert.equal(s.remove(b), true);
  assert.equal(s.remove(b), false);
  assert.deepEqual(
    s.drain().map((x) => x.name),
    ['L-old'],
  );
  assert.equal(s.size(), 0);
});

test('a head that cannot run does not block the runnable ones behind it', () => {
  const s = createScheduler<Item>('priority', classes, limits);
  for (const it of [item('H-dev', 0), item('H-any', 0), item('L', 1)]) s.enqueue(it);
  assert.deepEqual(
    takeAll(s, (it) => it.name !== 'H-dev'),
    ['H-any', 'L'],
  );
  assert.equal(s.size(), 1);
});

test('least connection: smallest linknum among running boards under capacity; ties rotate', () => {
  const view = (linknum: number[], runstate: number[]) => ({ n: linknum.length, linknum: (i: number) => linknum[i]!, runstate: (i: number) => runstate[i]! });
  assert.equal(leastConnection(view([2, 1, 3], [1, 1, 1]), 8, -1), 1);
  assert.equal(leastConnection(view([2, 0, 3], [1, -1, 1]), 8, -1), 0, 'dead board skipped');
  assert.equal(leastConnection(view([2, 0, 3], [1, 0, 1]), 8, -1), 0, 'joining board skipped');
  assert.equal(leastConnection(view([8, 8, 8], [1, 1, 1]), 8, -1), undefined, 'all at capacity');
  assert.equal(leastConnection(view([0, 0, 0], [1, 1, 1]), 8, 0), 1);
  assert.equal(leastConnection(view([0, 0, 0], [1, 1, 1]), 8, 1), 2);
  assert.equal(leastConnection(view([0, 0, 0], [1, 1, 1]), 8, 2), 0);
  assert.equal(leastConnection(view([0, 5, 0], [1, 1, 1]), 8, -1, [1, 2]), 2, 'candidates only');
});

test('classification: configured rules in priority order, default HIGH for /cgi-bin/', () => {
  const def = createClassifier(parseConfig({ cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' }, boards: [{ id: 'a', address: '127.0.0.1' }] }).classes);
  assert.equal(def.classify('GET', '/cgi-bin/devices/pump1'), 0);
  assert.equal(def.classify('GET', '/index.html'), 1);
  const custom = createClassifier(
    parseConfig({
      cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' },
      boards: [{ id: 'a', address: '127.0.0.1' }],
      classes: [
        { name: 'browse', priority: 5, match: [{ pathPrefix: '/' }] },
        { name: 'writes', priority: 0, match: [{ method: 'post', pathPrefix: '/api/' }] },
        { name: 'status', priority: 1, match: [{ regex: '^/status/\\d+$' }] },
      ],
    }).classes,
  );
  assert.equal(custom.classify('POST', '/api/x'), 1);
  assert.equal(custom.classify('GET', '/api/x'), 0);
  assert.equal(custom.classify('GET', '/status/12'), 2);
  assert.equal(custom.classify('GET', '/status/x'), 0);
});

test('classification by header, cookie and client network', () => {
  const c = createClassifier(
    parseConfig({
      cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' },
      boards: [{ id: 'a', address: '127.0.0.1' }],
      classes: [
        { name: 'scada', priority: 0, match: [{ header: 'x-client=scada' }, { client: '10.20.0.0/16' }] },
        { name: 'member', priority: 1, match: [{ cookie: 'ews_session' }] },
        { name: 'anon', priority: 2, match: [{ pathPrefix: '/' }] },
      ],
    }).classes,
  );
  assert.equal(c.classify('GET', '/', { headers: { 'x-client': 'scada' } }), 0);
  assert.equal(c.classify('GET', '/', { headers: { 'x-client': 'other' } }), 2);
  assert.equal(c.classify('GET', '/', { client: '10.20.3.4' }), 0);
  assert.equal(c.classify('GET', '/', { client: '::ffff:10.20.3.4' }), 0);
  assert.equal(c.classify('GET', '/', { client: '10.21.3.4' }), 2);
  assert.equal(c.classify('GET', '/', { headers: { cookie: 'a=1; ews_session=v1.x.y' } }), 1);
  assert.equal(c.classify('GET', '/', { headers: { cookie: 'not_ews_session=1' } }), 2);
  assert.throws(
    () =>
      parseConfig({
        cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' },
        boards: [{ id: 'a', address: '127.0.0.1' }],
        classes: [{ name: 'x', match: [{ client: '10.0.0.0/40' }] }],
      }),
    /client: must be an IPv4 network/,
  );
});
