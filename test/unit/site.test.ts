import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { buildTree, readSources, TREES } from '../../node/ui/site.ts';

const src = readSources(join(import.meta.dirname, '../../node/ui/src'));

test('three content levels from one source: full, light, text-only', () => {
  const [t1, t2, t3] = [1, 2, 3].map((l) => buildTree(l, src));
  assert.equal(TREES, 3);
  assert.deepEqual(Object.keys(t3!).sort(), ['app.js', 'index.html', 'logo.svg', 'style.css']);
  assert.deepEqual(Object.keys(t2!).sort(), ['app.js', 'index.html', 'style.css']);
  assert.deepEqual(Object.keys(t1!).sort(), ['app.js', 'index.html']);
  assert.match(t3!['index.html']!, /<canvas id="chart"/);
  assert.match(t3!['app.js']!, /function drawChart/);
  assert.doesNotMatch(t2!['index.html']!, /canvas|logo\.svg/);
  assert.doesNotMatch(t2!['app.js']!, /drawChart|startChart/);
  assert.doesNotMatch(t1!['index.html']!, /style\.css/);
  for (const t of [t1!, t2!, t3!]) {
    assert.doesNotMatch(t['index.html']!, /<!--\/?level|\{\{level\}\}/, 'no markers left');
    assert.doesNotMatch(t['app.js']!, /\/\*\/?level/);
  }
  assert.match(t1!['index.html']!, /data-level="1"/);
  assert.ok(t1!['app.js']!.length < t3!['app.js']!.length);
});

test('an unclosed marker is a build error, not a broken page', () => {
  assert.throws(() => buildTree(1, { ...src, 'index.html': '<p><!--level>=3-->x' }), /unclosed/);
});
