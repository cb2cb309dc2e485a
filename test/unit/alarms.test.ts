// The built-in alarms about boards: another config than the master's, and a drained board's
// maintenance (no board-down or device-offline for what an admin took out of service).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Alarms, BUILTIN_HOLD_MS, CONFIG_MISMATCH_HOLD_MS } from '../../node/operator/alarms.ts';

test('config-mismatch-ID: raised when a board runs another config than the master for CONFIG_MISMATCH_HOLD_MS, cleared when it runs the same', () => {
  const alarms = new Alarms([], [], ['b1', 'b2', 'b3']);
  const boards = (b2: string | null, b3Runstate = 1) => [
    { id: 'b1', runstate: 1, role: 'master' as const, configHash: 'a' },
    { id: 'b2', runstate: 1, role: 'node' as const, configHash: b2 },
    { id: 'b3', runstate: b3Runstate, role: 'node' as const, configHash: 'c' },
  ];
  const mismatch = (changed: ReturnType<Alarms['evaluate']>) => changed.filter((a) => a.kind === 'config-mismatch').map((a) => [a.id, a.active]);
  assert.deepEqual(mismatch(alarms.evaluate({ devices: [], boards: boards('b', -1) }, 0)), [], 'b2 differs but not for long yet; b3 is down');
  assert.deepEqual(mismatch(alarms.evaluate({ devices: [], boards: boards('b', -1) }, CONFIG_MISMATCH_HOLD_MS - 1)), []);
  assert.deepEqual(mismatch(alarms.evaluate({ devices: [], boards: boards('b', -1) }, CONFIG_MISMATCH_HOLD_MS)), [['config-mismatch-b2', true]]);
  assert.equal(alarms.get('config-mismatch-b2')!.severity, 'warning');
  assert.deepEqual(mismatch(alarms.evaluate({ devices: [], boards: boards(null, -1) }, CONFIG_MISMATCH_HOLD_MS + 1)), [], 'not heard: unchanged');
  assert.deepEqual(mismatch(alarms.evaluate({ devices: [], boards: boards('a', -1) }, CONFIG_MISMATCH_HOLD_MS + 2)), [['config-mismatch-b2', false]]);
  // No master: nothing to compare with, nothing raised.
  const none = new Alarms([], [], ['b1', 'b2']);
  const noMaster = [
    { id: 'b1', runstate: 1, role: 'node' as const, configHash: 'a' },
    { id: 'b2', runstate: 1, role: 'node' as const, configHash: 'b' },
  ];
  assert.deepEqual(mismatch(none.evaluate({ devices: [], boards: noMaster }, 0)), []);
  assert.deepEqual(mismatch(none.evaluate({ devices: [], boards: noMaster }, 2 * CONFIG_MISMATCH_HOLD_MS)), []);
});

test('a drained board switched off raises no board-down; a device whose every board is drained raises no device-offline', () => {
  const alarms = new Alarms([], ['pump1'], ['b1', 'b2']);
  const at = (t: number, drained: boolean) =>
    alarms
      .evaluate(
        {
          devices: [{ id: 'pump1', online: false, maintenance: drained, points: {} }],
          boards: [
            { id: 'b1', runstate: 1, role: 'master' },
            { id: 'b2', runstate: -1, drained },
          ],
        },
        t,
      )
      .filter((a) => a.kind === 'board-down' || a.kind === 'device-offline')
      .map((a) => [a.id, a.active]);
  assert.deepEqual(at(0, true), []);
  assert.deepEqual(at(BUILTIN_HOLD_MS + 1, true), [], 'drained: in maintenance, no alarm');
  assert.deepEqual(at(BUILTIN_HOLD_MS + 2, false), [], 'undrained and down: the hold starts');
  assert.deepEqual(at(2 * BUILTIN_HOLD_MS + 3, false), [
    ['device-offline-pump1', true],
    ['board-down-b2', true],
  ]);
});
