// The cluster plane's thread goes first: every other thread of the process is made nicer, the
// plane's keeps its value. Real threads, read back from /proc.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { favourThread, ownThreadId, REQUEST_NICE_STEP } from '../../node/cluster-plane/thread-priority.ts';

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
