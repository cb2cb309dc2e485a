// The boot epoch must survive a power cut: the new value is written to a temporary file, fsynced,
// renamed over the old one, and the directory fsynced. A power cut cannot be staged here, so the
// test watches the system calls themselves (strace, Debian package strace) and checks their order.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './harness.ts';

test('boot epoch: write, fsync, rename, fsync the directory, in that order', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ews-durable-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const trace = join(dir, 'trace.txt');
  const script = `import(${JSON.stringify(join(ROOT, 'node/state/boot-epoch.ts'))}).then((m) => { m.nextBootEpoch(${JSON.stringify(dir)}, 'b1', 5); m.nextBootEpoch(${JSON.stringify(dir)}, 'b1', 5); })`;
  const r = spawnSync('strace', ['-f', '-y', '-o', trace, '-e', 'trace=openat,write,fsync,fdatasync,rename,renameat,renameat2', process.execPath, '--import', 'tsx', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  assert.equal(r.error, undefined, 'strace runs (Debian package strace)');
  assert.equal(r.status, 0, r.stderr);
  const file = join(dir, 'b1.epoch');
  // Each call as a word: open-tmp, write-tmp, fsync-tmp, rename, open-dir, fsync-dir.
  const steps = readFileSync(trace, 'utf8')
    .split('\n')
    .filter((l) => l.includes(dir) && !l.includes('trace.txt') && !l.includes('ENOENT'))
    .map((l) => {
      const call = /^\d+\s+(\w+)\(/.exec(l)?.[1] ?? '?';
      if (call.startsWith('rename')) return l.includes(`"${file}.tmp"`) && l.includes(`"${file}"`) ? 'rename' : `rename?`;
      const what = l.includes(`${file}.tmp`) ? 'tmp' : l.includes(`<${dir}>`) || l.includes(`"${dir}"`) ? 'dir' : 'other';
      return `${call}-${what}`;
    })
    .filter((s) => !s.startsWith('openat-other'));
  const once = ['openat-tmp', 'write-tmp', 'fsync-tmp', 'rename', 'openat-dir', 'fsync-dir'];
  assert.deepEqual(steps, [...once, ...once], 'each boot: the value reaches the disk before it replaces the old one, and the rename before the boot goes on');
  assert.equal(readFileSync(file, 'utf8'), '6', 'the second boot counted on from the first');
});
