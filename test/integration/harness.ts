// Real board processes on loopback for integration tests.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { hashPassword } from '../../node/auth/password.ts';
import { BOARD_NODE_FLAGS } from '../../shared/node-flags.ts';

export const ROOT = resolve(import.meta.dirname, '../..');
/** `ews start` with a cable the tests can pull (dev/cabled-board.ts). */
const CLI = join(ROOT, 'dev/cabled-board.ts');
/** The built bundle, as boards run it (`npm run build`). */
export const BUNDLE = join(ROOT, 'dist/ews.js');

/** Ports nobody holds right now (TCP and UDP both free). */
export async function freePorts(n: number): Promise<number[]> {
  const out: number[] = [];
  while (out.length < n) {
    const port = await new Promise<number>((res, rej) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => res(p));
      });
      s.on('error', rej);
    });
    const udpFree = await new Promise<boolean>((res) => {
      const u = dgram.createSocket('udp4');
      u.once('error', () => res(false));
      u.bind(port, '127.0.0.1', () => u.close(() => res(true)));
    });
    if (udpFree && !out.includes(port)) out.push(port);
  }
  return out;
}

export interface TestCluster {
  dir: string;
  file: string;
  key: string;
  config: Record<string, unknown>;
  boards: Array<{ id: string; url: string; httpPort: number; udpPort: number }>;
  procs: Map<string, ChildProcess>;
  logs: Map<string, string>;
  /** Sent with the harness's own reads of /api/cluster (a viewer's token when login is on). */
  headers: Record<string, string>;
  /** With `tls`: the CA the harness trusts (the boards speak HTTPS only). */
  ca: Buffer | undefined;
  /** Start a board (from its own `file` when given: a board with another config). */
  start(id: string, file?: string): ChildProcess;
  /** Pull (true) or replug (false) a board's network cable, as the demo does. */
  cut(id: string, cut: boolean): void;
  kill(id: string, signal?: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The clusters' directories (config with its cluster key, the boards' state) go when the test
 * file's process ends: a test may stop a cluster and start it again (a power cut).
 */
const clusterDirs = new Set<string>();
process.once('exit', () => {
  for (const d of clusterDirs) rmSync(d, { recursive: true, force: true });
});

/**
 * `opts.bundle`: boards run the built bundle with the board flags (no cable to pull, no simulated devices);
 * `opts.bundleOf`: a board's own bundle when it returns one (another release), asked at each start.
 */
export async function makeCluster(
  n: number,
  overrides: (cfg: Record<string, unknown>) => void = () => {},
  opts: { args?: string[]; bundle?: boolean; bundleOf?: (id: string) => string | undefined; ca?: Buffer } = {},
): Promise<TestCluster> {
  const ports = await freePorts(2 * n);
  const key = randomBytes(32).toString('hex');
  const boards = Array.from({ length: n }, (_, i) => ({ id: `b${i + 1}`, address: '127.0.0.1', httpPort: ports[2 * i]!, udpPort: ports[2 * i + 1]! }));
  const dir = mkdtempSync(join(tmpdir(), 'ews-it-'));
  clusterDirs.add(dir);
  // Durable, as boards are by default, in the test's own directory (never /var/lib/ews).
  const config: Record<string, unknown> = {
    cluster: { name: 'test', key, broadcast: 'peers', heartbeatMs: 50, tmaxMs: 300, tthresholdMs: 300, staggerMs: 100 },
    boards,
    auth: { disabled: true },
    stateDir: join(dir, 'state'),
  };
  overrides(config);
  const file = join(dir, 'cluster.json');
  writeFileSync(file, JSON.stringify(config));
  const procs = new Map<string, ChildProcess>();
  const logs = new Map<string, string>();
  const c: TestCluster = {
    dir,
    file,
    key,
    config,
    procs,
    logs,
    headers: {},
    ca: opts.ca,
    boards: boards.map((b) => ({ ...b, url: `${opts.ca ? 'https' : 'http'}://127.0.0.1:${b.httpPort}` })),
    start(id, own = file) {
      const argv = opts.bundle ? [...BOARD_NODE_FLAGS, opts.bundleOf?.(id) ?? BUNDLE] : ['--import', 'tsx', CLI];
      const p = spawn(process.execPath, [...argv, 'start', '--config', own, '--board', id, ...(opts.args ?? [])], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
        env: { ...process.env, EWS_LOG_LEVEL: 'warn' },
      });
      logs.set(id, '');
      const append = (d: Buffer) => logs.set(id, (logs.get(id) ?? '').slice(-20_000) + d.toString());
      p.stdout!.on('data', append);
      p.stderr!.on('data', append);
      procs.set(id, p);
      return p;
    },
    cut(id, cut) {
      procs.get(id)?.send({ cut });
    },
    async kill(id, signal = 'SIGKILL') {
      const p = procs.get(id);
      if (!p || p.exitCode !== null || p.signalCode !== null) return;
      const exited = new Promise<void>((r) => p.once('exit', () => r()));
      p.kill(signal);
      await exited;
      procs.delete(id);
    },
    async stop() {
      await Promise.all([...procs.keys()].map((id) => c.kill(id, 'SIGTERM')));
    },
  };
  // The first board first, the rest once it answers: which board is master after boot must not
  // depend on how long each process takes to compile (a race the suite lost on a loaded machine).
  c.start(boards[0]!.id);
  await waitFor(`${boards[0]!.id} up`, async () => (await httpGet(`${c.boards[0]!.url}/healthz`, { ca: opts.ca })).status === 200, 30_000, 50);
  for (const b of boards.slice(1)) c.start(b.id);
  return c;
}

/** Wait for a condition, checking on every `everyMs`; fails with what was last seen. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 10_000, everyMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
      last = v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A request's status and text; a request that failed on the way (a board killed under it) is status 0. */
export function outcome(request: Promise<Response>): Promise<{ status: number; text: string }> {
  return request.then(
    async (r) => ({ status: r.status, text: await r.text() }),
    (e: Error) => ({ status: 0, text: e.message }),
  );
}

/** Retry a request until it answers `status` (a keyed retry after a crash: the final answer). */
export function retryUntil(status: number, request: () => Promise<{ status: number; text: string }>, timeoutMs: number): Promise<{ status: number; text: string }> {
  return waitFor(
    `a ${status} answer to the retry`,
    async () => {
      const r = await request();
      return r.status === status ? r : undefined;
    },
    timeoutMs,
    100,
  );
}

export interface ClusterJson {
  cluster: string;
  master: string | null;
  term: number;
  boards: Array<{ id: string; address: string; linknum: number; runstate: number; role: string }>;
}

export async function getJson<T>(url: string, headers: Record<string, string> = {}, ca?: Buffer): Promise<T> {
  return JSON.parse((await httpGet(url, { headers, ca })).text) as T;
}

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** One request over HTTP, or HTTPS trusting `ca` (fetch cannot be given a CA without undici). */
export function httpGet(url: string, opts: { method?: string; headers?: Record<string, string>; body?: string; ca?: Buffer; timeoutMs?: number } = {}): Promise<HttpAnswer> {
  const u = new URL(url);
  const request = u.protocol === 'https:' ? https.request : http.request;
  return new Promise((resolveAnswer, reject) => {
    const q = request(u, { method: opts.method ?? 'GET', headers: opts.headers, timeout: opts.timeoutMs ?? 3000, ...(opts.ca ? { ca: opts.ca } : {}) }, (r) => {
      let text = '';
      r.setEncoding('utf8');
      r.on('data', (d: string) => (text += d));
      r.on('end', () => resolveAnswer({ status: r.statusCode ?? 0, headers: r.headers, text }));
      r.on('error', reject);
    });
    q.on('timeout', () => q.destroy(new Error('timeout')));
    q.on('error', reject);
    q.end(opts.body);
  });
}

/** Every listed board reports the same master and term and sees all `running` boards as runstate 1. */
export async function converged(c: TestCluster, ids = c.boards.map((b) => b.id), running = ids, accept: (v: ClusterJson) => boolean = () => true): Promise<ClusterJson> {
  return waitFor(`cluster of ${ids.join(',')} to converge`, async () => {
    const views = await Promise.all(ids.map((id) => getJson<ClusterJson>(`${c.boards.find((b) => b.id === id)!.url}/api/cluster`, c.headers, c.ca)));
    const v0 = views[0]!;
    if (v0.master === null) return undefined;
    for (const v of views) if (v.master !== v0.master || v.term !== v0.term) return undefined;
    for (const id of running) if (v0.boards.find((b) => b.id === id)?.runstate !== 1) return undefined;
    return accept(v0) ? v0 : undefined;
  });
}

export async function metric(url: string, name: string, labels: Record<string, string> = {}, ca?: Buffer): Promise<number> {
  const text = ca ? (await httpGet(`${url}/metrics`, { ca })).text : await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(3000) })).text();
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    if (want.every((w) => (m[2] ?? '').includes(w))) sum += Number(m[3]);
  }
  return sum;
}

/** A raw HTTP exchange on a socket (for what fetch will not send: bad paths, slow or malformed requests). */
export function rawRequest(port: number, text: string, { endAfterWrite = false, timeoutMs = 15_000 } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let out = '';
    s.on('data', (d) => (out += d.toString()));
    s.on('close', () => resolve(out));
    s.on('error', reject);
    s.setTimeout(timeoutMs, () => s.destroy());
    s.write(text);
    if (endAfterWrite) s.end();
  });
}

/** The tests' operator and admin: `auth.users` for a config, and a login that answers their token. */
export const OPERATOR = { name: 'olga', password: 'operator-pass-1' };
export const ADMIN = { name: 'ada', password: 'admin-pass-1' };
export async function testUsers(): Promise<Array<{ name: string; role: string; passwordHash: string }>> {
  return [
    { name: OPERATOR.name, role: 'operator', passwordHash: await hashPassword(OPERATOR.password) },
    { name: ADMIN.name, role: 'admin', passwordHash: await hashPassword(ADMIN.password) },
  ];
}
/** Log in at `url` (a board); the session token. */
export async function login(url: string, who: { name: string; password: string } = OPERATOR): Promise<string> {
  const r = await httpGet(`${url}/api/login`, { method: 'POST', body: JSON.stringify(who), headers: { 'content-type': 'application/json' } });
  if (r.status !== 200) throw new Error(`login as ${who.name}: ${r.status} ${r.text}`);
  return (JSON.parse(r.text) as { token: string }).token;
}
