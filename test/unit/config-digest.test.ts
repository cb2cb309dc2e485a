// A config's identity (shared/config-digest.ts): one digest per content.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseConfig } from '../../shared/config.ts';
import { canonicalJson, configDigest } from '../../shared/config-digest.ts';

const KEY = 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4';
const raw = () => ({ cluster: { name: 'p', key: KEY }, boards: [{ id: 'b1', address: '127.0.0.1' }], auth: { disabled: true } });

test('the digest is one per content: key order and spacing do not change it, any value does', () => {
  const a = raw();
  const reordered = { auth: { disabled: true }, boards: [{ address: '127.0.0.1', id: 'b1' }], cluster: { key: KEY, name: 'p' } };
  assert.equal(canonicalJson(a), canonicalJson(reordered));
  assert.equal(configDigest(a), configDigest(JSON.parse(JSON.stringify(reordered, null, 4))));
  assert.match(configDigest(a), /^[0-9a-f]{64}$/);
  assert.notEqual(configDigest(a), configDigest({ ...a, comment: 'x' }));
  assert.notEqual(configDigest(a), configDigest({ ...a, boards: [{ id: 'b1', address: '127.0.0.2' }] }), 'a nested value');
  const cfg = parseConfig({ ...a, configVersion: 7 });
  assert.equal(cfg.configVersion, 7);
  assert.equal(cfg.digest, configDigest({ ...a, configVersion: 7 }));
  assert.equal(parseConfig(a).configVersion, 0);
  assert.throws(() => parseConfig({ ...a, configVersion: -1 }), /configVersion/);
});
