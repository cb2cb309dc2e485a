// `npm test`: every suite, one file at a time, under a TMPDIR of its own that is removed when the
// run ends, so nothing the tests or the processes they start write to a temp dir stays in /tmp.
// What was still there is named (a test should remove what it makes; this is the net under it).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dir = mkdtempSync(join(tmpdir(), 'ews-test-'));
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', ...process.argv.slice(2)], { stdio: 'inherit', env: { ...process.env, TMPDIR: dir } });
const left = readdirSync(dir);
rmSync(dir, { recursive: true, force: true });
if (left.length > 0) process.stdout.write(`# the tests left ${left.length} entries in their TMPDIR (removed): ${left.slice(0, 12).join(' ')}${left.length > 12 ? ' …' : ''}\n`);
process.exit(r.status ?? 1);
