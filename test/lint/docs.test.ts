// Documentation checks, run by `npm run lint` (not behaviour: the tests in test/unit and beyond are).
// The reference pages are held to the code they describe: the error table, the route table, the
// README's example config and the demo's suggested lines.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { tryLines } from '../../dev/demo.ts';
import { hashPassword } from '../../node/auth/password.ts';
import { parseConfig } from '../../shared/config.ts';
import { ERRORS, type ErrorCode } from '../../shared/errors.ts';
import { ROUTES } from '../../shared/routes.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const read = (f: string) => readFileSync(resolve(ROOT, f), 'utf8');
const README = read('README.md');
const DOCS = readdirSync(resolve(ROOT, 'docs')).filter((f) => f.endsWith('.md'));

test('docs/errors.md has every error code with its status, and marks those another board may answer', () => {
  const page = read('docs/errors.md');
  for (const code of Object.keys(ERRORS) as ErrorCode[]) {
    const e = ERRORS[code];
    const row = new RegExp(`^\\| \`${code}\` \\| (\\d+) \\| (.*) \\|$`, 'm').exec(page);
    assert.ok(row, `docs/errors.md lacks ${code}`);
    assert.equal(Number(row[1]), e.status, `${code}'s status`);
    assert.equal(row[2]!.includes('*another board*'), 'retry' in e && e.retry === 'board', `${code}: the another-board mark`);
  }
});

const WHO = {
  board: 'the board asked',
  master: 'the master (another board passes it on)',
  dispatched: 'the least-connected board, via the master',
  device: 'a board the device is attached to, via the master',
} as const;
/** docs/http-api.md's route table, as the route table renders. */
const routeTable = (): string =>
  `| method | path | who may call | who answers | what |\n|---|---|---|---|---|\n${ROUTES.map((r) => `| ${r.method} | \`${r.path}\` | ${r.caller} | ${WHO[r.answers]} | ${r.summary}${r.adapts ? ' (content adaptation applies)' : ''} |`).join('\n')}`;

test('docs/http-api.md lists every route, as the route table has it', () => {
  const page = read('docs/http-api.md');
  const m = /<!-- routes -->\n([\s\S]*?)\n<!-- \/routes -->/.exec(page);
  assert.ok(m, 'the routes markers');
  assert.equal(m[1], routeTable(), `paste this table between the markers:\n${routeTable()}`);
});

test('the README is a guide of at most 300 lines, and every page it and docs/ link to exists', () => {
  assert.ok(README.split('\n').length <= 300, `README has ${README.split('\n').length} lines`);
  for (const [f, text] of [['README.md', README], ...DOCS.map((d) => [`docs/${d}`, read(`docs/${d}`)])] as const) {
    assert.doesNotMatch(text, /\.\.\/shared\/|SPEC §/, `${f} links outside the repository`);
    for (const m of text.matchAll(/\]\(([^)#]+)\)/g)) {
      if (/^https?:/.test(m[1]!)) continue;
      const target = f.startsWith('docs/') ? join(ROOT, 'docs', m[1]!) : join(ROOT, m[1]!);
      assert.ok(existsSync(target), `${f} links ${m[1]}, which does not exist`);
    }
  }
});

test("the README's configs are valid: the five-minute cluster as it stands, the first device in a cluster", async () => {
  const blocks = [...README.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!.replace(/^ {3}/gm, '')) as Record<string, unknown>);
  assert.equal(blocks.length, 2);
  const five = blocks[0]!;
  const key = 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4';
  const hash = await hashPassword('a-password-1');
  const withSecrets = JSON.parse(
    JSON.stringify(five)
      .replace(/"0{64}"/, `"${key}"`)
      .replace('"HASH"', JSON.stringify(hash)),
  );
  const cfg = parseConfig(withSecrets);
  assert.deepEqual(
    cfg.boards.map((b) => b.id),
    ['b1', 'b2'],
  );
  const device = blocks[1]!;
  parseConfig({
    cluster: { key },
    boards: ['ews1', 'ews2', 'ews3'].map((id, i) => ({ id, address: '127.0.0.1', httpPort: 8000 + i, udpPort: 5000 + i })),
    auth: { disabled: true },
    devices: [device],
  });
});

test("the README lists the demo's suggested lines exactly as the demo prints them", () => {
  for (const line of tryLines('http://127.0.0.1:8081', true)) assert.ok(README.includes(`\n${line}\n`), `README lacks: ${line}`);
});
