// A command survives the crash of the board that drove it: the board is SIGKILLed after the
// device received the command and before the answer came back; after its restart a retry of the
// same Idempotency-Key is answered 409 IDEMPOTENCY_UNKNOWN and the device never sees it again.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ptyDevices } from '../security/pty-devices.ts';
import { converged, makeCluster, outcome, retryUntil, type TestCluster, waitFor } from './harness.ts';

describe('exactly once across a crash of the executing board', () => {
  let c: TestCluster;
  let devices: Awaited<ReturnType<typeof ptyDevices>>;
  let stateDir: string;
  before(async () => {
    devices = await ptyDevices();
    stateDir = mkdtempSync(join(tmpdir(), 'ews-state-'));
    c = await makeCluster(3, (cfg) => {
      cfg.stateDir = stateDir;
      // The valve (on b3) answers slowly here: the board waits for it long enough to be killed meanwhile.
      cfg.devices = devices.devices.map((d) => (d.id === 'valve3' ? { ...d, timeoutMs: 8000, retries: 0 } : d));
    });
    await converged(c);
  });
  after(async () => {
    await c.stop();
    await devices.close();
    rmSync(stateDir, { recursive: true, force: true });
  });

  test('SIGKILL between the device and the answer: the retry is IDEMPOTENCY_UNKNOWN, never a second run', async () => {
    const valve = devices.sims.valve;
    const post = () => outcome(fetch(`${c.boards[0]!.url}/cgi-bin/devices/valve3/open`, { method: 'POST', headers: { 'idempotency-key': 'crash-1' }, signal: AbortSignal.timeout(15_000) }));
    const before = valve.commands;
    valve.faults.delayMs = 4000;
    const first = post();
    await waitFor('the valve received the command', async () => valve.commands === before + 1, 10_000, 5);
    await c.kill('b3');
    valve.faults.delayMs = 0;
    const a = await first;
    assert.ok(a.status === 0 || a.status >= 500, `the first attempt failed with the board: ${a.status} ${a.text}`);
    c.start('b3');
    await converged(c);
    const retry = await retryUntil(409, post, 15_000);
    assert.match(retry.text, /IDEMPOTENCY_UNKNOWN/);
    assert.equal(valve.commands, before + 1, 'the device ran it once');
  });
});
