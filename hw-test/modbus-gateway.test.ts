// The Modbus TCP gateway on the namespace LAN with a real VIP: a pymodbus TCP server on the LAN as
// the device (reached by ews2 and ews3), a pymodbus client as the HMI polling the VIP every 50 ms.
// The master's cable is pulled: the next master serves the gateway on the VIP and the client's
// reads resume within a second of the takeover; a write answered before the pull and sent again
// after it (in the same transaction, as a client that had no answer does) runs once.

import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { buildLan, type Lan, request, settled, until, VIP } from './lan.ts';

const PY = '/usr/bin/python3';
const PEERS = resolve(import.meta.dirname, '../test/peers');
const DEVICE_PORT = 1502;
const GATEWAY_PORT = 502;

/** One MBAP frame to the VIP's gateway, on a fresh connection: the answer's bytes ('' when none within 2 s). */
function mbap(frame: Buffer): Promise<Buffer> {
  return new Promise((res) => {
    const chunks: Buffer[] = [];
    const s = net.connect({ host: VIP, port: GATEWAY_PORT }, () => s.write(frame));
    const done = () => res(Buffer.concat(chunks));
    s.setTimeout(2000, () => s.destroy());
    s.on('data', (d) => {
      chunks.push(d);
      if (Buffer.concat(chunks).length >= 12) s.end();
    });
    s.on('close', done);
    s.on('error', () => {});
  });
}

describe('the Modbus gateway across a master pull', () => {
  let lan: Lan;
  let server: ChildProcess;
  let written = '';

  before(async () => {
    // The device listens on the test's end of the LAN (10.231.0.2), which the boards reach through the switch.
    server = spawn(PY, [`${PEERS}/pymodbus_tcp_server.py`, String(DEVICE_PORT), 'tcp', '0.0.0.0'], { stdio: ['ignore', 'pipe', 'inherit'] });
    server.stdout!.on('data', (d) => (written += d));
    const meter = {
      id: 'meter',
      driver: 'modbus-tcp',
      host: '10.231.0.2',
      port: DEVICE_PORT,
      attach: [{ board: 'ews2' }, { board: 'ews3' }],
      gatewayUnit: 3,
      timeoutMs: 500,
      points: { kwh: { holding: 0, type: 'float32' } },
    };
    lan = await buildLan({ devices: [meter], gateway: { modbusTcp: { port: GATEWAY_PORT, allow: ['10.231.0.0/24'], writes: true } } });
    assert.equal((await settled(lan, lan.ids, 20_000)).master, 'ews1');
    await until('the meter online', async () => (JSON.parse((await request(VIP, '/api/devices')).body) as Array<{ online: boolean }>)[0]?.online === true, 20_000);
  });
  after(async () => {
    server?.kill('SIGKILL');
    await lan?.close();
  });

  test('pull the master: reads resume on the VIP within a second of the takeover; a write sent again after it runs once', async () => {
    // FC16 at 8: 1.5 as a float32 (0x3FC0 0x0000), transaction 4242, unit 3.
    const write = Buffer.from([0x10, 0x92, 0, 0, 0, 11, 3, 16, 0, 8, 0, 2, 4, 0x3f, 0xc0, 0, 0]);
    const echo = [0x10, 0x92, 0, 0, 0, 6, 3, 16, 0, 8, 0, 2];
    assert.deepEqual([...(await mbap(write))], echo);
    await until('the write in the datastore', async () => written.includes('{"set": 8, "values": [16320, 0]}'));

    const hmi = spawn(PY, [`${PEERS}/pymodbus_client.py`, VIP, String(GATEWAY_PORT), '1', '0'], { stdio: ['pipe', 'pipe', 'ignore'] });
    const reads: Array<{ ok: boolean; t: number }> = [];
    createInterface({ input: hmi.stdout! }).on('line', (l) => {
      const r = JSON.parse(l) as { ok?: boolean; t?: number };
      if (r.t !== undefined) reads.push({ ok: r.ok === true, t: r.t });
    });
    hmi.stdin!.write(`${JSON.stringify({ op: 'poll', unit: 3, address: 0, count: 2, everyMs: 50, seconds: 8 })}\n`);
    try {
      await until('the HMI polling', async () => reads.filter((r) => r.ok).length >= 10, 10_000);
      const pulledAt = Date.now();
      lan.pull('ews1');
      const takeover = await until(
        'the VIP on another board',
        // The pulled board may still have it on its dead link: what counts is a board the LAN reaches.
        async () => (lan.vipHolders().some((id) => id !== 'ews1') ? Date.now() : undefined),
        10_000,
        5,
      );
      await until('a read after the takeover', async () => reads.some((r) => r.ok && r.t > takeover), 5000);
      const resumed = reads.find((r) => r.ok && r.t > takeover)!.t;
      const failed = reads.filter((r) => !r.ok).length;
      process.stdout.write(
        `# takeover ${takeover - pulledAt} ms after the pull; reads resumed ${resumed - takeover} ms after it; ${failed} reads failed meanwhile (at ${reads.filter((r) => !r.ok).map((r) => r.t - pulledAt)} ms after the pull; last good read ${Math.max(...reads.filter((r) => r.ok && r.t < takeover).map((r) => r.t)) - pulledAt})\n`,
      );
      assert.ok(resumed - takeover <= 1000, `reads resumed ${resumed - takeover} ms after the takeover`);

      // The client never saw the answer (say): the same frame again, to the new master.
      const at = written.length;
      assert.deepEqual([...(await mbap(write))], echo);
      // A marker after it (FC6: 99 at 10, a new transaction): the device serves in order, so a write
      // of the frame sent again would show in its datastore before the marker does.
      assert.equal((await mbap(Buffer.from([0x10, 0x93, 0, 0, 0, 6, 3, 6, 0, 10, 0, 99]))).length, 12);
      await until('the marker in the datastore', async () => written.slice(at).includes('{"set": 10, "values": [99]}'));
      assert.equal(written.slice(at).match(/"set"/g)?.length, 1, 'answered from its record: not written again (the marker alone)');
    } finally {
      hmi.kill();
      lan.plug('ews1');
    }
  });
});
