// Which notifications are due, and the bounded queue that sends them: on numbers, no waiting.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ATTEMPTS_MAX, type Delivery, dueDeliveries, type Episode, NotifyQueue, SentBook, sentEntry, sentKey } from '../../master/notify-plan.ts';

const targets = [
  { name: 'webhook-0', events: ['raised', 'cleared', 'repeat'] as const },
  { name: 'email', events: ['raised'] as const },
];
const ep = (x: Partial<Episode> = {}): Episode => ({ id: 'hot', active: true, since: 1000, clearedAt: null, acked: false, ...x });
const keys = (ds: Delivery[]) => ds.map((d) => d.key);
const book = (k: string[]) => new SentBook(k, 5000);

test('a raise per target once; its clear only after the raise went out; repeats while raised and unacknowledged, the latest only', () => {
  assert.deepEqual(keys(dueDeliveries([ep()], targets, book([]), 60_000, 2000)), ['hot@1000|raised|webhook-0', 'hot@1000|raised|email']);
  const sent = book(['hot@1000|raised|webhook-0', 'hot@1000|raised|email']);
  assert.deepEqual(dueDeliveries([ep()], targets, sent, 60_000, 2000), [], 'nothing more until a repeat is due');
  assert.deepEqual(keys(dueDeliveries([ep()], targets, sent, 60_000, 1000 + 3 * 60_000 + 5)), ['hot@1000|repeat3|webhook-0'], 'repeat 3, not 1 and 2 as well; email takes raises only');
  assert.deepEqual(dueDeliveries([ep({ acked: true })], targets, sent, 60_000, 1000 + 3 * 60_000), [], 'acknowledged: no repeats');
  assert.deepEqual(dueDeliveries([ep()], targets, sent, 0, 10_000_000), [], 'repeatMin 0: never');
  const cleared = ep({ active: false, clearedAt: 5000 });
  assert.deepEqual(keys(dueDeliveries([cleared], targets, book([]), 60_000, 6000)), ['hot@1000|raised|webhook-0', 'hot@1000|raised|email'], 'raised and cleared before any send: the raise first');
  assert.deepEqual(keys(dueDeliveries([cleared], targets, sent, 60_000, 6000)), ['hot@1000|cleared|webhook-0']);
  assert.deepEqual(dueDeliveries([cleared], targets, book([]), 60_000, 5000 + 3_600_001), [], 'an episode cleared over an hour ago is not announced');
  assert.deepEqual(dueDeliveries([ep({ since: null, active: false })], targets, book([]), 60_000, 6000), []);
  // Another board (the master before) saw the episode begin 400 ms later: its sends count here.
  assert.deepEqual(dueDeliveries([ep()], targets, book(['hot@1400|raised|webhook-0', 'hot@1400|raised|email']), 60_000, 2000), [], 'the same episode');
  assert.equal(dueDeliveries([ep()], targets, book(['hot@9000|raised|webhook-0']), 60_000, 2000).length, 2, 'an episode 8 s apart is another');
});

test('what is sent is an audit entry that reads back as the same key', () => {
  for (const d of [...dueDeliveries([ep()], targets, book([]), 60_000, 2000), ...dueDeliveries([ep()], targets, book([]), 60_000, 1000 + 2 * 60_000)]) {
    const e = sentEntry(d);
    assert.equal(sentKey(e.subject, e.text), d.key);
    assert.ok(e.subject.length <= 64 && e.text.length <= 160);
  }
  assert.equal(sentKey('hot@1', 'raised → email: failed 10 times (x)'), undefined, 'a failure is not a send');
});

test('the queue is bounded: full, a repeat is dropped before a first raise; retries back off; given up after the last attempt', () => {
  const d = (alarm: string, event: Delivery['event'], n = 0): Delivery => ({ key: `${alarm}|${event}${n}`, alarm, since: 1, event, n, target: 'email' });
  const q = new NotifyQueue(2);
  assert.equal(q.add(d('a', 'repeat', 1), 0), true);
  assert.equal(q.add(d('b', 'raised'), 0), true);
  assert.equal(q.add(d('c', 'raised'), 0), true, 'full: the repeat makes room for a raise');
  assert.equal(q.has('a|repeat1'), true, 'a dropped key is not proposed again');
  assert.equal(q.add(d('e', 'repeat', 2), 0), false, 'full of raises: a repeat is refused');
  assert.equal(q.add(d('f', 'raised'), 0), false, 'and so is a raise, counted');
  assert.deepEqual(q.dropped, { full: 3, 'gave-up': 0 });
  const [first] = q.take(0, 1);
  assert.equal(first!.alarm, 'b');
  assert.deepEqual(
    q.take(0, 5).map((x) => x.alarm),
    ['c'],
    'b is busy',
  );
  const waits: number[] = [];
  let now = 0;
  for (let i = 1; i < ATTEMPTS_MAX; i++) {
    assert.equal(q.failed('b|raised0', now), false);
    const start = now;
    while (q.take(now, 1).length === 0) now += 250;
    waits.push(now - start);
  }
  assert.deepEqual(waits.slice(0, 4), [1000, 2000, 4000, 8000]);
  assert.equal(Math.max(...waits), 60_000, 'at most a minute');
  assert.equal(q.failed('b|raised0', now), true, 'given up');
  assert.equal(q.dropped['gave-up'], 1);
  q.done('c|raised0');
  assert.equal(q.size, 0);
});
