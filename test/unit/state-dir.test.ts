// Durable by default: the config's stateDir, else $STATE_DIRECTORY, else /var/lib/ews when it can
// be written, else a clear refusal naming stateDir; false is memory only, said explicitly.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Alarms } from '../../node/operator/alarms.ts';
import { resolveStateDir } from '../../node/state/state-dir.ts';

test('stateDir resolves to the config, then $STATE_DIRECTORY, then the default; false is memory only; an unwritable one is refused naming stateDir', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ews-statedir-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const fallback = join(dir, 'var-lib-ews');
  assert.deepEqual(resolveStateDir(join(dir, 'cfg'), { STATE_DIRECTORY: join(dir, 'env') }, fallback), { dir: join(dir, 'cfg'), from: 'config' });
  assert.deepEqual(resolveStateDir(undefined, { STATE_DIRECTORY: `${join(dir, 'env')}:${join(dir, 'other')}` }, fallback), { dir: join(dir, 'env'), from: 'STATE_DIRECTORY' });
  assert.deepEqual(resolveStateDir(undefined, {}, fallback), { dir: fallback, from: 'default' });
  assert.deepEqual(resolveStateDir(false, { STATE_DIRECTORY: join(dir, 'env') }, fallback), { dir: undefined, from: 'memory' });
  // A path under a regular file cannot be created, whoever runs the test (root included).
  const file = join(dir, 'a-file');
  writeFileSync(file, '');
  chmodSync(file, 0o400);
  const refused = resolveStateDir(undefined, {}, join(file, 'ews'));
  assert.ok('problem' in refused && /^stateDir: none is set/.test(refused.problem) && /"stateDir": false/.test(refused.problem), JSON.stringify(refused));
  const bad = resolveStateDir(join(file, 'x'), {}, fallback);
  assert.ok('problem' in bad && bad.problem.startsWith('stateDir: cannot create or write'), JSON.stringify(bad));
});

test('a board that keeps its state in memory only raises a warning alarm on every board; one heard durable clears it', () => {
  const alarms = new Alarms([], [], ['b1', 'b2']);
  const changed = alarms.evaluate(
    {
      devices: [],
      boards: [
        { id: 'b1', runstate: 1, durable: true },
        { id: 'b2', runstate: 1, durable: false },
      ],
    },
    1000,
  );
  assert.deepEqual(
    changed.map((a) => [a.id, a.severity, a.active]),
    [['state-volatile-b2', 'warning', true]],
  );
  assert.deepEqual(alarms.evaluate({ devices: [], boards: [{ id: 'b2', runstate: 1, durable: null }] }, 2000), [], 'not heard: unchanged');
  assert.deepEqual(
    alarms.evaluate({ devices: [], boards: [{ id: 'b2', runstate: 1, durable: true }] }, 3000).map((a) => [a.id, a.active]),
    [['state-volatile-b2', false]],
  );
});
