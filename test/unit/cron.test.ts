// Cron expressions as the config reads them (shared/cron.ts), on times given as numbers: no
// timers, no waiting for the wall clock; and node-cron, which runs them, agreeing on every match. Dates are built in local
// time, so the tests hold in any time zone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTask } from 'node-cron';
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

test('node-cron, which runs the schedules, matches every expression the config accepts on the same seconds', () => {
  const exprs = [
    '* * * * * *',
    '*/7 * * * * *',
    '30 10 * * *',
    '0 0 1 1 *',
    '0 9-17/2 * * mon-fri',
    '0 0 L * *',
    '0 12 * * 5L',
    '0 8 * * 1#2',
    '0 0 * * fri-mon',
    '@hourly',
    '0 0 1,15 * *',
    '0 0 * jan,jul *',
  ];
  const from = at(2026, 1, 1);
  for (const e of exprs) {
    const task = createTask(e, () => {});
    // Every minute of two months, and every second of the first hour, in local time.
    for (let s = from; s < from + 61 * 86_400; s += s < from + 3600 ? 1 : 60) {
      const d = new Date(s * 1000);
      assert.equal(task.match(d), matches(e, s), `${e} at ${d.toString()}`);
    }
    void task.destroy();
  }
});
