// Cron expressions (shared/cron.ts) and when the master's schedules are due (master/schedule-ticker.ts),
// on times given as numbers: no timers, no waiting for the wall clock. Dates are built in local
// time, so the tests hold in any time zone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ScheduleTicker } from '../../master/schedule-ticker.ts';
import { CRON_CHARS_MAX, type CronSpec, cronMatches, localTime, parseCron } from '../../shared/cron.ts';

const spec = (e: string): CronSpec => {
  const s = parseCron(e);
  if (typeof s === 'string') throw new Error(`${e}: ${s}`);
  return s;
};
/** Local time → epoch seconds. */
const at = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0) => new Date(y, mo - 1, d, h, mi, s).getTime() / 1000;
const matches = (e: string, epochS: number) => cronMatches(spec(e), localTime(epochS));

test('6 fields start with seconds; 5 fields run at second 0', () => {
  assert.ok(matches('* * * * * *', at(2026, 12, 1, 10, 20, 33)));
  assert.ok(matches('30 10 * * *', at(2026, 12, 1, 10, 30, 0)));
  assert.ok(!matches('30 10 * * *', at(2026, 12, 1, 10, 30, 1)));
  assert.ok(matches('*/15 * * * * *', at(2026, 12, 1, 10, 0, 45)));
  assert.ok(!matches('*/15 * * * * *', at(2026, 12, 1, 10, 0, 46)));
  assert.ok(matches('5/20 * * * * *', at(2026, 12, 1, 10, 0, 45)), 'a/n runs from a to the end of the field');
  assert.ok(!matches('5/20 * * * * *', at(2026, 12, 1, 10, 0, 0)));
});

test('lists, ranges, steps in ranges, and ranges that wrap', () => {
  assert.ok(matches('0 0 8-18/2 * * *', at(2026, 12, 1, 16)));
  assert.ok(!matches('0 0 8-18/2 * * *', at(2026, 12, 1, 17)));
  assert.ok(!matches('0 0 8-18/2 * * *', at(2026, 12, 1, 20)));
  assert.ok(matches('0 0 22-2 * * *', at(2026, 12, 1, 1)), '22-2 wraps past midnight');
  assert.ok(!matches('0 0 22-2 * * *', at(2026, 12, 1, 3)));
  assert.ok(matches('0 0 1,13 * * *', at(2026, 12, 1, 13)));
});

test('month and weekday names, 7 as Sunday, day and weekday both required', () => {
  // 2026-12-06 is a Sunday, 2026-12-07 a Monday.
  assert.ok(matches('0 0 * dec sun', at(2026, 12, 6)));
  assert.ok(matches('0 0 * December Sunday', at(2026, 12, 6)));
  assert.ok(matches('0 0 * * 7', at(2026, 12, 6)));
  assert.ok(matches('0 0 * * fri-mon', at(2026, 12, 7)), 'weekday ranges wrap too');
  assert.ok(!matches('0 0 * * tue-thu', at(2026, 12, 7)));
  assert.ok(!matches('0 0 * nov *', at(2026, 12, 6)));
  assert.ok(matches('0 0 7 * mon', at(2026, 12, 7)));
  assert.ok(!matches('0 0 8 * mon', at(2026, 12, 7)), 'day and weekday must both match (node-cron 4, not classic cron)');
  assert.ok(matches('0 0 ? * mon', at(2026, 12, 7)));
});

test('L, nL and n#k: the last day, the last such weekday, the n-th such weekday', () => {
  assert.ok(matches('0 0 L * *', at(2026, 2, 28)));
  assert.ok(!matches('0 0 L * *', at(2028, 2, 28)), '2028 is a leap year');
  assert.ok(matches('0 0 L * *', at(2028, 2, 29)));
  // December 2026: Fridays are the 4th, 11th, 18th and 25th.
  assert.ok(matches('0 0 * * 5L', at(2026, 12, 25)));
  assert.ok(!matches('0 0 * * friL', at(2026, 12, 18)));
  assert.ok(matches('0 0 * * 5#2', at(2026, 12, 11)));
  assert.ok(!matches('0 0 * * 5#2', at(2026, 12, 18)));
});

test('nicknames', () => {
  assert.ok(matches('@hourly', at(2026, 12, 1, 7)));
  assert.ok(!matches('@hourly', at(2026, 12, 1, 7, 1)));
  assert.ok(matches('@daily', at(2026, 12, 1)));
  assert.ok(matches('@WEEKLY', at(2026, 12, 6)));
  assert.ok(matches('@yearly', at(2027, 1, 1)));
  assert.ok(!matches('@monthly', at(2027, 1, 2)));
});

test('a bad expression says which field and why', () => {
  const bad = (e: string) => {
    const r = parseCron(e);
    assert.equal(typeof r, 'string', `${e} parsed`);
    return r as string;
  };
  assert.match(bad('* * * *'), /has 4 fields/);
  assert.match(bad('* * * * * * *'), /has 7 fields/);
  assert.match(bad('60 * * * * *'), /^second "60": "60" is not a second \(0-59\)/);
  assert.match(bad('0 24 * * *'), /^hour "24"/);
  assert.match(bad('0 0 0 * *'), /^day "0"/);
  assert.match(bad('0 0 * 13 *'), /^month "13"/);
  assert.match(bad('0 0 * * 8'), /^weekday "8"/);
  assert.match(bad('0 0 * * funday'), /^weekday "funday": "funday" is not a weekday \(0-7 or a name\)/);
  assert.match(bad('0 0 * mayday *'), /^month "mayday"/);
  assert.match(bad('*/0 * * * * *'), /step 0 is not 1-60/);
  assert.match(bad('*/61 * * * * *'), /step 61 is not 1-60/);
  assert.match(bad('*-5 * * * * *'), /cannot start at "\*"/);
  assert.match(bad('? * * * * *'), /"\?" is for day and weekday only/);
  assert.match(bad('0 0 15W * *'), /^day "15W"/);
  assert.match(bad('0 0 * * 5#6'), /^weekday "5#6"/);
  assert.match(bad('@often'), /is not one of @yearly/);
  assert.match(bad('1,,2 * * * * *'), /^second "": is not a value/);
  const long = `0 0 * * ${'1,'.repeat(95)}1`.padEnd(CRON_CHARS_MAX);
  assert.equal(typeof parseCron(long), 'object', 'at the bound');
  assert.match(bad(`${long} `), new RegExp(`longer than ${CRON_CHARS_MAX}`));
});

const T0 = at(2026, 12, 1, 10, 0, 0) * 1000;
/** No run under way. */
const idle = () => false;
const ticker = (exprs: string[], nowMs = T0 + 300, catchUpS = 10) => new ScheduleTicker(exprs.map(spec), nowMs, catchUpS, localTime);

test('the ticker runs each schedule once per matching second, not the second under way at start', () => {
  const t = ticker(['* * * * * *', '*/2 * * * * *']);
  assert.deepEqual(t.tick(T0 + 900, idle).due, [], 'still the start second');
  assert.equal(t.nextWakeMs(T0 + 900), T0 + 1000);
  assert.deepEqual(t.tick(T0 + 1000, idle).due, [{ schedule: 0, atS: T0 / 1000 + 1 }]);
  assert.deepEqual(t.tick(T0 + 1500, idle).due, [], 'the same second again: nothing twice');
  assert.deepEqual(t.tick(T0 + 2001, idle).due, [
    { schedule: 0, atS: T0 / 1000 + 2 },
    { schedule: 1, atS: T0 / 1000 + 2 },
  ]);
});

test('a late wake runs what fell due meanwhile once, for its last second; past the catch-up window it says how many seconds it skipped', () => {
  const t = ticker(['* * * * * *', '30 * * * * *', '0 0 12 * * *']);
  // 4.5 s late: the every-second schedule once (for the last second), the :30 one not yet.
  assert.deepEqual(t.tick(T0 + 5500, idle), { due: [{ schedule: 0, atS: T0 / 1000 + 5 }], overlapped: [], skippedS: 0, steppedBack: false });
  // Woke at :35 after 30 s: :30 lies in the last 10 s, so it runs.
  assert.deepEqual(t.tick(T0 + 35_200, idle), {
    due: [
      { schedule: 0, atS: T0 / 1000 + 35 },
      { schedule: 1, atS: T0 / 1000 + 30 },
    ],
    overlapped: [],
    skippedS: 20,
    steppedBack: false,
  });
  // The clock steps ahead 3 h (NTP after boot): noon is long past and not run now.
  const r = t.tick(T0 + 3 * 3600_000 + 100, idle);
  assert.deepEqual(r.due, [{ schedule: 0, atS: T0 / 1000 + 3 * 3600 }]);
  assert.equal(r.skippedS, 3 * 3600 - 35 - 10);
});

test('the catch-up window at its bound: the last catchUpS seconds are looked at, the one before is not', () => {
  const t = ticker(['7 * * * * *', '8 * * * * *'], T0, 3);
  // Woke at :10 with a 3 s window: :08, :09, :10 are looked at; :07 is skipped with :01-:06.
  assert.deepEqual(t.tick(T0 + 10_000, idle), { due: [{ schedule: 1, atS: T0 / 1000 + 8 }], overlapped: [], skippedS: 7, steppedBack: false });
});

test('a clock stepped back starts over from the new time: nothing already run runs again', () => {
  const t = ticker(['* * * * * *', '5 * * * * *']);
  assert.equal(t.tick(T0 + 6000, idle).due.length, 2);
  assert.deepEqual(t.tick(T0 + 2000, idle), { due: [], overlapped: [], skippedS: 0, steppedBack: true });
  assert.deepEqual(t.tick(T0 + 3000, idle).due, [{ schedule: 0, atS: T0 / 1000 + 3 }]);
  assert.throws(() => ticker(['* * * * * *'], T0, 0), /invariant/);
});

test('a schedule whose previous run is still under way is skipped and named, not stacked; the others run', () => {
  const t = ticker(['* * * * * *', '*/2 * * * * *']);
  const busy = new Set([0]);
  assert.deepEqual(
    t.tick(T0 + 2000, (i) => busy.has(i)),
    { due: [{ schedule: 1, atS: T0 / 1000 + 2 }], overlapped: [0], skippedS: 0, steppedBack: false },
  );
  busy.clear();
  // Skipped means skipped: the next tick runs its own second, not the one missed.
  assert.deepEqual(t.tick(T0 + 3000, (i) => busy.has(i)).due, [{ schedule: 0, atS: T0 / 1000 + 3 }]);
});
