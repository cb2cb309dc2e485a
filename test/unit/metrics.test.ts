import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry, SERIES_MAX } from '../../shared/metrics.ts';

test('label values are escaped (backslash, quote, newline), not replaced', () => {
  const r = new Registry();
  r.counter('ews_x_total', 'x').inc({ reason: 'a"b\\c\nd' });
  assert.match(r.render(), /ews_x_total\{reason="a\\"b\\\\c\\nd"\} 1/);
});

test('a counter at its series bound drops new label sets and says so', () => {
  const r = new Registry();
  const c = r.counter('ews_y_total', 'y');
  for (let i = 0; i <= SERIES_MAX; i++) c.inc({ i });
  assert.equal(c.get({ i: SERIES_MAX }), 0, 'the series past the bound was not kept');
  assert.match(r.render(), /ews_metrics_series_dropped_total\{metric="ews_y_total"\} 1/);
});

test('a counter read at scrape time is typed counter', () => {
  const r = new Registry();
  r.counterOf('ews_z_total', 'z', () => [[{}, 3]]);
  assert.match(r.render(), /# TYPE ews_z_total counter\news_z_total 3/);
});
