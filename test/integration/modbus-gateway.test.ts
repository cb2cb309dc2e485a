// The cluster's Modbus TCP gateway on real boards (loopback), a pymodbus TCP server as the
// device (reached by b2 only) and a pymodbus client as the HMI: reads through the master, a unit
// that is not configured (exception 10), a write refused while writes are off (exception 1), then
// on: an FC16 write seen in the server's datastore and in the audit log with the client's address,
// sent again with the same transaction after no answer: run once. The device's board down: 11 at once.

import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { converged, freePorts, httpGet, makeCluster, metric, type TestCluster, waitFor } from './harness.ts';

const PY = '/usr/bin/python3'; // Debian's python3 has python3-pymodbus
const PEERS = resolve(import.meta.dirname, '../peers');

/** A pymodbus client: send a JSON command, get its JSON answer. */
function hmi(port: number): { ask(cmd: object): Promise<Record<string, unknown>>; stop(): void } {
  const py = spawn(PY, [`${PEERS}/pymodbus_client.py`, '127.0.0.1', String(port)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  const waiting: Array<(l: string) => void> = [];
  createInterface({ input: py.stdout! }).on('line', (l) => {
    const w = waiting.shift();
    if (w) w(l);
    else lines.push(l);
  });
  const next = () => new Promise<string>((r) => (lines.length > 0 ? r(lines.shift()!) : waiting.push(r)));
  void next(); // {"ready": true}
  return {
    ask: async (cmd) => {
      py.stdin!.write(`${JSON.stringify(cmd)}\n`);
      return JSON.parse(await next()) as Record<string, unknown>;
    },
    stop: () => py.kill(),
  };
}

describe('the Modbus TCP gateway', () => {
  let c: TestCluster;
  let server: ChildProcess;
  let written = '';
  let gw = 0;
  let client: ReturnType<typeof hmi>;

  before(async () => {
    const [devicePort, gatewayPort] = await freePorts(2);
    gw = gatewayPort!;
    server = spawn(PY, [`${PEERS}/pymodbus_tcp_server.py`, String(devicePort), 'tcp'], { stdio: ['ignore', 'pipe', 'inherit'] });
    server.stdout!.on('data', (d) => (written += d));
    c = await makeCluster(3, (cfg) => {
      cfg.devices = [
        {
          id: 'meter',
          driver: 'modbus-tcp',
          host: '127.0.0.1',
          port: devicePort,
          attach: [{ board: 'b2' }],
          gatewayUnit: 3,
          timeoutMs: 500,
          pollMs: 0,
          points: { kwh: { holding: 0, type: 'float32' } },
        },
      ];
      cfg.gateway = { modbusTcp: { port: gw, allow: ['127.0.0.1/32'], writes: true } };
    });
    await converged(c);
    await waitFor('the meter online', async () => (JSON.parse((await httpGet(`${c.boards[0]!.url}/api/devices`)).text) as Array<{ online: boolean }>)[0]?.online === true, 15_000);
    client = hmi(gw);
  });
  after(async () => {
    client?.stop();
    server?.kill('SIGKILL');
    await c?.stop();
  });

  test('reads reach the device through the master; an unknown unit is exception 10', async () => {
    assert.deepEqual(await client.ask({ op: 'read', unit: 3, address: 0, count: 2 }), { ok: true, registers: [0x42f6, 0xe979] });
    assert.deepEqual(await client.ask({ op: 'read', unit: 9, address: 0, count: 2 }), { ok: false, exception: 10 });
    assert.deepEqual(await client.ask({ op: 'read', unit: 3, address: 40, count: 1 }), { ok: false, exception: 2 }, "the device's own exception, passed through");
  });

  test('an FC16 write runs once, is in the datastore and in the audit log with the client address', async () => {
    const at = written.length;
    assert.deepEqual(await client.ask({ op: 'write', unit: 3, address: 8, values: [16416, 0] }), { ok: true });
    await waitFor('the write in the datastore', async () => written.slice(at).includes('{"set": 8, "values": [16416, 0]}'));
    await waitFor('the write in the audit log', async () => {
      const log = JSON.parse((await httpGet(`${c.boards[0]!.url}/api/log`)).text) as Array<{ kind: string; subject: string; text: string }>;
      return log.some((e) => e.kind === 'command' && e.subject === 'meter' && /^modbus FC16 2 from 8 from 127\.0\.0\.1 → 200 on b2/.test(e.text));
    });
    assert.equal(written.slice(at).match(/"set"/g)?.length, 1);
  });

  test('the same write sent again in the same transaction (no answer came) is answered from its record, not run twice; a client outside allow is closed unread', async () => {
    const at = written.length;
    // FC16 at 8: two registers, 0x3FC0 0x0000 (1.5), transaction 777, unit 3.
    const frame = Buffer.from([0x03, 0x09, 0, 0, 0, 11, 3, 16, 0, 8, 0, 2, 4, 0x3f, 0xc0, 0, 0]);
    const send = (localAddress = '127.0.0.1', bytes = frame) =>
      new Promise<Buffer>((res) => {
        const chunks: Buffer[] = [];
        const sock = net.connect({ host: '127.0.0.1', port: gw, localAddress }, () => sock.write(bytes));
        sock.on('data', (d) => {
          chunks.push(d);
          if (Buffer.concat(chunks).length >= 12) sock.end();
        });
        sock.on('close', () => res(Buffer.concat(chunks)));
        sock.on('error', () => {});
      });
    const echo = [0x03, 0x09, 0, 0, 0, 6, 3, 16, 0, 8, 0, 2];
    assert.deepEqual([...(await send())], echo);
    assert.deepEqual([...(await send())], echo);
    // A marker after them (FC6: 99 at 10, a new transaction): the device serves in order, so a second
    // write of the frame would show in its datastore before the marker does.
    assert.equal((await send('127.0.0.1', Buffer.from([0x03, 0x0a, 0, 0, 0, 6, 3, 6, 0, 10, 0, 99]))).length, 12);
    await waitFor('the marker in the datastore', async () => written.slice(at).includes('{"set": 10, "values": [99]}'));
    assert.ok(written.slice(at).includes('{"set": 8, "values": [16320, 0]}'), 'the write in the datastore');
    assert.equal(written.slice(at).match(/"set"/g)?.length, 2, 'written once (beside the marker)');
    assert.equal((await send('127.0.0.2')).length, 0, 'closed unread');
    assert.equal(await metric(c.boards[0]!.url, 'ews_gateway_connections_refused_total', { reason: 'not allowed' }), 1);
  });

  test("the device's only board down: exception 11 at once, not a hang", async () => {
    await c.kill('b2');
    await converged(c, ['b1', 'b3'], ['b1', 'b3']);
    const t0 = Date.now();
    assert.deepEqual(await client.ask({ op: 'read', unit: 3, address: 0, count: 2 }), { ok: false, exception: 11 });
    assert.ok(Date.now() - t0 < 1000, `answered in ${Date.now() - t0} ms`);
  });
});
