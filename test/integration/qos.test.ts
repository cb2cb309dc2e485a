// The QoS pipeline in a running cluster: schedulers, admission, content adaptation, quotas.

import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { converged, makeCluster, metric, type TestCluster, waitFor } from './harness.ts';

const get = async (url: string) => {
  const r = await fetch(url, { signal: AbortSignal.timeout(15_000) });
  return { status: r.status, tree: r.headers.get('x-ews-level'), retry: r.headers.get('retry-after'), body: await r.text() };
};

describe('QoS in a running cluster', () => {
  const clusters: TestCluster[] = [];
  after(() => Promise.all(clusters.map((c) => c.stop())));

  test("weakly-hard scheduling: classes' µ-patterns and critical functions on /metrics; requests served", async () => {
    const c = await makeCluster(2, (cfg) => {
      cfg.qos = { scheduler: 'weakly-hard' };
      cfg.classes = [
        { name: 'control', priority: 0, match: [{ pathPrefix: '/cgi-bin/' }], mk: [3, 5], targetMs: 50 },
        { name: 'browse', priority: 1, match: [{ pathPrefix: '/' }], mk: [1, 5], targetMs: 50 },
      ];
    });
    clusters.push(c);
    await converged(c);
    for (let i = 0; i < 6; i++) assert.equal((await get(`${c.boards[0]!.url}/cgi-bin/echo?ms=80`)).status, 200); // each misses its 50 ms target
    // (3,5) after misses: CF = met(last 4) − 3 + 1 falls to 0 or below: panic mode for control.
    await waitFor('control in panic', async () => (await metric(c.boards[0]!.url, 'ews_weakly_hard_critical_function', { class: 'control' })) <= 0);
    assert.equal(await metric(c.boards[0]!.url, 'ews_weakly_hard_critical_function', { class: 'browse' }), 1 + 4 - 1, 'browse untouched: all met');
  });

  test('admission control: a burst beyond the target queue is held in the reserve and refused explicitly after N periods', async () => {
    const c = await makeCluster(1, (cfg) => {
      cfg.qos = { scheduler: 'priority', periodMs: 200, admission: { targetQueue: 2, q0: 0.5, q1: -0.2, refuseAfterPeriods: 2 } };
      cfg.limits = { inFlightPerBoardMax: 1 };
    });
    clusters.push(c);
    await converged(c);
    const base = c.boards[0]!.url;
    // Teach the controller the load first: the first period admits everything, later ones follow target_in.
    await Promise.all(Array.from({ length: 4 }, () => get(`${base}/echo?ms=100`)));
    await waitFor('a period passed', async () => (await metric(base, 'ews_admission_predicted_arrivals', { class: 'browse' })) > 0);
    const rs = await Promise.all(Array.from({ length: 40 }, () => get(`${base}/echo?ms=150`)));
    const ok = rs.filter((r) => r.status === 200).length;
    const refused = rs.filter((r) => r.status === 503);
    assert.ok(ok >= 2, `${ok} served`);
    assert.ok(refused.length > 0, 'some refused');
    assert.equal(ok + refused.length, 40, 'every request answered: served or refused, never left to time out');
    for (const r of refused) {
      assert.ok(Number(r.retry) >= 1);
      assert.match(r.body, /QUEUE_FULL|QUEUE_TIMEOUT/);
    }
    assert.ok((await metric(base, 'ews_requests_total', { class: 'browse', outcome: 'refused' })) > 0, 'refused from the reserve queue after its periods');
  });

  test('content adaptation: under load pages are served from lighter content levels (X-EWS-Level), control never', async () => {
    const c = await makeCluster(1, (cfg) => {
      // a = 40 ms per request: 40 pages/s already means U = 1.6 against the 0.85 target.
      cfg.qos = { scheduler: 'priority', periodMs: 200, adaptation: { levels: 3, targetUtilization: 0.85, k: 1.5, a: 0.04, b: 0 } };
    });
    clusters.push(c);
    await converged(c);
    const base = c.boards[0]!.url;
    const trees = new Map<string, number>();
    const until = Date.now() + 3000;
    while (Date.now() < until) {
      const rs = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          fetch(`${base}/`, { headers: { 'x-forwarded-for': `10.9.0.${i}` } }).then(async (r) => {
            await r.text();
            return `${r.status}:${r.headers.get('x-ews-level') ?? '-'}`;
          }),
        ),
      );
      for (const r of rs) trees.set(r, (trees.get(r) ?? 0) + 1);
      const cgi = await get(`${base}/cgi-bin/echo?ms=0`);
      assert.equal(cgi.status, 200);
      assert.equal(cgi.tree, '3', 'control requests are never adapted: always the full level');
    }
    const G = await metric(base, 'ews_adaptation_level');
    assert.ok(G < 3, `G fell to ${G}`);
    assert.ok(
      [...trees.keys()].some((k) => k === '200:1' || k === '200:2' || k === '503:-'),
      `pages degraded or refused: ${[...trees.entries()].join(' ')}`,
    );
  });
});

describe('classification applied live', () => {
  test('SIGHUP: new match rules take effect without a restart; a broken config is refused and the old one kept', async () => {
    const { writeFileSync, readFileSync } = await import('node:fs');
    const c = await makeCluster(1);
    try {
      await converged(c);
      const base = c.boards[0]!.url;
      const cls = async () => (await fetch(`${base}/echo?ms=0`, { headers: { 'x-client': 'scada' } })).headers.get('x-ews-class');
      assert.equal(await cls(), 'browse');
      const cfg = JSON.parse(readFileSync(c.file, 'utf8')) as Record<string, unknown>;
      cfg.classes = [
        { name: 'control', priority: 0, match: [{ pathPrefix: '/cgi-bin/' }, { header: 'x-client=scada' }] },
        { name: 'browse', priority: 1, match: [{ pathPrefix: '/' }] },
      ];
      writeFileSync(c.file, JSON.stringify(cfg));
      c.procs.get('b1')!.kill('SIGHUP');
      await waitFor('reclassified', async () => (await cls()) === 'control');
      writeFileSync(c.file, '{ broken');
      c.procs.get('b1')!.kill('SIGHUP');
      await waitFor('refusal logged', async () => /config reload refused/.test(c.logs.get('b1') ?? ''));
      assert.equal(await cls(), 'control', 'still the last good rules');
    } finally {
      await c.stop();
    }
  });
});

describe('ews calibrate', () => {
  test('measures capacity at several content sizes, fits a and b, writes them into the config', async () => {
    const { spawnSync } = await import('node:child_process');
    const { readFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { ROOT } = await import('./harness.ts');
    const c = await makeCluster(1);
    try {
      await converged(c);
      const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'node/cli.ts'), 'calibrate', '--url', c.boards[0]!.url, '--write', c.file], {
        encoding: 'utf8',
        timeout: 120_000,
        env: { ...process.env, EWS_CALIBRATE_SECONDS: '0.25' },
      });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /a = .* s per request, b = .* s per byte/);
      const cfg = JSON.parse(readFileSync(c.file, 'utf8')) as { qos: { adaptation: { a: number; b: number } } };
      assert.ok(cfg.qos.adaptation.a > 0, `a ${cfg.qos.adaptation.a}`);
      assert.ok(Number.isFinite(cfg.qos.adaptation.b), `b ${cfg.qos.adaptation.b}`);
      const check = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'node/cli.ts'), 'check-config', '--config', c.file], { encoding: 'utf8' });
      assert.equal(check.status, 0, check.stderr);
    } finally {
      await c.stop();
    }
  });
});
