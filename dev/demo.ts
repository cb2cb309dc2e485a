// `npm run demo`: a local cluster of N boards on 127.0.0.1, one process each (as on real boards),
// with stdin commands to pull and replug a board's cable and watch the failover.
import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { hashPassword } from '../node/auth/password.ts';
import { BOARD_NODE_FLAGS } from '../shared/node-flags.ts';

const CABLED_BOARD = resolve(import.meta.dirname, 'cabled-board.ts');

/** Simulated devices: a pump on Modbus RTU, a valve on the line protocol, a sensor on two boards. */
/** What the demo suggests trying, as shell lines that run when pasted (with T set when login is on). */
export function tryLines(url: string, auth: boolean): string[] {
  const c = `curl -sf${auth ? ' -H "authorization: Bearer $T"' : ''}`;
  return [
    `${c} ${url}/api/devices   # every device's last readings`,
    `${c} ${url}/cgi-bin/devices/pump1   # read the pump now (Modbus RTU, on ews2)`,
    `${c} -X POST ${url}/cgi-bin/devices/pump1/start   # start it`,
    `${c} -X POST -H 'content-type: application/json' -d '{"value":2400}' ${url}/cgi-bin/devices/pump1/set-speed`,
    `${c} -X POST -H 'Idempotency-Key: k1' ${url}/cgi-bin/devices/valve3/open   # the valve (line protocol); again with k1: replayed`,
    `${c} ${url}/api/alarms   # alarms`,
    `${c} ${url}/api/log   # the audit log`,
    `${c} '${url}/api/history?device=pump1&point=speed&format=csv'   # a trend as CSV`,
    `${c} ${url}/api/cluster   # master, term, linknum, runstate, each board's health`,
  ];
}

export function demoDevices(boardIds: readonly string[]): object[] {
  const on = (i: number) => boardIds[Math.min(i, boardIds.length - 1)]!;
  return [
    {
      id: 'pump1',
      name: 'Feed pump',
      driver: 'modbus-rtu',
      simulate: 'pump',
      attach: [{ board: on(1), port: '/dev/ttyUSB0' }],
      serial: { baudRate: 9600 },
      unitId: 1,
      timeoutMs: 300,
      retries: 1,
      points: { running: { coil: 0 }, speed: { holding: 1, min: 0, max: 3000, unit: 'rpm' }, temp: { input: 0, scale: 0.1, unit: '°C' }, overheated: { discrete: 0 } },
      actions: { start: { write: 'running', value: true }, stop: { write: 'running', value: false }, 'set-speed': { write: 'speed', from: 'value' } },
    },
    {
      id: 'valve3',
      name: 'Outlet valve',
      driver: 'line',
      simulate: 'valve',
      attach: [{ board: on(2), port: '/dev/ttyS1' }],
      serial: { baudRate: 115200 },
      eol: '\n',
      ok: '^OK',
      timeoutMs: 300,
      retries: 1,
      points: { position: { query: 'POS?', parse: '^OK pos=(\\d+)', unit: '%' } },
      actions: { open: { send: 'OPEN' }, close: { send: 'CLOSE' }, set: { send: 'POS {value}', min: 0, max: 100, point: 'position' } },
    },
    {
      id: 'room',
      name: 'Room temperature',
      driver: 'line',
      simulate: 'sensor',
      attach: [...new Set([on(0), on(1)])].map((b) => ({ board: b, port: '/dev/ttyS0' })),
      eol: '\n',
      ok: '^OK',
      timeoutMs: 300,
      retries: 1,
      points: { temp: { query: 'T?', parse: '^OK t=(-?[\\d.]+)', unit: '°C' } },
    },
  ];
}

export interface DemoUser {
  name: string;
  role: 'operator' | 'viewer';
  password: string;
  passwordHash: string;
}

/** Fresh credentials for each demo run, printed once. */
export async function demoUsers(): Promise<DemoUser[]> {
  const users: DemoUser[] = [];
  for (const [name, role] of [
    ['operator', 'operator'],
    ['viewer', 'viewer'],
  ] as const) {
    const password = randomBytes(9).toString('base64url');
    users.push({ name, role, password, passwordHash: await hashPassword(password) });
  }
  return users;
}

export function demoConfig(n: number, httpBase: number, udpBase: number, users: DemoUser[] = []): object {
  const boards = Array.from({ length: n }, (_, i) => ({ id: `ews${i + 1}`, address: '127.0.0.1', httpPort: httpBase + i, udpPort: udpBase + i }));
  return {
    cluster: { name: 'demo', key: randomBytes(32).toString('hex'), broadcast: 'peers', heartbeatMs: 100, tmaxMs: 500, tthresholdMs: 500 },
    boards,
    devices: demoDevices(boards.map((b) => b.id)),
    schedules: [
      { cron: '*/5 * * * * *', device: 'room', action: 'read' },
      { cron: '*/2 * * * * *', device: 'pump1', action: 'read' },
    ],
    auth: users.length > 0 ? { users: users.map(({ name, role, passwordHash }) => ({ name, role, passwordHash })) } : { disabled: true },
  };
}

interface Child {
  id: string;
  url: string;
  proc: ChildProcess;
  cut: boolean;
}

/** Whether this machine can take the port on 127.0.0.1 (TCP or UDP). */
function portFree(port: number, udp: boolean): Promise<boolean> {
  return new Promise((resolve) => {
    if (udp) {
      const s = createSocket('udp4');
      s.once('error', () => resolve(false));
      s.bind(port, '127.0.0.1', () => s.close(() => resolve(true)));
    } else {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    }
  });
}

export async function runDemo(n: number): Promise<number> {
  const httpBase = Number(process.env.EWS_DEMO_HTTP_PORT ?? 8081);
  const udpBase = Number(process.env.EWS_DEMO_UDP_PORT ?? 5051);
  const say = (s: string): void => void process.stdout.write(`${s}\n`);
  // A port already taken: say which, and which variable moves the boards' ports.
  for (let i = 0; i < n; i++) {
    for (const [base, udp, name] of [
      [httpBase, false, 'EWS_DEMO_HTTP_PORT'],
      [udpBase, true, 'EWS_DEMO_UDP_PORT'],
    ] as const) {
      if (await portFree(base + i, udp)) continue;
      say(`port ${base + i} (${udp ? 'UDP' : 'HTTP'} of board ews${i + 1}) is in use on 127.0.0.1; set ${name} to another base, e.g. ${name}=${base + 1000} npm run demo`);
      return 2;
    }
  }
  const dir = mkdtempSync(join(tmpdir(), 'ews-demo-'));
  // It holds the cluster key and the password hashes: gone on every way out.
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'cluster.json');
  const users = process.env.EWS_DEMO_OPEN === '1' ? [] : await demoUsers();
  // A state dir of its own: boot epochs, logouts and started device commands survive a board's restart.
  writeFileSync(file, JSON.stringify({ ...demoConfig(n, httpBase, udpBase, users), stateDir: join(dir, 'state') }, null, 2));
  const logFile = join(dir, 'boards.log');
  const log = openSync(logFile, 'a');

  const children: Child[] = [];
  for (let i = 0; i < n; i++) {
    const id = `ews${i + 1}`;
    const proc = fork(CABLED_BOARD, ['start', '--config', file, '--board', id, '--simulate-devices'], { stdio: ['ignore', log, log, 'ipc'], execArgv: [...process.execArgv, ...BOARD_NODE_FLAGS] });
    children.push({ id, url: `http://127.0.0.1:${httpBase + i}`, proc, cut: false });
    proc.on('exit', (code) => say(`board ${id} exited (${code})`));
  }
  const stopAll = (): void => {
    for (const c of children) c.proc.kill('SIGTERM');
  };
  process.once('exit', stopAll);

  // Wait for the cluster to elect its first master.
  const deadline = Date.now() + 15_000;
  let master: string | null = null;
  let term = -1;
  if (users.length > 0) {
    const v = users.find((u) => u.role === 'viewer')!;
    const t0 = Date.now();
    while (!demoToken && Date.now() - t0 < 15_000) {
      await new Promise((r) => setTimeout(r, 100));
      demoToken = await fetch(`${children[0]!.url}/api/login`, { method: 'POST', body: JSON.stringify({ name: v.name, password: v.password }), signal: AbortSignal.timeout(2000) }).then(
        async (r) => (r.ok ? ((await r.json()) as { token: string }).token : ''),
        () => '',
      );
    }
  }
  // Up means every board answers and they agree on the master.
  while (Date.now() < deadline && master === null) {
    await new Promise((r) => setTimeout(r, 100));
    const views = await Promise.all(children.map((c) => readMaster(c.url).catch(() => undefined)));
    const m = views[0]?.master ?? null;
    if (m !== null && views.every((v) => v?.master === m)) master = m;
  }
  if (master === null) {
    say(`the cluster did not come up; the boards logged:\n${readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n')}`);
    stopAll();
    return 1;
  }
  say(`ews demo: ${n} boards up (config ${file}, logs ${logFile}; both removed when the demo ends)`);
  for (const c of children) say(`  ${c.id}  ${c.url}/`);
  if (users.length > 0) {
    say(`open ${children[0]!.url}/ and log in as:`);
    for (const u of users) say(`  ${u.name.padEnd(9)} password ${u.password}   (${u.role === 'operator' ? 'reads and controls' : 'reads only'})`);
  } else say('login is off (EWS_DEMO_OPEN=1)');
  const u = children[0]!.url;
  // The curl lines carry an operator's token (a session of the printed operator account).
  const op = users.find((x) => x.role === 'operator');
  const token = op ? await login(u, op.name, op.password) : '';
  say('try (each line runs as pasted; the README lists the same):');
  if (token) say(`  T=${token}`);
  for (const line of tryLines(u, token !== '')) say(`  ${line}`);
  say('commands: pull BOARD | plug BOARD | unplug DEVICE | replug DEVICE | status | quit');

  // Announce every change of master, as seen by any board that is plugged in.
  const watch = setInterval(async () => {
    for (const c of children) {
      if (c.cut) continue;
      const v = await readMaster(c.url).catch(() => undefined);
      if (v && v.master !== null && v.term > term) {
        term = v.term;
        if (v.master !== master) say(`master is now ${v.master} (term ${v.term})`);
        master = v.master;
      }
    }
  }, 300);

  const rl = createInterface({ input: process.stdin });
  return new Promise<number>((resolve) => {
    const quit = (): void => {
      clearInterval(watch);
      rl.close();
      stopAll();
      resolve(0);
    };
    process.once('SIGINT', quit);
    process.once('SIGTERM', quit);
    rl.on('line', (line) => {
      const [cmd, id] = line.trim().split(/\s+/);
      const c = children.find((x) => x.id === id);
      if (cmd === 'quit' || cmd === 'exit') return quit();
      if (cmd === 'status') {
        void Promise.all(children.map((x) => (x.cut ? undefined : readMaster(x.url).catch(() => undefined)))).then((views) => {
          const v = views.find((x) => x !== undefined);
          if (!v) return say('no board answers');
          say(`master ${v.master} term ${v.term}`);
          for (const b of v.boards) say(`  ${b.id}  linknum ${b.linknum}  runstate ${b.runstate}  ${b.role}${children.find((x) => x.id === b.id)?.cut ? '  (pulled)' : ''}`);
        });
        return;
      }
      if ((cmd === 'unplug' || cmd === 'replug') && id) {
        for (const x of children) x.proc.send({ device: id, plugged: cmd === 'replug' });
        return say(`${id}: serial cable ${cmd === 'unplug' ? 'pulled' : 'plugged back in'}`);
      }
      if ((cmd === 'pull' || cmd === 'plug') && c) {
        c.cut = cmd === 'pull';
        c.proc.send({ cut: c.cut });
        return say(`${c.id}: cable ${c.cut ? 'pulled' : 'plugged back in'}`);
      }
      if (cmd) say('commands: pull BOARD | plug BOARD | unplug DEVICE | replug DEVICE | status | quit');
    });
  });
}

interface View {
  master: string | null;
  term: number;
  boards: Array<{ id: string; linknum: number; runstate: number; role: string }>;
}

let demoToken = '';

async function login(url: string, name: string, password: string): Promise<string> {
  const r = await fetch(`${url}/api/login`, { method: 'POST', body: JSON.stringify({ name, password }), signal: AbortSignal.timeout(5000) }).catch(() => undefined);
  return r?.ok ? ((await r.json()) as { token: string }).token : '';
}

async function readMaster(url: string): Promise<View | undefined> {
  const r = await fetch(`${url}/api/cluster`, { signal: AbortSignal.timeout(1000), headers: demoToken ? { authorization: `Bearer ${demoToken}` } : {} });
  if (r.status === 401) {
    // The demo's own watcher reads the table with the viewer account it made.
    return undefined;
  }
  return (await r.json()) as View;
}

// Run as a script (`npm run demo [-- --boards N]`).
if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const i = process.argv.indexOf('--boards');
  const n = i > 0 ? Number(process.argv[i + 1]) : 3;
  if (!Number.isInteger(n) || n < 1 || n > 9) {
    process.stderr.write('--boards must be 1 to 9\n');
    process.exit(2);
  }
  runDemo(n).then((code) => process.exit(code));
}
