// The CGI runner with real programs (sh, python3): what they get, what they answer, and that a
// timeout ends the program's whole process group.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { scanPrograms } from '../../node/exec/cgi-programs.ts';
import { runCgi } from '../../node/exec/cgi-runner.ts';
import { cgiEnvironment } from '../../shared/cgi.ts';

const dir = mkdtempSync(join(tmpdir(), 'ews-cgi-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const program = (name: string, text: string) => {
  const f = join(dir, name);
  writeFileSync(f, text);
  chmodSync(f, 0o755);
  return f;
};
const env = cgiEnvironment({
  method: 'POST',
  target: { name: 'env.sh', pathInfo: '/x', query: 'a=1' },
  headers: [
    ['X-Test', 'yes'],
    ['Cookie', 'secret'],
  ],
  bodyBytes: 5,
  contentType: 'text/plain',
  clientAddress: '192.168.1.7',
  serverName: 'ews1',
  serverPort: 8081,
  https: false,
  user: { name: 'olga', role: 'operator', via: 'cookie' },
  board: 'ews2',
  idempotencyKey: undefined,
  devicePort: undefined,
  serverSoftware: 'ews/test',
});
const run = (file: string, over: { timeoutMs?: number; outputBytesMax?: number; env?: Record<string, string> } = {}) =>
  runCgi({ file, env: over.env ?? env, body: Buffer.from('hello'), timeoutMs: over.timeoutMs ?? 5000, outputBytesMax: over.outputBytesMax ?? 1 << 20, cwd: dir }).done;

test('a sh program gets the meta-variables and the body on stdin, and nothing else', async () => {
  const f = program('env.sh', '#!/bin/sh\nprintf "Content-Type: text/plain\\n\\n"\nenv | sort\necho "BODY=$(cat)"\n');
  const o = await run(f);
  assert.equal(o.kind, 'answer');
  if (o.kind !== 'answer' || o.answer.kind !== 'document') throw new Error(JSON.stringify(o));
  const lines = o.answer.body.toString().trim().split('\n');
  const got = Object.fromEntries(lines.filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  assert.equal(got.BODY, 'hello');
  delete got.BODY;
  // sh adds PWD (and may add SHLVL, _): the rest is exactly what ews gave.
  for (const k of ['PWD', 'SHLVL', '_', 'OLDPWD']) delete got[k];
  assert.deepEqual(got, env);
  assert.equal(got.HTTP_COOKIE, undefined);
});

test('a python3 program answers JSON with a Status of its own', async () => {
  const f = program(
    'meter.py',
    '#!/usr/bin/python3\nimport json, os, sys\nbody = sys.stdin.read()\nprint("Status: 201 Made")\nprint("Content-Type: application/json")\nprint()\nprint(json.dumps({"path": os.environ["PATH_INFO"], "len": len(body)}))\n',
  );
  const o = await run(f);
  if (o.kind !== 'answer' || o.answer.kind !== 'document') throw new Error(JSON.stringify(o));
  assert.equal(o.answer.status, 201);
  assert.deepEqual(JSON.parse(o.answer.body.toString()), { path: '/x', len: 5 });
});

test('no header block is a bad answer; output past the bound stops the program', async () => {
  const none = await run(program('none.sh', '#!/bin/sh\necho hello\n'));
  assert.ok(none.kind === 'answer' && none.answer.kind === 'bad');
  const big = await run(program('big.sh', '#!/bin/sh\nprintf "Content-Type: text/plain\\n\\n"\nhead -c 200000 /dev/zero\n'), { outputBytesMax: 10_000 });
  assert.equal(big.kind, 'too-large');
});

test('a timeout ends the program and its background child (the whole group); stderr is kept, bounded', async () => {
  const pidFile = join(dir, 'child.pid');
  const f = program('hang.sh', `#!/bin/sh\nsleep 100 &\necho $! > ${pidFile}\necho "waiting" >&2\nsleep 100\n`);
  const o = await run(f, { timeoutMs: 300 });
  assert.equal(o.kind, 'timeout');
  assert.ok(o.kind === 'timeout' && o.stderr.includes('waiting'));
  const child = Number(readFileSync(pidFile, 'utf8'));
  const alive = () => {
    try {
      process.kill(child, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (let i = 0; i < 100 && alive(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(alive(), false, 'the sleep 100 & child is gone');
});

test("ews's own environment never reaches a program: only the environment given", async () => {
  process.env.EWS_TEST_SECRET = 'cluster-key-like';
  try {
    const f = program('leak.sh', '#!/bin/sh\nprintf "Content-Type: text/plain\\n\\n"\nif [ -n "$EWS_TEST_SECRET" ]; then echo leaked; else echo none; fi\n');
    const o = await run(f);
    assert.ok(o.kind === 'answer' && o.answer.kind === 'document');
    assert.equal(o.answer.body.toString().trim(), 'none');
  } finally {
    delete process.env.EWS_TEST_SECRET;
  }
});

test("a board's programs: executable regular files by name, a content hash, reserved names refused, unsafe ones marked when ews is root", () => {
  const d = mkdtempSync(join(tmpdir(), 'ews-cgidir-'));
  try {
    const put = (name: string, mode: number, text = '#!/bin/sh\n') => {
      writeFileSync(join(d, name), text);
      chmodSync(join(d, name), mode);
    };
    put('read.sh', 0o755);
    put('same.sh', 0o755);
    put('notes.txt', 0o644);
    put('devices', 0o755);
    put('open.sh', 0o775, '#!/bin/sh\necho open\n');
    mkdirSync(join(d, 'sub'));
    const warned: string[] = [];
    const log = { warn: (_o: unknown, m: string) => warned.push(m) } as unknown as Parameters<typeof scanPrograms>[1];
    const asUser = scanPrograms(d, log, false);
    assert.deepEqual([...asUser.keys()], ['open.sh', 'read.sh', 'same.sh']);
    assert.equal(asUser.get('read.sh')!.hash, asUser.get('same.sh')!.hash, 'the same content, the same hash');
    assert.notEqual(asUser.get('read.sh')!.hash, asUser.get('open.sh')!.hash);
    assert.equal(asUser.get('open.sh')!.unsafe, undefined, 'ews not root: no StrictModes rule');
    assert.ok(warned.some((m) => /devices is the name of a built-in handler/.test(m)));
    if (process.getuid?.() === 0) {
      const asRoot = scanPrograms(d, log, true);
      assert.match(asRoot.get('open.sh')!.unsafe!, /writable by someone other than root/);
      assert.equal(asRoot.get('read.sh')!.unsafe, undefined);
    }
    assert.equal(scanPrograms(join(d, 'missing'), log, false).size, 0);
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});
