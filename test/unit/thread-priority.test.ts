// The cluster plane's thread goes first: every other thread of the process is made nicer, the
// plane's keeps its value. Real threads, read back from /proc.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { favourThread, ownThreadId, quotaCores, REQUEST_NICE_STEP } from '../../node/cluster-plane/thread-priority.ts';

/** A thread's nice value (field 19 of its stat line). */
const niceOf = (tid: number) => Number(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]);

test('every thread but the one kept is made nicer by the step; the kept one is untouched', async () => {
  const w = new Worker(
    "const { parentPort } = require('node:worker_threads'); const { readlinkSync } = require('node:fs'); parentPort.postMessage(Number(readlinkSync('/proc/thread-self').split('/').pop())); setInterval(() => {}, 1000);",
    { eval: true },
  );
  try {
    const planeTid = await new Promise<number>((resolve) => w.once('message', resolve));
    const mine = ownThreadId()!;
    assert.equal(mine, process.pid, 'the main thread is the process');
    assert.notEqual(planeTid, mine);
    const before = new Map(readdirSync('/proc/self/task').map((t) => [Number(t), niceOf(Number(t))]));
    const changed = favourThread(planeTid);
    assert.ok(changed >= 1);
    assert.equal(niceOf(planeTid), before.get(planeTid), 'the kept thread keeps its nice value');
    assert.equal(niceOf(mine), Math.min(19, before.get(mine)! + REQUEST_NICE_STEP), 'the request thread yields');
    for (const [tid, n] of before) if (tid !== planeTid) assert.equal(niceOf(tid), Math.min(19, n + REQUEST_NICE_STEP), `thread ${tid}`);
  } finally {
    await w.terminate();
  }
});

test("a cgroup's CPU quota in cores: v1 and v2, none when unlimited or unreadable", () => {
  const files: Record<string, string> = {
    '/sys/fs/cgroup/cpu/ews-bench/b1/cpu.cfs_quota_us': '20000\n',
    '/sys/fs/cgroup/cpu/ews-bench/b1/cpu.cfs_period_us': '100000\n',
    '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1\n',
    '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n',
    '/sys/fs/cgroup/system.slice/ews.service/cpu.max': '50000 100000\n',
    '/sys/fs/cgroup/free/cpu.max': 'max 100000\n',
  };
  const read = (p: string) => files[p];
  assert.equal(quotaCores('4:memory:/x\n1:cpu,cpuacct:/ews-bench/b1\n0::/\n', read), 0.2);
  assert.equal(quotaCores('1:cpu:/\n', read), undefined, 'the root group: unlimited');
  assert.equal(quotaCores('0::/system.slice/ews.service\n', read), 0.5, 'cgroup v2');
  assert.equal(quotaCores('0::/free\n', read), undefined);
  assert.equal(quotaCores('1:cpu:/gone\n', read), undefined, 'nothing to read');
});

test('keepOnOneCpu: every thread of the process, on the one CPU it ran on', () => {
  const script = `const m = await import(${JSON.stringify(new URL('../../node/cluster-plane/thread-priority.ts', import.meta.url).href)});
const cpu = m.keepOnOneCpu();
const fs = await import('node:fs');
const lists = fs.readdirSync('/proc/self/task').map((t) => /Cpus_allowed_list:\\s*(\\S+)/.exec(fs.readFileSync('/proc/self/task/' + t + '/status', 'utf8'))[1]);
console.log(JSON.stringify({ cpu, lists }));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const { cpu, lists } = JSON.parse(r.stdout) as { cpu: number; lists: string[] };
  assert.ok(Number.isInteger(cpu));
  assert.ok(lists.length > 1);
  assert.deepEqual([...new Set(lists)], [String(cpu)]);
});
