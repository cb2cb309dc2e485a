// Runs inside `unshare -rn` (a private network namespace: nothing here can reach another host).
// Exercises VipManager with the real `ip` and `arping` on a veth pair.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { startCommand, VipManager } from '../../node/cluster-plane/vip.ts';
import { silentLogger } from '../../node/log.ts';
import { Registry } from '../../shared/metrics.ts';

const ip = (...a: string[]) => execFileSync('ip', a, { encoding: 'utf8' });
const has = (dev: string) => ip('-4', 'addr', 'show', 'dev', dev).includes('10.231.0.100/24');
ip('link', 'add', 'v0', 'type', 'veth', 'peer', 'name', 'v1');
ip('link', 'set', 'v0', 'up');
ip('link', 'set', 'v1', 'up');
ip('addr', 'add', '10.231.0.1/24', 'dev', 'v0');

const vip = { address: '10.231.0.100', prefix: 24, interface: 'v0', duplicateCheck: true };
const m = new VipManager(vip, silentLogger, new Registry(), undefined, 50);
await m.claim();
assert.ok(has('v0') && m.held, 'claimed');
await m.claim();
assert.ok(m.held, 'claiming again is harmless');
await m.announce();
await m.release();
assert.ok(!has('v0') && !m.held, 'released');

// Without the duplicate check: claimed at once and announced at once, then again every 200 ms
// (5 gratuitous ARPs in all); the announcements stop the moment the address is let go.
const started: string[][] = [];
const recorder = (f: string, a: string[]) => {
  started.push(a);
  startCommand(f, a);
};
const m3 = new VipManager({ ...vip, duplicateCheck: false }, silentLogger, new Registry(), undefined, 50, 3, recorder);
await m3.claim();
assert.ok(has('v0') && m3.held);
assert.deepEqual(started, [['-U', '-c', '1', '-I', 'v0', '10.231.0.100']], 'the first announcement at once');
for (const deadline = Date.now() + 5000; started.length < 5 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
assert.equal(started.length, 5, 'five over 0.8 s');
const arping = spawnSync('arping', ['-U', '-c', '1', '-I', 'v0', '10.231.0.100'], { encoding: 'utf8' });
assert.equal(arping.status, 0, `the announcement command works here: ${arping.stderr}`);
started.length = 0;
await m3.release();
await m3.claim();
await m3.release();
await new Promise((r) => setTimeout(r, 1000));
assert.equal(started.length, 1, 'released at once: no announcements after');
assert.ok(!has('v0'));

// Another holder answers ARP for the address: the claimer waits, then takes over after its checks.
ip('addr', 'add', '10.231.0.100/24', 'dev', 'v1');
const metrics = new Registry();
const m2 = new VipManager(vip, silentLogger, metrics, undefined, 50, 2);
const t0 = Date.now();
await m2.claim();
assert.ok(!m2.held, 'not while a duplicate answers');
await new Promise<void>((resolve) => {
  const t = setInterval(() => {
    if (m2.held) {
      clearInterval(t);
      resolve();
    }
  }, 20);
});
assert.match(metrics.render(), /ews_vip_errors_total\{step="duplicate"\} 1/);
assert.ok(has('v0'));
await m2.release();

// A board that died holding it: releaseStale at boot removes it.
ip('addr', 'add', '10.231.0.100/24', 'dev', 'v0');
await new VipManager(vip, silentLogger, new Registry()).releaseStale();
assert.ok(!has('v0'), 'stale address removed at boot');
process.stdout.write(`vip-netns ok (${Date.now() - t0} ms for the duplicate path)\n`);
