// Device control through a real 3-board cluster (simulated devices on serialport's mock binding).

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { demoDevices } from '../../dev/demo.ts';
import { converged, getJson, makeCluster, type TestCluster, waitFor } from './harness.ts';

interface Answer {
  status: number;
  board: string | null;
  json: Record<string, any>;
} // any: JSON answers read freely in assertions
async function call(url: string, method = 'GET', body?: unknown): Promise<Answer> {
  const r = await fetch(url, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(10_000) });
  return { status: r.status, board: r.headers.get('x-ews-board'), json: (await r.json()) as Record<string, any> }; // any: see above
}

describe('devices through the cluster', () => {
  let c: TestCluster;
  let u: (i: number) => string;
  before(async () => {
    c = await makeCluster(
      3,
      (cfg) => {
        cfg.devices = demoDevices(['b1', 'b2', 'b3']);
        // The paper's rule (the master serves its share): a device on the master and one more board
        // is spread over both. The default, 'spill', keeps the master's CPU for forwarding first.
        Object.assign(cfg.cluster as object, { masterWork: 'share' });
      },
      { args: ['--simulate-devices'] },
    );
    u = (i) => c.boards[i]!.url;
    await converged(c);
    await waitFor('devices online', async () => (await getJson<Array<{ online: boolean }>>(`${u(0)}/api/devices`)).every((d) => d.online));
  });
  after(() => c.stop());

  test("control runs only on the device's board, from any board; the device changes", async () => {
    const r = await call(`${u(2)}/cgi-bin/devices/pump1`);
    assert.equal(r.status, 200);
    assert.equal(r.board, 'b2');
    assert.deepEqual(Object.keys(r.json.result).sort(), ['overheated', 'running', 'speed', 'temp']);
    const s = await call(`${u(0)}/cgi-bin/devices/pump1/start`, 'POST');
    assert.deepEqual([s.status, s.json.ok, s.json.device, s.json.action, s.json.board], [200, true, 'pump1', 'start', 'b2']);
    assert.deepEqual(s.json.result, { running: true });
    await call(`${u(0)}/cgi-bin/devices/pump1/set-speed`, 'POST', { value: 2400 });
    const after = await call(`${u(1)}/cgi-bin/devices/pump1`);
    assert.equal(after.json.result.running, true);
    assert.equal(after.json.result.speed, 2400);
    const v = await call(`${u(0)}/cgi-bin/devices/valve3/set`, 'POST', { value: 30 });
    assert.equal(v.board, 'b3');
  });

  test('every device is read by its board every pollMs, unasked: the panel shows values with a fresh updatedAt', async () => {
    type Dev = { id: string; online: boolean; points: Record<string, unknown>; updatedAt: number | null };
    const since = Date.now();
    // Nobody reads the valve in this test: its board polls it (default every 2 s).
    const valve = await waitFor('valve polled', async () => {
      const d = (await getJson<Dev[]>(`${u(0)}/api/devices`)).find((x) => x.id === 'valve3')!;
      return d.updatedAt !== null && d.updatedAt >= since && 'position' in d.points ? d : undefined;
    });
    assert.equal(valve.online, true);
  });

  test("a line command is followed by a read: every board shows the valve's new position", async () => {
    assert.equal((await call(`${u(0)}/cgi-bin/devices/valve3/set`, 'POST', { value: 40 })).status, 200);
    await waitFor(
      'position 40 shown on another board',
      async () => (await getJson<Array<{ id: string; points: { position?: number } }>>(`${u(1)}/api/devices`)).find((x) => x.id === 'valve3')?.points.position === 40,
    );
  });

  test('a device on two boards is served by the least-connected of them, never a third', async () => {
    const rs = await Promise.all(Array.from({ length: 12 }, () => call(`${u(2)}/cgi-bin/devices/room`)));
    const boards = new Set(rs.map((r) => r.board));
    assert.ok(rs.every((r) => r.status === 200));
    assert.deepEqual([...boards].sort(), ['b1', 'b2']);
  });

  test('bad input: 400 with a message; unknown device or action: 404; wrong method: 405', async () => {
    const big = await call(`${u(0)}/cgi-bin/devices/pump1/set-speed`, 'POST', { value: 3001 });
    assert.equal(big.status, 400);
    assert.match(big.json.error.message, /above the maximum 3000/);
    assert.equal((await call(`${u(0)}/cgi-bin/devices/pump1/set-speed`, 'POST', { value: 'fast' })).status, 400);
    assert.equal((await call(`${u(0)}/cgi-bin/devices/pump1/set-speed`, 'POST')).status, 400);
    assert.equal((await call(`${u(0)}/cgi-bin/devices/pump1/start`, 'POST', { value: 1 })).status, 400);
    const notJson = await fetch(`${u(0)}/cgi-bin/devices/pump1/set-speed`, { method: 'POST', body: '{nope' });
    assert.equal(notJson.status, 400);
    const nd = await call(`${u(1)}/cgi-bin/devices/nope`);
    assert.deepEqual([nd.status, nd.json.error.code], [404, 'NOT_FOUND']);
    assert.equal((await call(`${u(1)}/cgi-bin/devices/pump1/fly`, 'POST')).status, 404);
    assert.equal((await call(`${u(1)}/cgi-bin/devices/pump1/start`, 'GET')).status, 405);
  });

  test("/api/devices on a board with no devices shows every device's last readings", async () => {
    await call(`${u(0)}/cgi-bin/devices/valve3`);
    const list = await waitFor('readings reach b1', async () => {
      const l = await getJson<Array<{ id: string; boards: string[]; online: boolean; points: Record<string, unknown>; updatedAt: number | null }>>(`${u(0)}/api/devices`);
      return l.every((d) => d.updatedAt !== null) ? l : undefined;
    });
    assert.deepEqual(
      list.map((d) => [d.id, d.boards, d.online]),
      [
        ['pump1', ['b2'], true],
        ['valve3', ['b3'], true],
        ['room', ['b1', 'b2'], true],
      ],
    );
    assert.equal(list[0]!.points.speed, 2400);
  });
});

describe('a device on a real pty behind a board', () => {
  test('unplugged: 503 with Retry-After and offline in /api/devices; replugged: back by itself', async () => {
    const { ptyPair, ptyWire } = await import('../devices/pty.ts');
    const { PumpSimulator } = await import('../../dev/simulators/pump.ts');
    const pty = await ptyPair();
    let dev = await ptyWire(pty.b);
    const sim = new PumpSimulator(1).attach(dev.wire);
    const c = await makeCluster(2, (cfg) => {
      const pump = (demoDevices(['b1', 'b2']) as Array<Record<string, unknown>>)[0]!;
      cfg.devices = [{ ...pump, simulate: undefined, attach: [{ board: 'b2', port: pty.a }] }];
      cfg.limits = { serialBackoffMaxMs: 200 };
    });
    try {
      await converged(c);
      const url = `${c.boards[0]!.url}/cgi-bin/devices/pump1`;
      await waitFor('pump answers', async () => (await fetch(url)).status === 200);
      await dev.close();
      await pty.kill();
      const r = await waitFor('offline answer', async () => {
        const x = await fetch(url);
        return x.status === 503 ? x : undefined;
      });
      assert.equal(r.headers.get('retry-after'), '2');
      assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'DEVICE_OFFLINE');
      await waitFor('listed offline', async () => (await getJson<Array<{ online: boolean }>>(`${c.boards[0]!.url}/api/devices`))[0]!.online === false);
      await pty.restart();
      dev = await ptyWire(pty.b);
      sim.attach(dev.wire);
      await waitFor('back by itself', async () => (await fetch(url)).status === 200);
      await waitFor('listed online', async () => (await getJson<Array<{ online: boolean }>>(`${c.boards[0]!.url}/api/devices`))[0]!.online === true);
    } finally {
      await c.stop();
      await dev.close();
      await pty.kill();
    }
  });
});
