// A node rehearses the master's path on a stage of its own objects (node/http/rehearsal.ts). V8's
// optimized code for a call site holds one target; where the stage's object called a function
// made per object (a closure), the live object calls another, and the rehearsed code is dropped at
// the takeover ("wrong call target"). These parts of the path call shared functions instead.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createClassifier } from '../../master/classify.ts';
import { ClusterMirror } from '../../node/cluster-plane/mirror.ts';
import { silentLogger } from '../../node/log.ts';
import { type Config, parseConfig } from '../../shared/config.ts';
import { Registry } from '../../shared/metrics.ts';

const config = (extra: Record<string, unknown> = {}): Config =>
  parseConfig({
    cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' },
    boards: [
      { id: 'a', address: '127.0.0.1' },
      { id: 'b', address: '127.0.0.1', httpPort: 8082, udpPort: 5052 },
    ],
    ...extra,
  });

/** The object's own properties that hold functions: each is a function made for this object. */
const ownFunctions = (o: object): string[] => Object.entries(o).flatMap(([k, v]) => (typeof v === 'function' ? [k] : []));

test('classifiers built from different classes share one classify function', () => {
  const a = createClassifier(config().classes);
  const b = createClassifier(
    config({
      classes: [
        { name: 'ctl', priority: 0, match: [{ pathPrefix: '/cgi-bin/' }] },
        { name: 'page', priority: 1, match: [] },
      ],
    }).classes,
  );
  assert.equal(a.classify, b.classify);
  assert.deepEqual(ownFunctions(a), []);
  // Still each its own rules.
  assert.equal(b.classify('GET', '/cgi-bin/x'), 0);
  assert.equal(b.classify('GET', '/index.html'), 1);
});

test("a mirror's table counts through the mirror's shared method, not a closure of its own", () => {
  const cfg = config();
  const clock = { now: () => 0 };
  const one = new ClusterMirror(cfg, cfg.boards[0]!, 1, clock, silentLogger, new Registry());
  const two = new ClusterMirror(cfg, cfg.boards[1]!, 1, clock, silentLogger, new Registry());
  assert.deepEqual(ownFunctions(one.table), []);
  assert.deepEqual(ownFunctions(two.table), []);
  // Each count still reaches the mirror it belongs to, and only that one.
  const heard = [0, 0];
  one.counted = () => void heard[0]!++;
  two.counted = () => void heard[1]!++;
  one.table.dispatched(1);
  assert.equal(one.table.linknum(1), 1);
  one.table.completed(1);
  assert.equal(one.table.linknum(1), 0);
  assert.deepEqual(heard, [2, 0]);
});
