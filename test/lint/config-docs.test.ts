// docs/config.md against the parser: every key the parser accepts is named on the page, every
// limit has its row, and every default and range the page's tables give for a key of an object
// section is the parser's own (probed by parsing configs, not read from the source). Run by `npm run lint`.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { LIMIT_DEFAULTS, parseConfig } from '../../shared/config.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const DOC = readFileSync(join(ROOT, 'docs/config.md'), 'utf8');
const KEY = 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4';
const base = () => ({ cluster: { key: KEY }, boards: [{ id: 'b1', address: '127.0.0.1' }], auth: { disabled: true }, stateDir: false }) as Record<string, unknown>;

/** The key lists the parser checks objects against: the array after each noUnknown, obj, unknownKeys and `common`. */
function acceptedKeys(): string[] {
  const keys = new Set<string>(Object.keys(LIMIT_DEFAULTS));
  const dir = join(ROOT, 'shared');
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.ts'))) {
    const text = readFileSync(join(dir, f), 'utf8');
    for (const m of text.matchAll(/(?:noUnknown\(|r\.obj\(|unknownKeys\(|const common = |const KINDS[^=]*= )[^[]*?\[([^\]]*)\]/g)) {
      for (const k of m[1]!.matchAll(/'([A-Za-z][\w]*)'/g)) keys.add(k[1]!);
    }
  }
  return [...keys];
}

interface Row {
  key: string;
  def: string;
  range: string;
}
const rows: Row[] = [...DOC.matchAll(/^\| `([^`]+)` \| ([^|]*) \| ([^|]*) \|/gm)].map((m) => ({ key: m[1]!, def: m[2]!.trim(), range: m[3]!.trim() }));

test('docs/config.md names every key the parser accepts', () => {
  const keys = acceptedKeys();
  assert.ok(keys.length > 100, `found ${keys.length} keys in the parser`);
  const missing = keys.filter((k) => !new RegExp(`\`[^\`\\n]*\\b${k}\\b[^\`\\n]*\``).test(DOC));
  assert.deepEqual(missing, []);
  for (const k of Object.keys(LIMIT_DEFAULTS))
    assert.ok(
      rows.some((r) => r.key === `limits.${k}`),
      `limits.${k} has no row`,
    );
});

/** A value at `path` (dots) in a raw config, creating the sections on the way. */
function withValue(path: string, value: unknown): Record<string, unknown> {
  const raw = base();
  const parts = path.split('.');
  let o = raw;
  for (const p of parts.slice(0, -1)) {
    o[p] ??= {};
    o = o[p] as Record<string, unknown>;
  }
  o[parts.at(-1)!] = value;
  if (path.startsWith('notify.email.')) Object.assign(o, { host: 'localhost', from: 'a@b', to: ['c@d'], ...{ [parts.at(-1)!]: value } });
  return raw;
}
function problems(raw: unknown): string[] {
  try {
    parseConfig(raw);
    return [];
  } catch (e) {
    return (e as Error).message.split('\n').slice(1);
  }
}
const objectKey = (k: string) => /^[a-zA-Z]+(\.[a-zA-Z]+)+$/.test(k);

test("every range the page gives for a section's key is the parser's", () => {
  const checked: string[] = [];
  for (const r of rows) {
    const m = /^(-?[\d.]+)–(-?[\d.]+)$/.exec(r.range);
    if (!m || !objectKey(r.key)) continue;
    const said = `between ${m[1]} and ${m[2]}|from ${m[1]} to ${m[2]}`;
    for (const far of [-1e15, 1e15]) {
      const p = problems(withValue(r.key, far)).filter((x) => x.startsWith(`${r.key}:`));
      assert.ok(p.length === 1 && new RegExp(said).test(p[0]!), `${r.key} = ${far}: the page says ${r.range}, the parser says ${p.join('; ') || 'nothing'}`);
    }
    checked.push(r.key);
  }
  assert.ok(checked.length >= 45, `${checked.length} ranges checked`);
});

test("every plain default the page gives for a section's key is the parser's", () => {
  const cfg = parseConfig({ ...base(), qos: { admission: {}, adaptation: {}, quota: {} }, notify: { email: { host: 'localhost', from: 'a@b', to: ['c@d'] } } }) as unknown as Record<string, unknown>;
  const at = (path: string) => path.split('.').reduce<unknown>((o, p) => (o as Record<string, unknown> | undefined)?.[p], cfg);
  let checked = 0;
  for (const r of rows) {
    if (!objectKey(r.key) || !/^-?[\d.]+$/.test(r.def)) continue;
    const v = at(r.key);
    if (typeof v !== 'number') continue;
    assert.equal(v, Number(r.def), `${r.key}: the page says ${r.def}, the parser ${v}`);
    checked++;
  }
  for (const [k, v] of Object.entries(LIMIT_DEFAULTS)) assert.equal(rows.find((r) => r.key === `limits.${k}`)?.def, String(v), `limits.${k}'s default`);
  assert.ok(checked > 40, `${checked} defaults checked`);
});
