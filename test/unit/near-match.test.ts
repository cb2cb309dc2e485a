import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseConfig } from '../../shared/config.ts';
import { nearMatch } from '../../shared/near-match.ts';

test('the near match of a mistyped word: a swap, a slip or a missing letter; nothing when nothing is close', () => {
  const commands = ['start', 'check-config', 'status', 'hash-password', 'gen-key', 'gen-cert', 'calibrate', 'restore'];
  assert.equal(nearMatch('stauts', commands), 'status');
  assert.equal(nearMatch('strat', commands), 'start');
  assert.equal(nearMatch('check-confg', commands), 'check-config');
  assert.equal(nearMatch('gen-kye', commands), 'gen-key');
  assert.equal(nearMatch('deploy', commands), undefined);
  assert.equal(nearMatch('x', commands), undefined);
});

test('an unknown config key names the near match; a renamed one its new name', () => {
  const problems = (raw: unknown) => {
    try {
      parseConfig(raw);
      return [];
    } catch (e) {
      return (e as Error).message.split('\n').slice(1);
    }
  };
  const base = { cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' }, boards: [{ id: 'b1', address: '127.0.0.1' }] };
  assert.deepEqual(problems({ ...base, limits: { queueMx: 5, forwardReplayWindow: 100 } }), [
    'limits.queueMx: unknown key (did you mean queueMax?)',
    'limits.forwardReplayWindow: was renamed dispatchReplayWindow',
  ]);
  assert.deepEqual(problems({ ...base, schedles: [] }), ['schedles: unknown key (did you mean schedules?)']);
});
