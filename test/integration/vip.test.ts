// The floating cluster address with the real `ip` and `arping`, inside a private network
// namespace (`unshare -rn`): no packet can leave it.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { test } from 'node:test';

const probe = spawnSync('unshare', ['-rn', 'sh', '-c', 'command -v arping && command -v ip'], { encoding: 'utf8' });
const available = probe.status === 0;

test('VIP: claim, re-announce, release; wait on a duplicate holder then take over; remove a stale address at boot', {
  skip: !available && !process.env.CI ? 'needs unshare, ip and arping (CI installs them)' : false,
}, () => {
  assert.ok(available, `unshare/ip/arping unavailable: ${probe.stderr}`);
  const r = spawnSync('unshare', ['-rn', process.execPath, '--import', 'tsx', resolve(import.meta.dirname, 'vip-netns.ts')], {
    encoding: 'utf8',
    timeout: 60_000,
    cwd: resolve(import.meta.dirname, '../..'),
  });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /vip-netns ok/);
});
