// Runs inside `unshare -rnm`: builds a LAN of network namespaces (a bridge in "sw", one namespace
// per board, this process attached as the client), runs three boards with real subnet broadcast
// and a floating address, pulls and replugs the master's cable. Traffic stays inside namespaces
// this process created.
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const ip = (...a: string[]) => execFileSync('ip', a, { encoding: 'utf8' });
const VIP = '10.231.0.100';

execFileSync('mount', ['-t', 'tmpfs', 'tmpfs', '/run']);
ip('netns', 'add', 'sw');
ip('-n', 'sw', 'link', 'add', 'br0', 'type', 'bridge');
ip('-n', 'sw', 'link', 'set', 'br0', 'up');
const ids = ['b1', 'b2', 'b3'];
ids.forEach((id, i) => {
  ip('netns', 'add', id);
  ip('link', 'add', 'eth0', 'netns', id, 'type', 'veth', 'peer', 'name', `p-${id}`, 'netns', 'sw');
  ip('-n', 'sw', 'link', 'set', `p-${id}`, 'master', 'br0');
  ip('-n', 'sw', 'link', 'set', `p-${id}`, 'up');
  ip('-n', id, 'addr', 'add', `10.231.0.${11 + i}/24`, 'brd', '10.231.0.255', 'dev', 'eth0');
  ip('-n', id, 'link', 'set', 'eth0', 'up');
  ip('-n', id, 'link', 'set', 'lo', 'up');
});
// This process is the client, on the same LAN.
ip('link', 'add', 'eth-c', 'type', 'veth', 'peer', 'name', 'p-c', 'netns', 'sw');
ip('-n', 'sw', 'link', 'set', 'p-c', 'master', 'br0');
ip('-n', 'sw', 'link', 'set', 'p-c', 'up');
ip('addr', 'add', '10.231.0.2/24', 'dev', 'eth-c');
ip('link', 'set', 'eth-c', 'up');

const cfg = {
  cluster: { name: 'lan', key: randomBytes(32).toString('hex'), broadcast: '10.231.0.255', udpPort: 5050, heartbeatMs: 50, tmaxMs: 300, tthresholdMs: 300, staggerMs: 100, vip: { address: `${VIP}/24`, interface: 'eth0' } },
  boards: ids.map((id, i) => ({ id, address: `10.231.0.${11 + i}`, httpPort: 8080 })),
  auth: { disabled: true },
};
const file = join(mkdtempSync(join(tmpdir(), 'ews-lan-')), 'c.json');
writeFileSync(file, JSON.stringify(cfg));
const procs: ChildProcess[] = ids.map((id) =>
  spawn('ip', ['netns', 'exec', id, process.execPath, '--import', 'tsx', join(ROOT, 'node/cli.ts'), 'start', '--config', file, '--board', id], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, EWS_LOG_LEVEL: 'error' } }),
);

const get = async (host: string, path: string) => {
  const r = await fetch(`http://${host}:8080${path}`, { signal: AbortSignal.timeout(2000) });
  return { status: r.status, board: r.headers.get('x-ews-board'), json: (await r.json()) as Record<string, unknown> };
};
async function until<T>(what: string, probe: () => Promise<T | undefined | false>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
    } catch { /* not yet */ }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
const holders = () => ids.filter((id) => ip('-n', id, '-4', 'addr', 'show', 'dev', 'eth0').includes(`${VIP}/24`));
const masterSeenBy = async (host: string) => (await get(host, '/api/cluster')).json.master as string | null;

try {
  await until('cluster over broadcast', async () => {
    for (let i = 0; i < 3; i++) {
      const v = (await get(`10.231.0.${11 + i}`, '/api/cluster')).json as { master: string; boards: Array<{ runstate: number }> };
      if (v.master !== 'b1' || v.boards.some((b) => b.runstate !== 1)) return false;
    }
    return true;
  });
  await until('b1 holds the VIP', async () => holders().join() === 'b1');
  const r1 = await get(VIP, '/cgi-bin/echo?ms=1');
  assert.equal(r1.status, 200);

  // Pull the master's cable at the switch.
  const pulledAt = Date.now();
  ip('-n', 'sw', 'link', 'set', 'p-b1', 'down');
  await until('b2 is master', async () => (await masterSeenBy('10.231.0.13')) === 'b2');
  await until('a control request via the VIP succeeds', async () => (await get(VIP, '/cgi-bin/echo?ms=1')).status === 200);
  const failoverMs = Date.now() - pulledAt;
  assert.ok(holders().includes('b2'));

  // Replug: b1 hears the newer master, steps down, lets the address go.
  ip('-n', 'sw', 'link', 'set', 'p-b1', 'up');
  await until('one master and one VIP holder after replug', async () => (await masterSeenBy('10.231.0.11')) === 'b2' && holders().join() === 'b2');
  const v = (await get('10.231.0.12', '/api/cluster')).json as { boards: Array<{ id: string; runstate: number; linknum: number }> };
  await until('b1 running again', async () => ((await get('10.231.0.12', '/api/cluster')).json as typeof v).boards[0]!.runstate === 1);
  process.stdout.write(`lan ok: failover to first successful request via the VIP ${failoverMs} ms\n`);
} finally {
  for (const p of procs) p.kill('SIGTERM');
}
