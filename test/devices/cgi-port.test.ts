// A CGI program with a `port` (cgi.programs.NAME.port) on a real pty, beside the board's own
// poller of the same device: the port worker lends the port to the program between its own
// exchanges. A tally device counts INC commands; the example program examples/cgi/tally.sh adds
// one and reads the count, the poller reads the count. Interleaved bytes would show as a wrong
// count, an answer the other side cannot parse, or a device error.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CounterSimulator } from '../../dev/simulators/line-devices.ts';
import { DeviceManager } from '../../node/devices/device-manager.ts';
import { openRealPort } from '../../node/devices/serial-line.ts';
import type { Program } from '../../node/exec/cgi-programs.ts';
import { programCgi } from '../../node/exec/program-cgi.ts';
import type { IdempotentExecutor } from '../../node/idempotency/idempotent-exec.ts';
import { silentLogger } from '../../node/log.ts';
import { Cancel } from '../../shared/cancel.ts';
import { programTarget } from '../../shared/cgi.ts';
import { parseConfig } from '../../shared/config.ts';
import { type PtyPair, ptyPair, ptyWire } from './pty.ts';

const KEY = 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4';
const TALLY = fileURLToPath(new URL('../../examples/cgi/tally.sh', import.meta.url));
const ALTERNATIONS = 500;

describe('a program lent its port, with the poller running', () => {
  let pty: PtyPair;
  let dev: Awaited<ReturnType<typeof ptyWire>>;
  let sim: CounterSimulator;
  let m: DeviceManager;
  let cfg: ReturnType<typeof parseConfig>;
  const errors: string[] = [];
  before(async () => {
    pty = await ptyPair();
    dev = await ptyWire(pty.b);
    sim = new CounterSimulator('\n');
    sim.attach(dev.wire);
    cfg = parseConfig({
      cluster: { key: KEY },
      boards: [{ id: 'b1', address: '127.0.0.1' }],
      devices: [
        {
          id: 'tally',
          driver: 'line',
          attach: [{ board: 'b1', port: pty.a }],
          eol: '\n',
          ok: '^OK',
          timeoutMs: 500,
          retries: 0,
          pollMs: 100,
          points: { n: { query: 'N?', parse: '^OK n=(\\d+)' } },
          actions: { inc: { send: 'INC' } },
        },
      ],
      cgi: { programs: { 'tally.sh': { port: pty.a, timeoutMs: 5000 } } },
      limits: { serialBackoffMaxMs: 200 },
    });
    m = new DeviceManager(cfg.devices, 0, openRealPort, silentLogger, { queueMax: cfg.limits.serialQueueMax, backoffMaxMs: cfg.limits.serialBackoffMaxMs });
    m.on('snapshot', (s) => {
      if (s.error) errors.push(s.error);
    });
    m.start();
    await new Promise<void>((resolve) => m.worker(pty.a)!.line.once('online', resolve));
  });
  after(async () => {
    m.stop();
    await dev.close();
    await pty.kill();
  });

  const run = async (method: 'GET' | 'POST') => {
    const program: Program = { name: 'tally.sh', file: TALLY, hash: '', unsafe: undefined };
    const url = '/cgi-bin/tally.sh';
    const x = { method, url, headers: { host: '127.0.0.1:8080' }, body: Buffer.alloc(0), cls: 'control', level: 5, origin: 'client' as const, signal: new Cancel() };
    const idem = undefined as unknown as IdempotentExecutor; // unkeyed: never used
    const out = await programCgi(cfg, cfg.boards[0]!, program, cfg.cgi.programs['tally.sh']!, programTarget(url)!, x, idem, silentLogger, m.worker(pty.a));
    return { status: out.status, json: JSON.parse(out.body) as { count: number } };
  };

  test(`${ALTERNATIONS} program runs alternating with the poller's reads: every count exact, no exchange garbled`, async () => {
    const w = m.worker(pty.a)!;
    const lendsBefore = w.lends;
    const reads: number[] = [];
    for (let i = 1; i <= ALTERNATIONS; i++) {
      // The program and a poller read asked for at once: the worker serves them one after the other.
      const [prog, read] = await Promise.all([run('POST'), m.read('tally', 'scheduled')]);
      assert.deepEqual([prog.status, prog.json.count], [200, i], `run ${i}: the program counted exactly`);
      reads.push(Number(read.result.n));
    }
    assert.equal(sim.count, ALTERNATIONS, 'the device saw every INC once');
    assert.equal(w.lends - lendsBefore, ALTERNATIONS);
    assert.ok(
      reads.every((n, k) => n === k || n === k + 1),
      'each poller read saw the count before or after the program of its turn',
    );
    assert.deepEqual(errors, [], 'no device error: no garbled or lost exchange');
    assert.equal(m.snapshots()[0]!.online, true, 'the device never looked offline to the panel');
    const get = await run('GET');
    assert.equal(get.json.count, ALTERNATIONS);
  });
});

test('a line stopped while its port is lent out ends the loan: the job settles, the port stays closed', { timeout: 10_000 }, async () => {
  const pty = await ptyPair();
  const cfg = parseConfig({
    cluster: { key: KEY },
    boards: [{ id: 'b1', address: '127.0.0.1' }],
    devices: [{ id: 'v', driver: 'line', attach: [{ board: 'b1', port: pty.a }], eol: '\n', ok: '^OK', pollMs: 0, points: { p: { query: 'P?', parse: '^OK (\\d+)' } }, actions: {} }],
  });
  const m = new DeviceManager(cfg.devices, 0, openRealPort, silentLogger, { queueMax: 4, backoffMaxMs: 200 });
  m.start();
  try {
    const w = m.worker(pty.a)!;
    await new Promise<void>((resolve) => w.line.once('online', resolve));
    // Stopped once the program is done, while the port is being opened again.
    const lent = w.lend('control', async () => {
      setImmediate(() => m.stop());
      return 'ran';
    });
    assert.equal(await lent, 'ran');
    assert.equal(w.line.online, false);
    assert.equal(w.line.lent, false);
  } finally {
    m.stop();
    await pty.kill();
  }
});
