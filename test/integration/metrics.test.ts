// /metrics passes promtool's checks (names with base units, counters typed as counters, label
// escaping) on a board running the whole QoS pipeline.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { makeCluster, waitFor } from './harness.ts';

test('promtool check metrics is clean with every QoS controller on', async () => {
  const c = await makeCluster(1, (cfg) => {
    cfg.classes = [
      { name: 'control', priority: 0, match: [{ pathPrefix: '/cgi-bin/' }], mk: [1, 3], share: 0.6 },
      { name: 'browse', priority: 1, match: [{ pathPrefix: '/' }], mk: [1, 3], share: 0.4 },
    ];
    cfg.qos = { scheduler: 'weakly-hard', periodMs: 100, admission: {}, adaptation: {}, quota: {} };
  });
  try {
    const url = c.boards[0]!.url;
    await waitFor('a request served', async () => (await fetch(`${url}/cgi-bin/echo?ms=1`)).ok);
    await fetch(`${url}/echo?ms=1`);
    const text = await waitFor('qos metrics', async () => {
      const t = await (await fetch(`${url}/metrics`)).text();
      return t.includes('ews_weakly_hard_critical_function') && t.includes('ews_adaptation_level') ? t : undefined;
    });
    const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    assert.equal(r.error, undefined, 'promtool runs (Debian package prometheus)');
    assert.equal(`${r.stdout}${r.stderr}`.trim(), '', 'no promtool findings');
    assert.equal(r.status, 0);
    for (const name of ['ews_admission_probability', 'ews_quota_slots', 'ews_inflight_requests', 'ews_event_loop_delay_seconds', 'ews_requests_total'])
      assert.ok(text.includes(`${name}`), `${name} on /metrics`);
    assert.ok(!/^ews_qos\{/m.test(text), 'no catch-all ews_qos metric');
  } finally {
    await c.stop();
  }
});
