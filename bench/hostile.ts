// npm run bench:hostile: what hostile clients cost a board, on a 3-board loopback cluster with the product's default timings (heartbeat 20 ms, Tmax 120 ms), login on.
// The boards run through tsx with the demo's simulated devices (dev/cabled-board.ts).
// 1. 40 connections to the dispatch-link port claiming 2 MB frames: a board's memory before and after.
// 2. 4 event streams whose clients never read (2 KB receive buffers) for 60 s while devices report:
//    the board's memory every 5 s, whether it is up, how many streams it closed.
// 3. The link's CPU per MB of frames, sent in 200-byte writes and in 64 KB writes (a board's
//    CPU time from /proc, for signed frames it refuses: 403, nothing runs).
// 4. Term changes while one node takes 100 000 junk datagrams a second for 30 s, from a board's
//    address (each costs an HMAC) and from another address (dropped first).
// Results: bench/results/hostile.{json,md}. Memory is private dirty (smaps_rollup) and RSS.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { demoDevices } from '../dev/demo.ts';
import { hashPassword } from '../node/auth/password.ts';
import { FrameCodec, LINK_MAGIC } from '../shared/dispatch-frame.ts';
import { BOARD_NODE_FLAGS } from '../shared/node-flags.ts';
import { createCodec } from '../shared/protocol.ts';
import { freePorts, metric, waitFor } from '../test/integration/harness.ts';

const ROOT = resolve(import.meta.dirname, '..');
const RESULTS = join(ROOT, 'bench/results');
const STREAM_S = Number(process.env.BENCH_STREAM_S ?? 60);
const FLOOD_S = Number(process.env.BENCH_FLOOD_S ?? 30);
const FLOOD_PPS = 100_000;

function memory(pid: number): { privateDirtyMb: number; rssMb: number } {
  const roll = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(roll)?.[1] ?? 0);
  return { privateDirtyMb: +(kb('Private_Dirty') / 1024).toFixed(1), rssMb: +(kb('Rss') / 1024).toFixed(1) };
}
const cpuMs = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime + stime, in clock ticks of 10 ms
};

const key = randomBytes(32);
const ports = await freePorts(6);
const boards = ['b1', 'b2', 'b3'].map((id, i) => ({ id, address: '127.0.0.1', httpPort: ports[2 * i]!, udpPort: ports[2 * i + 1]! }));
const dir = mkdtempSync(join(tmpdir(), 'ews-bench-hostile-'));
const file = join(dir, 'cluster.json');
const viewer = { name: 'victor', password: 'viewer-pass-1' };
writeFileSync(
  file,
  JSON.stringify({
    cluster: { name: 'bench', key: key.toString('hex') },
    boards,
    devices: demoDevices(boards.map((b) => b.id)),
    auth: { users: [{ name: viewer.name, role: 'viewer', passwordHash: await hashPassword(viewer.password) }] },
    stateDir: join(dir, 'state'),
  }),
);
const procs = new Map<string, ChildProcess>();
const url = (i: number) => `http://127.0.0.1:${boards[i]!.httpPort}`;
for (const b of boards) {
  procs.set(
    b.id,
    spawn(process.execPath, [...BOARD_NODE_FLAGS, '--import', 'tsx', join(ROOT, 'dev/cabled-board.ts'), 'start', '--config', file, '--board', b.id, '--simulate-devices'], {
      cwd: ROOT,
      stdio: 'ignore',
      env: { ...process.env, EWS_LOG_LEVEL: 'error' },
    }),
  );
  if (b.id === 'b1') await waitFor('b1 up', async () => (await fetch(`${url(0)}/healthz`)).ok, 60_000, 200);
}
const pid = (i: number) => procs.get(boards[i]!.id)!.pid!;
const health = async () => Promise.all(boards.map((_, i) => fetch(`${url(i)}/healthz`).then((r) => r.json() as Promise<{ master: string | null; term: number }>)));
await waitFor('one master', async () => new Set((await health()).map((h) => `${h.master}/${h.term}`)).size === 1 && (await health())[0]!.master !== null, 60_000, 200);
const token = ((await (await fetch(`${url(1)}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(viewer) })).json()) as { token: string }).token;
await sleep(5000);

try {
  // 1. Claims of 2 MB frames on the link port.
  const before = memory(pid(1));
  const claim = Buffer.alloc(5 + 64 * 1024, 0x41);
  claim[0] = LINK_MAGIC;
  claim.writeUInt32BE(2 * 1024 * 1024, 1);
  const heldMs = await Promise.all(
    Array.from(
      { length: 40 },
      () =>
        new Promise<number>((done) => {
          const t0 = performance.now();
          const s = net.connect(boards[1]!.httpPort, '127.0.0.1', () => s.write(claim));
          s.on('error', () => {});
          s.on('close', () => done(performance.now() - t0));
        }),
    ),
  );
  const afterClaims = memory(pid(1));

  // 2. Unread event streams.
  const reader = `import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048); s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(("GET /api/events HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nAuthorization: Bearer " + sys.argv[2] + "\\r\\n\\r\\n").encode())
time.sleep(int(sys.argv[3]))`;
  const streamsBefore = memory(pid(1));
  const stalled = Array.from({ length: 4 }, () => spawn('/usr/bin/python3', ['-c', reader, String(boards[1]!.httpPort), token, String(STREAM_S + 5)], { stdio: 'ignore' }));
  const series: Array<{ s: number; privateDirtyMb: number; rssMb: number; up: boolean }> = [];
  let reads = 0;
  let stop = false;
  const readLoop = (async () => {
    while (!stop) {
      await Promise.all(
        ['pump1', 'valve3', 'sensor1'].map((d) =>
          fetch(`${url(1)}/cgi-bin/devices/${d}`, { headers: { authorization: `Bearer ${token}` } }).then(
            (r) => r.arrayBuffer(),
            () => undefined,
          ),
        ),
      );
      reads += 3;
    }
  })();
  for (let s = 5; s <= STREAM_S; s += 5) {
    await sleep(5000);
    const up = await fetch(`${url(1)}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    series.push({ s, ...memory(pid(1)), up });
  }
  stop = true;
  await readLoop;
  for (const p of stalled) p.kill();
  const closedBehind = await metric(url(1), 'ews_sse_closed_behind_total');

  // 3. The link's CPU per MB, in small and large writes (signed frames a board refuses: 403).
  const codec = new FrameCodec(key, 4 << 20);
  const base = { master: 0, term: 1, target: 1, epoch: 1, cls: 0, level: 3, origin: 'client' as const, method: 'POST', url: '/cgi-bin/echo', headers: [], body: Buffer.alloc(60_000, 0x42) };
  const linkCost = async (writeBytes: number) => {
    const frames = 60;
    const bytes = Buffer.concat([Buffer.of(LINK_MAGIC), ...Array.from({ length: frames }, (_, i) => codec.request({ ...base, id: i + 1 }))]);
    const c0 = cpuMs(pid(1));
    await new Promise<void>((done) => {
      const s = net.connect(boards[1]!.httpPort, '127.0.0.1', async () => {
        s.setNoDelay(true);
        for (let o = 0; o < bytes.length; o += writeBytes) {
          if (!s.write(bytes.subarray(o, o + writeBytes))) await new Promise((r) => s.once('drain', r));
        }
        s.end();
      });
      s.on('data', () => {});
      s.on('error', () => {});
      s.on('close', () => done());
    });
    await sleep(500);
    return { mb: +(bytes.length / 1048576).toFixed(2), cpuMsPerMb: +((cpuMs(pid(1)) - c0) / (bytes.length / 1048576)).toFixed(1) };
  };
  const small = await linkCost(200);
  const large = await linkCost(64 * 1024);

  // 4. A junk flood at one node.
  const junk = createCodec({ key: randomBytes(32), cluster: 'bench', boards: 3, packetBytesMax: 1400 }).encode(
    { type: 'STATE', sender: 0, term: 999_999, body: { master: 0, linknum: [0, 0, 0], runstate: [1, 1, 1] } },
    { epoch: Date.now() + 1e9, counter: 1 },
  );
  const flood = async (from: string) => {
    const terms = new Set<number>();
    const t0 = (await health())[0]!.term;
    const sock = dgram.createSocket('udp4');
    await new Promise<void>((r) => sock.bind(0, from, () => r()));
    let sent = 0;
    let watching = true;
    const watch = (async () => {
      while (watching) {
        for (const h of await health().catch(() => [])) terms.add(h.term);
        await sleep(100);
      }
    })();
    const start = performance.now();
    while (performance.now() - start < FLOOD_S * 1000) {
      const due = Math.floor(((performance.now() - start) / 1000) * FLOOD_PPS);
      for (; sent < due; sent++) sock.send(junk, boards[2]!.udpPort, '127.0.0.1');
      await new Promise((r) => setImmediate(r));
    }
    await sleep(1000);
    watching = false;
    await watch;
    sock.close();
    terms.add(t0);
    return { from, packets: sent, pps: Math.round(sent / FLOOD_S), termChanges: terms.size - 1, floods: await metric(url(2), 'ews_udp_floods_total') };
  };
  const fromBoard = await flood('127.0.0.1');
  const fromStranger = await flood('127.0.0.2');

  const result = {
    run: new Date().toISOString(),
    node: process.version,
    claims: { connections: 40, claimedBytes: 2 * 1024 * 1024, closedWithinMs: Math.round(Math.max(...heldMs)), before, after: afterClaims },
    streams: { unread: 4, seconds: STREAM_S, reads, before: streamsBefore, series, closedBehind },
    link: { small: { writeBytes: 200, ...small }, large: { writeBytes: 65536, ...large } },
    flood: { seconds: FLOOD_S, target: FLOOD_PPS, runs: [fromBoard, fromStranger] },
  };
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(join(RESULTS, 'hostile.json'), `${JSON.stringify(result, null, 2)}\n`);
  const last = series.at(-1)!;
  const md = `# Hostile clients

Run ${result.run}, Node ${result.node}, x64; a 3-board loopback cluster with the product's default timings and the demo's simulated devices (\`npm run bench:hostile\`). Memory is private dirty (smaps_rollup \`Private_Dirty\`), RSS beside it; the board measured is b2, a node. The boards run through tsx (\`dev/cabled-board.ts\`, for the simulated devices), so their absolute memory is above a bundle-run board's: the growth is what counts.

| probe | result |
|---|---|
| ${result.claims.connections} link connections each claiming a ${result.claims.claimedBytes / 1048576} MB frame | all closed within ${result.claims.closedWithinMs} ms; private dirty ${before.privateDirtyMb} → ${afterClaims.privateDirtyMb} MB (RSS ${before.rssMb} → ${afterClaims.rssMb}) |
| 4 event streams never read (2 KB receive buffers), ${STREAM_S} s, ${reads} device reads meanwhile | ${series.every((x) => x.up) ? 'up throughout' : '**down at times**'}; ${closedBehind} streams closed for falling behind; private dirty ${streamsBefore.privateDirtyMb} → ${last.privateDirtyMb} MB (most ${Math.max(...series.map((x) => x.privateDirtyMb))}), RSS ${streamsBefore.rssMb} → ${last.rssMb} |
| the link's CPU, ${small.mb} MB of signed frames in ${200}-byte writes | ${small.cpuMsPerMb} ms per MB |
| the same in 64 KB writes | ${large.cpuMsPerMb} ms per MB |
${result.flood.runs.map((r) => `| ${FLOOD_S} s of junk at one node from ${r.from === '127.0.0.1' ? "a board's address (each costs an HMAC)" : 'another address (dropped first)'}, ${r.pps} per second | ${r.termChanges} term changes; floods counted at the node: ${r.floods} |`).join('\n')}
`;
  writeFileSync(join(RESULTS, 'hostile.md'), md);
  process.stdout.write(md);
} finally {
  for (const p of procs.values()) p.kill('SIGTERM');
  await sleep(1000);
  rmSync(dir, { recursive: true, force: true });
}
