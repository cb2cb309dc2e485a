import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bundleSite, RETRY_CODES } from '../../deploy/site-bundle.ts';
import { indexHtml } from '../../node/ui/page.ts';
import { CONTENT_LEVELS } from '../../node/ui/site.ts';

const [t1, t2, t3] = await bundleSite();

test('three content levels from one source: full, light, text-only', () => {
  assert.equal(CONTENT_LEVELS, 3);
  assert.deepEqual(Object.keys(t3!).sort(), ['app.js', 'index.html', 'logo.svg', 'style.css']);
  assert.deepEqual(Object.keys(t2!).sort(), ['app.js', 'index.html', 'style.css']);
  assert.deepEqual(Object.keys(t1!).sort(), ['app.js', 'index.html']);
  assert.match(t3!['index.html']!, /<canvas id="chart"/);
  assert.doesNotMatch(t2!['index.html']!, /canvas|logo\.svg/);
  assert.doesNotMatch(t1!['index.html']!, /style\.css/);
  assert.match(t1!['index.html']!, /data-level="1"/);
});

test('each level bundle keeps only its code: esbuild drops the chart below 3 and the trends below 2', () => {
  assert.match(t3!['app.js']!, /function drawChart/);
  assert.match(t3!['app.js']!, /function drawTrend/);
  assert.doesNotMatch(t2!['app.js']!, /drawChart|startChart/);
  assert.match(t2!['app.js']!, /function drawTrend/);
  assert.doesNotMatch(t1!['app.js']!, /drawChart|drawTrend|loadTrends/);
  for (const t of [t1!, t2!, t3!]) assert.doesNotMatch(t['app.js']!, /\bEWS_(LEVEL|RETRY_CODES)\b/, 'every build constant replaced');
  assert.ok(t1!['app.js']!.length < t2!['app.js']!.length && t2!['app.js']!.length < t3!['app.js']!.length);
});

test("the codes the page retries on another board are the error table's", () => {
  assert.deepEqual([...RETRY_CODES].sort(), ['BOARD_FAILED', 'NO_BOARD', 'NO_MASTER', 'SHUTTING_DOWN']);
  for (const code of RETRY_CODES) assert.ok(t1!['app.js']!.includes(`"${code}"`), code);
});

test('a content level outside 1..CONTENT_LEVELS is a build error, not a broken page', () => {
  assert.throws(() => indexHtml(0), /invariant/);
  assert.throws(() => indexHtml(CONTENT_LEVELS + 1), /invariant/);
});
