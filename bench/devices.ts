// Device benchmarks: the control round trip through a 3-board cluster to a simulated device,
// and device operations per second on one port (a real pty through socat, and the mock binding).
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { demoDevices } from '../dev/demo.ts';
import { simulatedPortFactory } from '../dev/simulated-ports.ts';
import { PumpSimulator } from '../dev/simulators/pump.ts';
import { DeviceManager } from '../node/devices/device-manager.ts';
import { openRealPort } from '../node/devices/serial-line.ts';
import { silentLogger } from '../node/log.ts';
import { parseConfig } from '../shared/config.ts';
import { BOARD_NODE_FLAGS } from '../shared/node-flags.ts';
import { freePorts, waitFor } from '../test/integration/harness.ts';

const ROOT = resolve(import.meta.dirname, '..');
const N = Number(process.env.BENCH_DEVICE_REQUESTS ?? 500);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return +s[Math.min(s.length - 1, Math.floor(p * s.length))]!.toFixed(2);
};

async function roundTrips(url: string, n: number, method = 'GET'): Promise<{ p50Ms: number; p99Ms: number; errors: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const lat: number[] = [];
  let errors = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const status = await new Promise<number>((res) => {
      const req = http.request(url, { method, agent }, (r) => {
        r.resume();
        r.on('end', () => res(r.statusCode ?? 0));
      });
      req.on('error', () => res(0));
      req.end();
    });
    if (status === 200) lat.push(performance.now() - t0);
    else errors++;
  }
  agent.destroy();
  return { p50Ms: pct(lat, 0.5), p99Ms: pct(lat, 0.99), errors };
}

async function clusterRoundTrip() {
  const ports = await freePorts(6);
  const boards = [0, 1, 2].map((i) => ({ id: `b${i + 1}`, address: '127.0.0.1', httpPort: ports[2 * i]!, udpPort: ports[2 * i + 1]! }));
  const file = join(mkdtempSync(join(tmpdir(), 'ews-bench-dev-')), 'c.json');
  writeFileSync(
    file,
    JSON.stringify({
      cluster: { name: 'bench', key: randomBytes(32).toString('hex'), heartbeatMs: 100, tmaxMs: 500, tthresholdMs: 500 },
      boards,
      devices: demoDevices(boards.map((b) => b.id)),
      auth: { disabled: true },
      stateDir: false, // memory only, said so: a bench run leaves nothing behind
    }),
  );
  const procs = boards.map((b) =>
    spawn(process.execPath, [...BOARD_NODE_FLAGS, '--import', 'tsx', join(ROOT, 'dev/cabled-board.ts'), 'start', '--config', file, '--board', b.id, '--simulate-devices'], {
      stdio: 'ignore',
      env: { ...process.env, EWS_LOG_LEVEL: 'warn' },
    }),
  );
  const u = `http://127.0.0.1:${boards[0]!.httpPort}`;
  try {
    await waitFor(
      'devices online',
      async () => {
        const l = (await (await fetch(`${u}/api/devices`)).json()) as Array<{ online: boolean }>;
        return l.every((d) => d.online);
      },
      20_000,
      50,
    );
    return {
      // pump1 lives on b2: master → forward → Modbus RTU (4 grouped requests) → back.
      pumpReadViaMaster: await roundTrips(`${u}/cgi-bin/devices/pump1`, N),
      pumpReadViaNode: await roundTrips(`http://127.0.0.1:${boards[2]!.httpPort}/cgi-bin/devices/pump1`, N),
      // valve3 on b3: one line-protocol exchange.
      valveReadViaMaster: await roundTrips(`${u}/cgi-bin/devices/valve3`, N),
      pumpStartViaMaster: await roundTrips(`${u}/cgi-bin/devices/pump1/start`, N, 'POST'),
      // The floor: echo CGI on the master's board with no device.
      echoViaMaster: await roundTrips(`${u}/cgi-bin/echo?ms=0`, N),
    };
  } finally {
    for (const p of procs) p.kill('SIGTERM');
  }
}

/** Back-to-back reads on one port for `seconds`: reads and Modbus transactions per second. */
async function opsPerSecond(m: DeviceManager, port: string, seconds: number): Promise<{ readsPerS: number; transactionsPerS: number }> {
  const w = m.worker(port)!;
  const before = w.transactions;
  const t0 = performance.now();
  let reads = 0;
  while (performance.now() - t0 < seconds * 1000) {
    await m.read('pump', 'control');
    reads++;
  }
  const s = (performance.now() - t0) / 1000;
  return { readsPerS: Math.round(reads / s), transactionsPerS: Math.round((w.transactions - before) / s) };
}

async function perPort() {
  const dev = (port: string) => [
    {
      id: 'pump',
      driver: 'modbus-rtu',
      simulate: 'pump',
      attach: [{ board: 'b1', port }],
      unitId: 1,
      timeoutMs: 300,
      retries: 0,
      points: { running: { coil: 0 }, speed: { holding: 1 }, temp: { input: 0, scale: 0.1 } },
    },
  ];
  const out: Record<string, unknown> = {};
  // Mock binding (in-process): the cost of our own stack.
  {
    const cfg = parseConfig({ cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' }, boards: [{ id: 'b1', address: '127.0.0.1' }], devices: dev('/dev/ttyBENCH') });
    const m = new DeviceManager(cfg.devices, 0, simulatedPortFactory(cfg.devices, 0).factory, silentLogger, { queueMax: 8, backoffMaxMs: 200 });
    m.start();
    await waitFor('mock online', async () => m.snapshots()[0]!.online);
    out.mockBinding = await opsPerSecond(m, '/dev/ttyBENCH', 2);
    m.stop();
  }
  // A real pty pair through socat, simulator on the far end.
  if (spawnSync('sh', ['-c', 'command -v socat']).status === 0) {
    const { ptyPair, ptyWire } = await import('../test/devices/pty.ts');
    const pty = await ptyPair();
    const wire = await ptyWire(pty.b);
    new PumpSimulator(1).attach(wire.wire);
    const cfg = parseConfig({ cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' }, boards: [{ id: 'b1', address: '127.0.0.1' }], devices: dev(pty.a) });
    const m = new DeviceManager(cfg.devices, 0, openRealPort, silentLogger, { queueMax: 8, backoffMaxMs: 200 });
    m.start();
    await waitFor('pty online', async () => m.snapshots()[0]!.online);
    out.pty = await opsPerSecond(m, pty.a, 2);
    m.stop();
    await wire.close();
    await pty.kill();
  } else out.pty = 'skipped: socat not installed';
  return out;
}

export async function runDeviceBench(): Promise<Record<string, unknown>> {
  return {
    what: `sequential round trips (one client, keep-alive), ${N} each; per-port: back-to-back reads of a 3-point pump (3 Modbus transactions) for 2 s`,
    cluster: await clusterRoundTrip(),
    perPort: await perPort(),
  };
}
