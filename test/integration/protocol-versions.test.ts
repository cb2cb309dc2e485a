// Two protocol versions in one cluster, as during a rolling upgrade: board b1 runs the previous
// release (protocol 1, built from its commit), b2 and b3 this one. They form one cluster with one
// master and one state table; dispatch runs both ways; IDEM, REVOKE and LOG records cross; a
// keyed command runs once across a handover from the old master to a new one. Once b1 restarts on
// this release the cluster writes the new version. A packet or link two versions apart is refused
// and said in the log. Real board processes (bundles), the valve on a real pty on the old board.

import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LINK_HELLO } from '../../shared/dispatch-frame.ts';
import { createCodec, PROTOCOL_OLDEST, PROTOCOL_VERSION } from '../../shared/protocol.ts';
import { ptyDevices } from '../security/pty-devices.ts';
import { ADMIN, converged, httpGet, login as loginAt, makeCluster, metric, OPERATOR, type TestCluster, testUsers, waitFor } from './harness.ts';
import { buildRelease, PROTOCOL_1_COMMIT } from './previous-release.ts';

describe('protocol N and N-1 in one cluster', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ews-protocols-'));
  let c: TestCluster;
  let devices: Awaited<ReturnType<typeof ptyDevices>>;
  const onPrevious = new Set(['b1']);
  const ids = ['b1', 'b2', 'b3'];
  const u = (id: string) => c.boards.find((b) => b.id === id)!.url;
  const login = (id: string, who = OPERATOR) => loginAt(u(id), who);
  const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
  const view = async (id: string, token: string) =>
    JSON.parse((await httpGet(`${u(id)}/api/cluster`, { headers: bearer(token) })).text) as { master: string | null; boards: Array<{ id: string; health: { protocol?: number | null } | null }> };
  const setValve = (id: string, token: string, key: string) =>
    httpGet(`${u(id)}/cgi-bin/devices/valve3/set`, {
      method: 'POST',
      body: JSON.stringify({ value: 40 }),
      headers: { ...bearer(token), 'content-type': 'application/json', 'idempotency-key': key },
      timeoutMs: 10_000,
    });
  const writing = (id: string) => metric(u(id), 'ews_protocol_writing');

  before(async () => {
    const previous = buildRelease(PROTOCOL_1_COMMIT, join(dir, 'previous'));
    devices = await ptyDevices();
    const users = await testUsers();
    c = await makeCluster(
      3,
      (cfg) => {
        cfg.auth = { users };
        // The valve on the old board: commands to it go over a protocol-1 link, its records leave in protocol-1 packets.
        cfg.devices = devices.devices.map((d) => (d.id === 'valve3' ? { ...d, attach: [{ board: 'b1', port: (d.attach as Array<{ port: string }>)[0]!.port }] } : d));
      },
      { bundle: true, bundleOf: (id) => (onPrevious.has(id) ? previous : undefined) },
    );
    c.headers = bearer(await login('b1'));
    await converged(c);
  });
  after(async () => {
    await c?.stop();
    await devices?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('one master and one state table; the new boards write the old version; dispatch runs both ways; IDEM, REVOKE and LOG cross', async () => {
    const token = await login('b1');
    const v = await converged(c);
    assert.equal(v.master, 'b1', 'the old board, first up, is master');
    for (const id of ['b2', 'b3']) assert.equal(await writing(id), PROTOCOL_OLDEST, `${id} writes protocol ${PROTOCOL_OLDEST}`);
    const seen = await waitFor('the new boards state their protocol in HEALTH', async () => {
      const b = (await view('b1', token)).boards;
      return b.every((x) => x.health) && b;
    });
    assert.deepEqual(
      seen.map((b) => b.health?.protocol ?? null),
      [null, null, null],
      'the old master shows no protocol field (it predates it)',
    );
    // b2 hears b3's HEALTH on its own schedule (a busy b3, rehearsing the master's path after its start, sends it later).
    const fromNew = await waitFor("b2 has every board's HEALTH", async () => {
      const b = (await view('b2', token)).boards;
      return b.every((x) => x.health) && b.map((x) => x.health?.protocol ?? null);
    });
    assert.deepEqual(fromNew, [null, PROTOCOL_VERSION, PROTOCOL_VERSION]);

    // Old master → new board: the pump's command runs on b2 through b1.
    const start = await httpGet(`${u('b1')}/cgi-bin/devices/pump1/start`, { method: 'POST', headers: { ...bearer(token), 'idempotency-key': 'pv-0' }, timeoutMs: 10_000 });
    assert.equal(start.status, 200, start.text);
    assert.equal(start.headers['x-ews-board'], 'b2');

    // A keyed command on the old board, through the old master: runs once.
    const before = devices.sims.valve.commands;
    const first = await setValve('b1', token, 'pv-1');
    assert.equal(first.status, 200, first.text);
    assert.equal(devices.sims.valve.commands, before + 1);

    // A logout on the old board holds on the new ones (REVOKE), the command is in their logbooks (LOG).
    const gone = await login('b1');
    assert.equal((await httpGet(`${u('b1')}/api/logout`, { method: 'POST', headers: bearer(gone) })).status, 200);
    for (const id of ['b2', 'b3']) {
      await waitFor(`${id}: the logout holds`, async () => (await httpGet(`${u(id)}/api/cluster`, { headers: bearer(gone) })).status === 401);
      await waitFor(`${id}: the command in its log`, async () => {
        const log = JSON.parse((await httpGet(`${u(id)}/api/log`, { headers: bearer(token) })).text) as Array<{ kind: string; subject: string | null }>;
        return log.some((e) => e.kind === 'command' && e.subject === 'valve3');
      });
    }

    // Hand the master role to a new board; the same key through it is replayed from the old board's IDEM record.
    const admin = await login('b1', ADMIN);
    const h = await httpGet(`${u('b1')}/api/cluster/handover?to=b2`, { method: 'POST', headers: bearer(admin), timeoutMs: 10_000 });
    assert.equal(h.status, 200, h.text);
    await converged(c, ids, ids, (x) => x.master === 'b2');
    const again = await setValve('b2', token, 'pv-1');
    assert.equal(again.status, 200, again.text);
    assert.equal(again.headers['idempotent-replayed'], 'true', 'replayed, not run again');
    assert.equal(devices.sims.valve.commands, before + 1, 'the valve was driven once');

    // New master → old board: a fresh command runs on b1 over a protocol-1 link; its log and a logout reach the old board.
    const second = await setValve('b2', token, 'pv-2');
    assert.equal(second.status, 200, second.text);
    assert.equal(devices.sims.valve.commands, before + 2);
    const gone2 = await login('b2');
    assert.equal((await httpGet(`${u('b2')}/api/logout`, { method: 'POST', headers: bearer(gone2) })).status, 200);
    await waitFor('b1: the logout from a new board holds', async () => (await httpGet(`${u('b1')}/api/cluster`, { headers: bearer(gone2) })).status === 401);
    assert.equal(await metric(u('b1'), 'ews_link_dropped_total'), 0, 'the old board refused no link');
  });

  test('a packet or a link two versions apart is refused, and said in the log', async () => {
    const b2 = c.boards.find((b) => b.id === 'b2')!;
    const codec = createCodec({ key: Buffer.from(c.key, 'hex'), cluster: 'test', boards: 3, packetBytesMax: 1400 });
    const packet = codec.encode({ type: 'JOIN', sender: 2, term: 0, body: {} }, { epoch: Date.now(), counter: 1 });
    packet[2] = PROTOCOL_VERSION - 2;
    const droppedBefore = await metric(b2.url, 'ews_udp_dropped_total', { reason: 'version' });
    const sock = createSocket('udp4');
    await new Promise<void>((r) => sock.send(packet, b2.udpPort, '127.0.0.1', () => r()));
    sock.close();
    await waitFor('the packet dropped as a version apart', async () => (await metric(b2.url, 'ews_udp_dropped_total', { reason: 'version' })) > droppedBefore);
    await waitFor('said in the log', async () => /protocol version this release does not speak/.test(c.logs.get('b2') ?? ''));
    const linkBefore = await metric(b2.url, 'ews_link_dropped_total', { reason: 'version' });
    await new Promise<void>((resolve) => {
      const s = net.connect(b2.httpPort, '127.0.0.1', () => s.write(Buffer.of(LINK_HELLO, PROTOCOL_VERSION + 1)));
      s.on('close', () => resolve());
      s.on('error', () => {});
    });
    assert.equal(await metric(b2.url, 'ews_link_dropped_total', { reason: 'version' }), linkBefore + 1);
  });

  test('once the old board runs this release, every board writes the new version', async () => {
    await c.kill('b1', 'SIGTERM');
    onPrevious.delete('b1');
    c.start('b1');
    await converged(c);
    await waitFor(`every board writes protocol ${PROTOCOL_VERSION}`, async () => {
      for (const id of ids) if ((await writing(id)) !== PROTOCOL_VERSION) return false;
      return true;
    });
  });
});
