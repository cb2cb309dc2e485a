// The rehearsal's stage config is the live one spread with a few values replaced and frozen again
// (stageConfig and dialledBoards, node/http/rehearsal.ts). The code V8 compiles on the stage is kept for the live board only if
// both have the same hidden classes; a stage of other shapes had its code dropped at the takeover.
// V8's %HaveSameMap needs --allow-natives-syntax, so the check runs in a child process.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { test } from 'node:test';

const CONFIG = resolve(import.meta.dirname, '../../shared/config.ts');
const REHEARSAL = resolve(import.meta.dirname, '../../node/http/rehearsal.ts');

const check = `
import { parseConfig } from ${JSON.stringify(CONFIG)};
import { dialledBoards, stageConfig } from ${JSON.stringify(REHEARSAL)};
const same = new Function('a', 'b', 'return %HaveSameMap(a, b)');
const raw = () => ({
  cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' },
  boards: [{ id: 'b1', address: '127.0.0.1' }, { id: 'b2', address: '127.0.0.1', httpPort: 8082, udpPort: 5052 }],
  auth: { disabled: true },
});
const live = parseConfig(raw());
const stage = stageConfig(live, live.boards[1]);
const dialled = dialledBoards(stage, 9);
const pushed = parseConfig(raw());
console.log(JSON.stringify({
  config: same(live, stage), cluster: same(live.cluster, stage.cluster), limits: same(live.limits, stage.limits),
  board: same(live.boards[1], stage.boards[0]), boards: same(live.boards, stage.boards), dialled: same(live.boards[0], dialled[1]),
  pushed: same(live, pushed) && same(live.cluster, pushed.cluster) && same(live.boards[0], pushed.boards[0]),
  frozen: Object.isFrozen(stage.cluster) && Object.isFrozen(stage.boards) && Object.isFrozen(dialled[0]),
  unlike: same(Object.freeze({ a: 1 }), Object.freeze({ ...{ a: 1 } })),
}));
`;

test('a stage spread from the live config and frozen again has the live hidden classes', () => {
  const r = spawnSync(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '-e', check], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  const got = JSON.parse(r.stdout) as Record<string, boolean>;
  assert.equal(got.unlike, false, 'V8 gives a frozen literal and a frozen copy different shapes (else this test proves nothing)');
  assert.deepEqual(got, { config: true, cluster: true, limits: true, board: true, boards: true, dialled: true, pushed: true, frozen: true, unlike: false });
});
