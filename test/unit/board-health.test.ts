import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { HealthBook, parseHealth, readTemperature } from '../../node/cluster/board-health.ts';
import { VERSION } from '../../node/version.ts';
import { PROTOCOL_VERSION } from '../../shared/protocol.ts';

test("the version boards report is package.json's", () => {
  assert.equal(VERSION, (JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string }).version);
});

test('temperature: the hottest thermal zone in °C; none: null', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ews-thermal-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  assert.equal(readTemperature(dir), null);
  for (const [zone, milli] of [
    ['thermal_zone0', '41250'],
    ['thermal_zone1', '55000'],
    ['cooling_device0', '99000'],
  ] as const) {
    mkdirSync(join(dir, zone));
    writeFileSync(join(dir, zone, 'temp'), `${milli}\n`);
  }
  assert.equal(readTemperature(dir), 55);
  assert.equal(readTemperature(join(dir, 'missing')), null);
});

test('health: sampled for this board, taken from packets for the others, malformed packets refused', () => {
  const book = new HealthBook(3, 0, true, { configVersion: 4, digest: 'a'.repeat(64) }, () => 48.5);
  const own = book.sample();
  assert.equal(own.version, VERSION);
  assert.equal(own.tempC, 48.5);
  assert.equal(own.durable, true);
  assert.equal(own.configVersion, 4);
  assert.equal(own.configHash, 'a'.repeat(64));
  assert.equal(own.protocol, PROTOCOL_VERSION);
  assert.ok(own.rssBytes > 0 && own.cpuPct >= 0 && own.uptimeS >= 0);
  assert.deepEqual(book.get(0), own);
  const theirs = { cpuPct: 12.5, rssBytes: 40e6, uptimeS: 60, version: '0.1.0', tempC: null, at: 1, durable: false, configVersion: 3, configHash: 'b'.repeat(64), protocol: 2 };
  assert.equal(book.apply(1, theirs), true);
  assert.deepEqual(book.get(1), theirs);
  // A board that predates the config fields and the protocol field: unknown (null), the rest is kept.
  const { configVersion: _v, configHash: _h, protocol: _p, ...older } = theirs;
  assert.equal(book.apply(2, older), true);
  assert.deepEqual(book.get(2), { ...older, configVersion: null, configHash: null, protocol: null });
  for (const bad of [
    { ...theirs, cpuPct: -1 },
    { ...theirs, version: 7 },
    { ...theirs, tempC: 'hot' },
    { ...theirs, rssBytes: undefined },
    { ...theirs, durable: 'yes' },
    { ...theirs, configHash: 'not-a-hash' },
    { ...theirs, configVersion: -1 },
    { ...theirs, protocol: 0 },
    { ...theirs, protocol: '2' },
  ])
    assert.equal(parseHealth(bad as Record<string, unknown>), undefined);
  assert.equal(book.apply(0, theirs), false, 'nobody speaks for this board');
  assert.equal(book.apply(7, theirs), false);
});
