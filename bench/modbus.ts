// npm run bench:modbus: Modbus requests per second and p99 through the cluster's gateway, beside
// the floor, a pymodbus client talking to the same devices directly. The devices: a pymodbus RTU
// server on a pty at 115200 baud and a pymodbus TCP server on loopback. The cluster: 3 boards on
// loopback, each in a cgroup at 20 % of a core, the RTU device on b2, the TCP device on b3, the
// gateway on the master b1. The load: one pymodbus client reading 2 holding registers in a closed
// loop (bench/modbus_load.py), BENCH_SECONDS per point, RUNS runs interleaved, medians.
// Results: bench/results/modbus.{json,md}.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BOARD_NODE_FLAGS } from '../shared/node-flags.ts';
import { ptyPair } from '../test/devices/pty.ts';
import { BUNDLE, freePorts, waitFor } from '../test/integration/harness.ts';
import { cgroupsAvailable, cpuGroup } from './cgroup.ts';
import { spread } from './spread.ts';

const PY = '/usr/bin/python3';
const ROOT = resolve(import.meta.dirname, '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SHARE = 0.2;
const BAUD = 115200;
const RESULTS = join(import.meta.dirname, 'results');

interface Load {
  n: number;
  errors: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

function load(args: string[]): Load {
  const r = spawnSync(PY, [join(ROOT, 'bench/modbus_load.py'), ...args], { encoding: 'utf8', timeout: (SECONDS + 30) * 1000 });
  const line = r.stdout.trim().split('\n').pop() ?? '';
  if (!line.startsWith('{')) throw new Error(`modbus_load ${args.join(' ')}: ${r.stderr.slice(-500)}`);
  return JSON.parse(line) as Load;
}

const started = new Date().toISOString();
if (!cgroupsAvailable()) {
  process.stderr.write('bench:modbus needs the cgroup v1 cpu and cpuacct controllers (as root)\n');
  process.exit(2);
}
const procs: ChildProcess[] = [];
const dir = mkdtempSync(join(tmpdir(), 'ews-bench-modbus-'));
const pty = await ptyPair();
const [tcpPort, gatewayPort, ...boardPorts] = await freePorts(8);
procs.push(spawn(PY, [join(ROOT, 'test/peers/pymodbus_server.py'), pty.b, String(BAUD)], { stdio: 'ignore' }));
procs.push(spawn(PY, [join(ROOT, 'test/peers/pymodbus_tcp_server.py'), String(tcpPort), 'tcp'], { stdio: 'ignore' }));
const groups = [1, 2, 3].map((i) => cpuGroup(`modbus-b${i}`, SHARE));
const rows: Record<string, Load[]> = { 'direct RTU': [], 'direct TCP': [], 'gateway RTU': [], 'gateway TCP': [] };
try {
  await waitFor('the device servers', async () => load(['tcp', '127.0.0.1', String(tcpPort), '1', '0.2']).n > 0 && load(['rtu', pty.a, String(BAUD), '1', '0.2']).n > 0, 20_000, 500);
  // The floor first: the RTU port is the board's once the cluster runs.
  for (let r = 0; r < RUNS; r++) {
    rows['direct RTU']!.push(load(['rtu', pty.a, String(BAUD), '1', String(SECONDS)]));
    rows['direct TCP']!.push(load(['tcp', '127.0.0.1', String(tcpPort), '1', String(SECONDS)]));
  }
  const boards = [0, 1, 2].map((i) => ({ id: `b${i + 1}`, address: '127.0.0.1', httpPort: boardPorts[2 * i]!, udpPort: boardPorts[2 * i + 1]! }));
  const cfg = {
    cluster: { name: 'bench', key: randomBytes(32).toString('hex'), broadcast: 'peers', heartbeatMs: 100, tmaxMs: 1000, tthresholdMs: 1000, staggerMs: 200 },
    boards,
    auth: { disabled: true },
    stateDir: false,
    devices: [
      { id: 'rtu', driver: 'modbus-rtu', attach: [{ board: 'b2', port: pty.a }], serial: { baudRate: BAUD }, unitId: 1, gatewayUnit: 1, pollMs: 0, points: { h0: { holding: 0 } } },
      { id: 'tcp', driver: 'modbus-tcp', host: '127.0.0.1', port: tcpPort, attach: [{ board: 'b3' }], unitId: 1, gatewayUnit: 2, pollMs: 0, points: { h0: { holding: 0 } } },
    ],
    gateway: { modbusTcp: { port: gatewayPort, allow: ['127.0.0.1/32'] } },
  };
  const file = join(dir, 'c.json');
  writeFileSync(file, JSON.stringify(cfg));
  for (const [i, b] of boards.entries()) {
    const p = spawn(process.execPath, [...BOARD_NODE_FLAGS, BUNDLE, 'start', '--config', file, '--board', b.id], { stdio: 'ignore', env: { ...process.env, EWS_LOG_LEVEL: 'warn' } });
    groups[i]!.add(p.pid!);
    procs.push(p);
  }
  await waitFor(
    'the gateway answering both devices',
    async () => load(['tcp', '127.0.0.1', String(gatewayPort), '1', '0.2']).n > 0 && load(['tcp', '127.0.0.1', String(gatewayPort), '2', '0.2']).n > 0,
    60_000,
    500,
  );
  for (let r = 0; r < RUNS; r++) {
    rows['gateway RTU']!.push(load(['tcp', '127.0.0.1', String(gatewayPort), '1', String(SECONDS)]));
    rows['gateway TCP']!.push(load(['tcp', '127.0.0.1', String(gatewayPort), '2', String(SECONDS)]));
  }
} finally {
  for (const p of procs) p.kill('SIGKILL');
  await pty.kill();
  for (const g of groups) g.remove();
  rmSync(dir, { recursive: true, force: true });
}

const med = (xs: Load[], k: 'rps' | 'p50Ms' | 'p99Ms') => spread(xs.map((x) => x[k])).median;
const summary = Object.fromEntries(Object.entries(rows).map(([k, xs]) => [k, { rps: med(xs, 'rps'), p50Ms: med(xs, 'p50Ms'), p99Ms: med(xs, 'p99Ms'), errors: xs.reduce((a, x) => a + x.errors, 0) }]));
const data = {
  run: started,
  node: process.version,
  what: `one pymodbus client reading 2 holding registers in a closed loop (one request at a time), ${SECONDS} s per point, ${RUNS} runs, medians; devices: a pymodbus RTU server on a pty at ${BAUD} baud and a pymodbus TCP server on loopback; the cluster: 3 ews boards on loopback each in a cgroup at ${SHARE * 100} % of a core, the RTU device on b2, the TCP device on b3, the gateway on the master b1 (so every request crosses the master and a dispatch link to the device's board)`,
  summary,
  rows,
};
mkdirSync(RESULTS, { recursive: true });
writeFileSync(join(RESULTS, 'modbus.json'), `${JSON.stringify(data, null, 2)}\n`);
const s = summary as Record<string, { rps: number; p50Ms: number; p99Ms: number; errors: number }>;
const ratio = (a: string, b: string) => (s[a]!.rps / s[b]!.rps).toFixed(2);
const md = `# Modbus through the gateway (${started})

Generated by \`npm run bench:modbus\`: ${data.what}.

| path | req/s | p50 | p99 | errors |
|---|---|---|---|---|
${Object.entries(s)
  .map(([k, v]) => `| ${k} | ${v.rps} | ${v.p50Ms} ms | ${v.p99Ms} ms | ${v.errors} |`)
  .join('\n')}

Through the gateway, the RTU device gives ${ratio('gateway RTU', 'direct RTU')}× the requests per second of a client on its line, the TCP device ${ratio('gateway TCP', 'direct TCP')}× of a client on its socket.
`;
writeFileSync(join(RESULTS, 'modbus.md'), md);
process.stdout.write(md);
