// Three boards on a LAN of network namespaces inside `unshare -rnm`: real subnet broadcast, a real
// floating address with gratuitous ARP, a pulled and replugged master cable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

const probe = spawnSync('unshare', ['-rnm', 'sh', '-c', 'command -v arping && command -v ip'], { encoding: 'utf8' });
const available = probe.status === 0;

test('broadcast mode and the VIP on a namespace LAN: pull the master cable, the VIP moves, replug leaves one holder', { skip: !available && !process.env.CI ? 'needs unshare, ip and arping (CI installs them)' : false }, () => {
  assert.ok(available, `unshare/ip/arping unavailable: ${probe.stderr}`);
  const r = spawnSync('unshare', ['-rnm', process.execPath, '--import', 'tsx', resolve(import.meta.dirname, 'lan-driver.ts')], { encoding: 'utf8', timeout: 120_000, cwd: resolve(import.meta.dirname, '../..') });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /lan ok/);
  process.stdout.write(`# ${r.stdout.trim()}\n`);
});
