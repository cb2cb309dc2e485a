// Boards that disagree on the config: each reports the config it runs (version and content hash)
// in its health; /api/cluster shows it per board, and a board whose config differs from the
// master's raises config-mismatch-ID (after CONFIG_MISMATCH_HOLD_MS) on every board, cleared once
// it runs the master's config again. Real boards over real UDP.

import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { CONFIG_MISMATCH_HOLD_MS } from '../../node/operator/alarms.ts';
import { configDigest } from '../../shared/config-digest.ts';
import { converged, getJson, makeCluster, type TestCluster, waitFor } from './harness.ts';

interface Row {
  id: string;
  role: string;
  configVersion: number | null;
  configHash: string | null;
}
interface Alarm {
  id: string;
  active: boolean;
}

let c: TestCluster | undefined;
after(() => c?.stop());

test("a board started with another config is shown and raises config-mismatch; with the master's again it clears", async () => {
  c = await makeCluster(2, (cfg) => {
    cfg.configVersion = 3;
  });
  await converged(c, ['b1', 'b2'], ['b1', 'b2'], (v) => v.master === 'b1');
  const same = JSON.parse(readFileSync(c.file, 'utf8')) as Record<string, unknown>;
  const rows = () => getJson<{ boards: Row[] }>(`${c!.boards[0]!.url}/api/cluster`).then((v) => v.boards);
  const alarm = async () => (await getJson<Alarm[]>(`${c!.boards[0]!.url}/api/alarms`)).find((a) => a.id === 'config-mismatch-b2');
  // Both report the file's hash and version (b2's after its first health packet).
  const agreed = await waitFor('both boards report their config', async () => {
    const r = await rows();
    return r.every((b) => b.configHash !== null) && r;
  });
  assert.deepEqual(
    agreed.map((b) => [b.id, b.configVersion, b.configHash]),
    [
      ['b1', 3, configDigest(same)],
      ['b2', 3, configDigest(same)],
    ],
  );
  assert.equal((await alarm())?.active, false);
  // b2 restarts with a config that differs in one value (its file, edited on that board alone).
  await c.kill('b2', 'SIGTERM');
  const other = { ...same, comment: 'edited on b2 only' };
  writeFileSync(c.file, JSON.stringify(other));
  c.start('b2');
  await waitFor('b2 reports the other config', async () => (await rows()).find((b) => b.id === 'b2')?.configHash === configDigest(other), 20_000);
  const raised = await waitFor('config-mismatch-b2 raised', async () => (await alarm())?.active === true, CONFIG_MISMATCH_HOLD_MS + 15_000, 250);
  assert.ok(raised);
  assert.equal((await getJson<Alarm[]>(`${c.boards[0]!.url}/api/alarms`)).find((a) => a.id === 'config-mismatch-b1')?.active, false, 'the master is the reference');
  // b2 again with the master's config: cleared.
  await c.kill('b2', 'SIGTERM');
  writeFileSync(c.file, JSON.stringify(same));
  c.start('b2');
  await waitFor('config-mismatch-b2 cleared', async () => (await alarm())?.active === false, 30_000, 250);
});
