// A LAN of boards in network namespaces, for the hardware-in-the-loop suite. Must run inside
// `unshare -rnm` (hw-test/run.sh): a switch namespace with a bridge, one namespace per board with
// eth0 on the bridge, and this process itself as the client on the same LAN. Nothing can leave.
// "Pulling a cable" is the switch-side link going down; a partition blocks forwarding on the port.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BOARD_NODE_FLAGS } from '../shared/node-flags.ts';
import { type Supervised, supervise } from '../test/integration/release-fixture.ts';

export const ROOT = resolve(import.meta.dirname, '..');
const BUNDLE = join(ROOT, 'dist/ews.js');
export const VIP = '10.231.0.100';
export const PORT = 8080;

export const ip = (...a: string[]): string => execFileSync('ip', a, { encoding: 'utf8' });
const bridge = (...a: string[]): string => execFileSync('bridge', a, { encoding: 'utf8' });

let mounted = false;
let lanCount = 0;

export interface Lan {
  ids: string[];
  addr(id: string): string;
  file: string;
  key: string;
  start(id: string): void;
  /** SIGKILL by default (a crash); SIGTERM stops it as systemd does. Resolves when it has exited. */
  kill(id: string, signal?: 'SIGKILL' | 'SIGTERM'): Promise<void>;
  /** Switch-side link down / up: the board sees NO-CARRIER, like a pulled cable. */
  pull(id: string): void;
  plug(id: string): void;
  /** Link stays up, the switch stops forwarding its port (a partition). */
  isolate(id: string, isolated: boolean): void;
  /** Boards holding the cluster address right now. */
  vipHolders(): string[];
  logs: Map<string, string>;
  /** When each board's process was started, and its pid (for boot time and RSS). */
  startedAt: Map<string, number>;
  /** A board's network namespace (to run other software on the same LAN: the keepalived comparison). */
  ns(id: string): string;
  pid(id: string): number | undefined;
  close(): Promise<void>;
}

export interface LanOptions {
  boards?: number;
  devices?: unknown[];
  alarms?: unknown[];
  auth?: unknown;
  cluster?: Record<string, unknown>;
  limits?: Record<string, unknown>;
  /** Per board, the command that runs node (default: this node), e.g. qemu with an ARM node. */
  runners?: Record<string, string[]>;
  upgrade?: Record<string, unknown>;
  gateway?: Record<string, unknown>;
  /** Per board, a releases prefix: the board runs its `current` under a supervisor that starts it again when it exits, as systemd does. */
  releases?: (id: string) => string;
}

export function ensureNamespaces(): void {
  if (mounted) return;
  if (!existsSync('/run/netns')) {
    execFileSync('mount', ['-t', 'tmpfs', 'tmpfs', '/run']);
    mkdirSync('/run/netns', { recursive: true });
  }
  mounted = true;
}

/** The boards' ids on a LAN of `n` boards (what a test lays out before building it). */
export const lanIds = (n = 3): string[] => Array.from({ length: n }, (_, i) => `ews${i + 1}`);

export async function buildLan(opts: LanOptions = {}): Promise<Lan> {
  ensureNamespaces();
  if (!existsSync(BUNDLE)) throw new Error('dist/ews.js missing: npm run build first (npm run test:hw does)');
  const k = `${process.pid % 1000}${lanCount++}`;
  const n = opts.boards ?? 3;
  const ids = lanIds(n);
  const sw = `sw${k}`;
  const ns = (id: string) => `${k}${id}`;
  const port = (id: string) => `p${k}${id}`.slice(0, 15);
  const addr = (id: string) => `10.231.0.${11 + ids.indexOf(id)}`;
  ip('netns', 'add', sw);
  ip('-n', sw, 'link', 'add', 'br0', 'type', 'bridge');
  ip('-n', sw, 'link', 'set', 'br0', 'up');
  for (const id of ids) {
    ip('netns', 'add', ns(id));
    ip('link', 'add', 'eth0', 'netns', ns(id), 'type', 'veth', 'peer', 'name', port(id), 'netns', sw);
    ip('-n', sw, 'link', 'set', port(id), 'master', 'br0');
    ip('-n', sw, 'link', 'set', port(id), 'up');
    ip('-n', ns(id), 'addr', 'add', `${addr(id)}/24`, 'brd', '10.231.0.255', 'dev', 'eth0');
    ip('-n', ns(id), 'link', 'set', 'eth0', 'up');
    ip('-n', ns(id), 'link', 'set', 'lo', 'up');
  }
  const cport = `c${k}`.slice(0, 15);
  ip('link', 'add', cport, 'type', 'veth', 'peer', 'name', `pc${k}`.slice(0, 15), 'netns', sw);
  ip('-n', sw, 'link', 'set', `pc${k}`.slice(0, 15), 'master', 'br0');
  ip('-n', sw, 'link', 'set', `pc${k}`.slice(0, 15), 'up');
  ip('addr', 'add', '10.231.0.2/24', 'brd', '10.231.0.255', 'dev', cport);
  ip('link', 'set', cport, 'up');
  ip('link', 'set', 'lo', 'up');

  const key = randomBytes(32).toString('hex');
  // The boards' state and the config (with its key): removed when the LAN closes.
  const stateDir = mkdtempSync(join(tmpdir(), 'ews-hw-state-'));
  const configDir = mkdtempSync(join(tmpdir(), 'ews-hw-'));
  const cfg = {
    cluster: {
      name: 'hw',
      key,
      broadcast: '10.231.0.255',
      udpPort: 5050,
      heartbeatMs: 50,
      tmaxMs: 300,
      tthresholdMs: 300,
      staggerMs: 100,
      vip: { address: `${VIP}/24`, interface: 'eth0' },
      ...opts.cluster,
    },
    boards: ids.map((id) => ({ id, address: addr(id), httpPort: PORT })),
    devices: opts.devices ?? [],
    ...(opts.alarms ? { alarms: opts.alarms } : {}),
    ...(opts.upgrade ? { upgrade: opts.upgrade } : {}),
    ...(opts.gateway ? { gateway: opts.gateway } : {}),
    auth: opts.auth ?? { disabled: true },
    limits: { serialBackoffMaxMs: 200, ...opts.limits },
    stateDir,
  };
  const file = join(configDir, 'cluster.json');
  writeFileSync(file, JSON.stringify(cfg));
  const procs = new Map<string, ChildProcess>();
  const logs = new Map<string, string>();
  const startedAt = new Map<string, number>();
  const sups = new Map<string, Supervised>();
  const lan: Lan = {
    ids,
    addr,
    file,
    key,
    logs,
    startedAt,
    ns,
    pid: (id) => (sups.get(id)?.child ?? procs.get(id))?.pid,
    start(id) {
      const node = opts.runners?.[id] ?? [process.execPath];
      startedAt.set(id, Date.now());
      const add = (d: Buffer | string) => logs.set(id, ((logs.get(id) ?? '') + d.toString()).slice(-20_000));
      const prefix = opts.releases?.(id);
      if (prefix) {
        const run = (entry: string): [string, string[]] => ['ip', ['netns', 'exec', ns(id), ...node, ...BOARD_NODE_FLAGS, entry, 'start', '--config', file, '--board', id]];
        sups.set(id, supervise(prefix, run, add));
        return;
      }
      const p = spawn('ip', ['netns', 'exec', ns(id), ...node, ...BOARD_NODE_FLAGS, BUNDLE, 'start', '--config', file, '--board', id], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, EWS_LOG_LEVEL: 'warn' },
      });
      p.stdout!.on('data', add);
      p.stderr!.on('data', add);
      p.on('exit', (code, signal) => add(Buffer.from(`[${id} exited: ${code ?? signal}]\n`)));
      procs.set(id, p);
    },
    async kill(id, signal = 'SIGKILL') {
      const p = sups.get(id)?.child ?? procs.get(id);
      if (!p || p.exitCode !== null || p.signalCode !== null) return;
      const gone = new Promise((r) => p.once('exit', r));
      p.kill(signal);
      await gone;
    },
    pull: (id) => void ip('-n', sw, 'link', 'set', port(id), 'down'),
    plug: (id) => void ip('-n', sw, 'link', 'set', port(id), 'up'),
    isolate: (id, on) => void bridge('-n', sw, 'link', 'set', 'dev', port(id), 'state', on ? '0' : '3'),
    vipHolders: () => ids.filter((id) => ip('-n', ns(id), '-4', 'addr', 'show', 'dev', 'eth0').includes(`${VIP}/24`)),
    async close() {
      await Promise.all([...sups.values()].map((x) => x.stop()));
      await Promise.all(
        [...procs.values()].map(
          (p) =>
            new Promise<void>((r) => {
              if (p.exitCode !== null || p.signalCode !== null) return r();
              p.once('exit', () => r());
              p.kill('SIGTERM');
              setTimeout(() => p.kill('SIGKILL'), 3000).unref();
            }),
        ),
      );
      for (const id of ids) ip('netns', 'del', ns(id));
      ip('netns', 'del', sw);
      ip('link', 'del', cport);
      for (const d of [stateDir, configDir]) rmSync(d, { recursive: true, force: true });
    },
  };
  for (const id of ids) lan.start(id);
  return lan;
}

// ---- a small HTTP client with hard timeouts (fetch's pooled sockets stick to a dead MAC) ----

export interface Answer {
  status: number;
  body: string;
  board: string | null;
  error?: string;
}

const agent = new http.Agent({ keepAlive: false });

export function request(host: string, path: string, opts: { method?: string; body?: string | Buffer; headers?: Record<string, string>; timeoutMs?: number; port?: number } = {}): Promise<Answer> {
  return new Promise((resolve) => {
    const req = http.request({ host, port: opts.port ?? PORT, path, method: opts.method ?? 'GET', agent, headers: { 'content-type': 'application/json', ...opts.headers } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, board: (res.headers['x-ews-board'] as string | undefined) ?? null }));
      res.on('error', (e) => resolve({ status: 0, body, board: null, error: e.message }));
    });
    req.setTimeout(opts.timeoutMs ?? 2000, () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({ status: 0, body: '', board: null, error: e.message }));
    req.end(opts.body);
  });
}

export async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 15_000, everyMs = 25): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface Health {
  board: string;
  role: string;
  term: number;
  master: string | null;
}

export async function health(lan: Lan, id: string): Promise<Health | undefined> {
  const r = await request(lan.addr(id), '/healthz', { timeoutMs: 1000 });
  return r.status === 200 ? (JSON.parse(r.body) as Health) : undefined;
}

/** Every listed board answers and names the same master, which holds the VIP alone. */
export async function settled(lan: Lan, ids = lan.ids, timeoutMs = 15_000): Promise<Health> {
  return until(
    `one master among ${ids.join(',')} holding the VIP alone`,
    async () => {
      const hs = await Promise.all(ids.map((id) => health(lan, id)));
      const m = hs[0]?.master;
      if (!m || hs.some((h) => !h || h.master !== m || h.term !== hs[0]!.term)) return undefined;
      const masters = hs.filter((h) => h!.role === 'master');
      if (masters.length !== 1) return undefined;
      const holders = lan.vipHolders();
      return holders.length === 1 && holders[0] === m ? hs[0] : undefined;
    },
    timeoutMs,
  );
}

/** What a load through the VIP saw: keyed commands and pages sent, no-answer retries, and every answer other than 2xx. */
export interface LoadStats {
  commands: number;
  pages: number;
  resets: number;
  bad: string[];
}

/**
 * Keyed valve commands (2 clients) and page requests (2 clients) through the VIP until stopped. A
 * command with no answer (the address moved under the connection) is sent again with its key; any
 * answer other than 2xx is recorded as bad.
 */
export function loadThroughVip(tag: string): { stats: LoadStats; stop(): Promise<void> } {
  const stats: LoadStats = { commands: 0, pages: 0, resets: 0, bad: [] };
  let stopped = false;
  const control = async (c: number) => {
    for (let i = 0; !stopped; i++) {
      stats.commands++;
      const key = `${tag}-${process.pid}-${c}-${i}`;
      const body = JSON.stringify({ value: i % 100 });
      for (;;) {
        const r = await request(VIP, '/cgi-bin/devices/valve3/set', { method: 'POST', body, headers: { 'idempotency-key': key }, timeoutMs: 3000 });
        if (r.status === 200) break;
        if (r.status !== 0) {
          stats.bad.push(`command ${r.status} ${r.body.slice(0, 120)} (board ${r.board}, at ${Date.now()})`);
          break;
        }
        stats.resets++;
        await new Promise((res) => setTimeout(res, 50));
      }
    }
  };
  const browse = async () => {
    while (!stopped) {
      const r = await request(VIP, '/', { timeoutMs: 3000 });
      stats.pages++;
      if (r.status === 0) stats.resets++;
      else if (r.status !== 200) stats.bad.push(`page ${r.status} ${r.body.slice(0, 120)}`);
      await new Promise((res) => setTimeout(res, 20));
    }
  };
  const clients = [control(0), control(1), browse(), browse()];
  return {
    stats,
    stop: async () => {
      stopped = true;
      await Promise.all(clients);
    },
  };
}
