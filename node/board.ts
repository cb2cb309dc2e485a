// A board: the HTTP server every client and the master talk to, the cluster link, the master's
// intake (used while this board is master), the worker, and the VIP. Wiring only: decisions are
// made by the pure cores these adapters feed.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import net, { type Socket } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { BoardConfig, Config } from '../shared/config.ts';
import { systemClock, type Clock } from '../shared/clock.ts';
import { EwsError } from '../shared/errors.ts';
import { DispatchReplayGuard } from '../shared/dispatch-replay-guard.ts';
import { FrameCodec, LINK_MAGIC, type AnswerFrame, type RequestFrame } from '../shared/dispatch-frame.ts';
import { Cancel } from '../shared/cancel.ts';
import { endToEndHeaders, readBody, relayResponse, sendError, sendJson, } from '../shared/http-io.ts';
import { createLogger, type Logger } from '../shared/log.ts';
import { Registry, type Counter } from '../shared/metrics.ts';
import type { CoreEvent } from '../shared/election.ts';
import { Intake, type LocalRun } from './http/intake.ts';
import { DispatchClient, serveLink } from './http/dispatch-link.ts';
import { CapturedAnswer } from './http/answer.ts';
import { ClusterLink } from './cluster-link.ts';
import { nextBootEpoch } from './boot-epoch.ts';
import { EventsHub } from './events-hub.ts';
import { VipManager } from './vip.ts';
import { Worker, } from './worker.ts';
import { DeviceManager, type DeviceSnapshot } from './devices/device-manager.ts';
import { DeviceDirectory, parseSnapshot } from './devices/device-directory.ts';
import { openRealPort } from './devices/serial-line.ts';
import { simulatedPortFactory, type SimulatedPorts } from './devices/simulated-ports.ts';
import { IdempotencyStore, idemWire, parseIdem } from '../shared/idempotency-store.ts';
import { IdempotentExecutor } from './idempotent-exec.ts';
import { Schedules } from './schedules.ts';
import { AuthGuard, clusterOrigins, COOKIE, needFor } from './auth/guard.ts';
import { SessionSigner } from './auth/session.ts';
import { RateLimiter } from './auth/rate-limit.ts';
import { hashPassword, verifyPassword } from './auth/password.ts';
import { MqttBridge } from './mqtt-bridge.ts';

let dummy: Promise<string> | undefined;
/** A valid hash nobody's password matches, so unknown users cost the same scrypt as known ones. */
const dummyHash = (): Promise<string> => (dummy ??= hashPassword(`no-such-user-${Math.random()}`));

export interface BoardOptions {
  cfg: Config;
  boardId: string;
  clock?: Clock;
  log?: Logger;
  /** Answer each device's port with its configured simulator (the demo). */
  simulateDevices?: boolean;
}

export interface ClusterView {
  cluster: string;
  master: string | null;
  term: number;
  boards: Array<{ id: string; address: string; url: string; linknum: number; runstate: number; role: 'master' | 'node' }>;
}

export class Board {
  readonly cfg: Config;
  readonly self: BoardConfig;
  readonly metrics = new Registry();
  readonly log: Logger;
  readonly link: ClusterLink;
  readonly intake: Intake;
  private readonly worker: Worker;
  readonly devices: DeviceManager;
  readonly directory: DeviceDirectory;
  readonly idem: IdempotentExecutor;
  private readonly simulated: SimulatedPorts | undefined;
  private readonly schedules: Schedules;
  private readonly mqtt: MqttBridge;
  private readonly guard: AuthGuard;
  private readonly loginByClient = new RateLimiter(10, 10);
  private readonly loginByUser = new RateLimiter(5, 5);
  private readonly securityHeaders: Record<string, string>;
  private readonly devicePending = new Map<string, NodeJS.Timeout>();
  private deviceRefresh: NodeJS.Timeout | undefined;
  private readonly server: http.Server;
  /** The listening socket: HTTP connections go to `server`, dispatch-link ones to the link. */
  private readonly front: net.Server;
  private readonly frames: FrameCodec;
  private readonly sockets = new Set<Socket>();
  private readonly vip: VipManager | undefined;
  private readonly hub: EventsHub;
  private readonly dispatchGuard: DispatchReplayGuard;
  private readonly masterAgent: http.Agent;
  private readonly rejected: Counter;
  private readonly loopDelay = monitorEventLoopDelay({ resolution: 10 });
  private hubTimer: NodeJS.Timeout | undefined;
  private lastPublished = '';
  private closing = false;
  private readonly clock: Clock;

  private constructor(opts: BoardOptions) {
    const { cfg } = opts;
    this.cfg = cfg;
    const self = cfg.boards.find((b) => b.id === opts.boardId);
    if (!self) throw new EwsError('BAD_REQUEST', `board "${opts.boardId}" is not in the config's boards`);
    this.self = self;
    const clock = opts.clock ?? systemClock;
    this.clock = clock;
    this.log = opts.log ?? createLogger({ board: self.id });
    this.simulated = opts.simulateDevices ? simulatedPortFactory(cfg.devices, self.index) : undefined;
    this.devices = new DeviceManager(cfg.devices, self.index, this.simulated?.factory ?? openRealPort, this.log, { queueMax: cfg.limits.serialQueueMax, backoffMaxMs: cfg.limits.serialBackoffMaxMs });
    this.directory = new DeviceDirectory(cfg.devices);
    this.devices.on('snapshot', (snap) => this.onSnapshot(snap));
    const idemStore = new IdempotencyStore(cfg.limits.idempotencyKeysMax, cfg.limits.idempotencyTtlMs);
    this.idem = new IdempotentExecutor(idemStore, self.index, () => Date.now(), (rec) => {
      // Sent twice: a lost packet must not cost a device command.
      const body = idemWire(rec, 900);
      this.link.broadcastApp('IDEM', body);
      if (rec.state === 'done') setTimeout(() => this.link.broadcastApp('IDEM', body), cfg.cluster.heartbeatMs).unref();
    });
    this.worker = new Worker(cfg, self, this.devices, this.directory, this.idem);
    this.guard = new AuthGuard(cfg, new SessionSigner(cfg.cluster.key));
    // Schedules and MQTT commands enter through this board's own port as trusted internal callers:
    // a short-lived operator session of their own, issued per call.
    const service = (name: string) => (): Record<string, string> => (this.guard.open ? {} : { authorization: `Bearer ${this.guard.signer.issue(name, 'operator', 300, Date.now()).token}` });
    this.schedules = new Schedules(cfg, self, this.log, this.metrics, service('schedule'));
    const wasted = this.metrics.counter('ews_abandoned_work_ms_total', 'Milliseconds of work done for clients that had already gone');
    this.worker.onWasted = (ms) => wasted.inc({}, Math.round(ms));
    const others = [...clusterOrigins(cfg)].filter((o) => o.startsWith('http://')).join(' ');
    this.securityHeaders = {
      'content-security-policy': `default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' ${others}; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'`,
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'same-origin',
      'cross-origin-opener-policy': 'same-origin',
    };
    this.mqtt = new MqttBridge(cfg, self, { cluster: () => this.view(), devices: () => this.directory.list() }, this.log, this.metrics, service('mqtt'));
    this.hub = new EventsHub(cfg.limits.sseClientsMax);
    this.dispatchGuard = new DispatchReplayGuard(cfg.limits.forwardReplayWindow);
    this.masterAgent = new http.Agent({ keepAlive: true, maxSockets: cfg.limits.maxConnections, timeout: cfg.limits.keepAliveTimeoutMs });
    this.rejected = this.metrics.counter('ews_forward_rejected_total', 'Requests refused because they did not come from the master, by reason');
    this.link = new ClusterLink(cfg, self, clock, nextBootEpoch(cfg.stateDir, self.id), this.metrics, this.log, (ev) => this.onEvents(ev));
    this.frames = new FrameCodec(cfg.cluster.key, cfg.limits.maxBodyBytes + cfg.limits.maxHeaderBytes + 1024);
    const linkDrops = this.metrics.counter('ews_link_dropped_total', 'Dispatch-link frames refused (the connection is closed), by reason');
    this.intake = new Intake({
      cfg, self: self.index, clock, core: this.link.core, apply: (r) => this.link.apply(r),
      link: new DispatchClient(cfg.boards, this.frames, cfg.limits.headersTimeoutMs, (reason) => linkDrops.inc({ reason })),
      executeLocal: (run, done) => this.runLocal(run, done),
      metrics: this.metrics, log: this.log, idempotency: this.idem.store,
    });
    this.link.afterApply = () => this.intake.pump();
    this.link.onApp = (msg) => {
      if (msg.type === 'REVOKE') {
        const { sid, exp } = msg.body;
        if (typeof sid === 'string' && typeof exp === 'number') this.guard.signer.revoke(sid, exp, Date.now());
        return;
      }
      if (msg.type === 'IDEM') {
        const rec = parseIdem(msg.body, cfg.boards.length);
        if (rec && rec.board === msg.sender) this.idem.store.put(rec, Date.now());
        return;
      }
      const snap = parseSnapshot(msg.body, cfg.devices);
      if (snap && this.directory.apply(snap, msg.sender)) {
        this.hub.publish('device', snap);
        this.mqtt.publishState();
      }
    };
    if (cfg.cluster.vip) this.vip = new VipManager(cfg.cluster.vip, this.log, this.metrics);
    this.loopDelay.enable();
    this.metrics.gauge('ews_role', 'This board\'s role (1 for the current one)', () => [[{ role: this.link.core.role }, 1]]);
    this.metrics.gauge('ews_term', 'Election term this board follows', () => [[{}, this.link.core.term]]);
    this.metrics.gauge('ews_linknum', 'Connections per board, as this board\'s table says', () => this.view().boards.map((b) => [{ board: b.id }, b.linknum]));
    this.metrics.gauge('ews_runstate', 'Run state per board (1 running, 0 joining, -1 down)', () => this.view().boards.map((b) => [{ board: b.id }, b.runstate]));
    this.metrics.gauge('ews_event_loop_delay_ms', 'Event loop delay since start', () => [[{ q: 'p99' }, this.loopDelay.percentile(99) / 1e6], [{ q: 'max' }, this.loopDelay.max / 1e6]]);
    this.metrics.gauge('ews_device_actions_total', 'Actions this board ran on its devices', () => [...this.devices.actionCounts].map(([k, v]) => [{ device: k.split(' ')[0]!, action: k.split(' ')[1]! }, v]));
    this.metrics.gauge('ews_idempotency_keys', 'Idempotency-Key records held', () => [[{}, this.idem.store.size]]);
    this.metrics.gauge('ews_rss_bytes', 'Resident set size', () => [[{}, process.memoryUsage.rss()]]);
    this.metrics.gauge('ews_heap_bytes', 'V8 heap and external memory', () => {
      const m = process.memoryUsage();
      return [[{ kind: 'used' }, m.heapUsed], [{ kind: 'total' }, m.heapTotal], [{ kind: 'external' }, m.external + m.arrayBuffers]];
    });

    const l = cfg.limits;
    // Node checks these timeouts only every connectionsCheckingInterval (30 s by default): tie it to the limit.
    this.server = http.createServer({ maxHeaderSize: l.maxHeaderBytes, headersTimeout: l.headersTimeoutMs, requestTimeout: l.headersTimeoutMs * 2, keepAliveTimeout: l.keepAliveTimeoutMs, connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(l.headersTimeoutMs / 4))) }, (req, res) => {
      this.onRequest(req, res).catch((err: unknown) => {
        if (!(err instanceof EwsError)) this.log.error({ err }, 'request failed');
        sendError(res, err);
      });
    });
    // One port for both: the first byte tells a dispatch-link connection (LINK_MAGIC) from HTTP.
    this.front = net.createServer({ pauseOnConnect: true, noDelay: true }, (s: Socket) => {
      if (this.link.isCut) return void s.destroy();
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => {});
      s.setTimeout(l.headersTimeoutMs, () => s.destroy());
      s.once('data', (chunk: Buffer) => {
        s.pause();
        s.setTimeout(0);
        if (chunk[0] === LINK_MAGIC) return serveLink(s, chunk.subarray(1), this.frames, { onRequest: (f, answer) => this.onLinkRequest(f, answer), onDrop: (reason) => linkDrops.inc({ reason }) }, 2 * l.maxInFlightPerBoard);
        s.unshift(chunk);
        this.server.emit('connection', s);
        process.nextTick(() => s.resume());
      });
      s.resume();
    });
    this.front.maxConnections = l.maxConnections;
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
      if (!socket.writable) return socket.destroy();
      const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
      const body = JSON.stringify({ error: { code: status === 431 ? 'HEADERS_TOO_LARGE' : 'BAD_REQUEST', message: status === 408 ? 'request took too long to arrive' : status === 431 ? 'request headers too large' : 'malformed HTTP request' } });
      socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    });
  }

  static async start(opts: BoardOptions): Promise<Board> {
    const b = new Board(opts);
    // With a floating address the board must accept connections to it too.
    const host = b.cfg.cluster.vip ? '0.0.0.0' : b.self.address;
    await new Promise<void>((resolve, reject) => {
      b.front.once('error', reject);
      b.front.listen(b.self.httpPort, host, () => {
        b.front.off('error', reject);
        // The HTTP server gets its connections from `front` and never listens itself; its
        // 'listening' event is what starts Node's headers/request timeout sweep (slowloris).
        b.server.emit('listening');
        resolve();
      });
    });
    await b.vip?.releaseStale();
    // Load the large optional libraries before joining the cluster: compiling them stalls the
    // event loop (hundreds of ms on a small board), which after joining would look like a dead
    // master and hand mastership on.
    if (b.cfg.mqtt) await import('mqtt');
    if (b.cfg.devices.some((d) => d.attach.some((a) => a.board === b.self.index))) await import('serialport');
    void b.mqtt.start();
    await b.link.start();
    b.devices.start();
    // Boards that join later learn the readings from the next refresh.
    b.deviceRefresh = setInterval(() => {
      for (const snap of b.devices.snapshots()) b.link.broadcastApp('DEVICE', { ...snap });
    }, 5000);
    b.deviceRefresh.unref();
    b.log.info({ http: `${host}:${b.self.httpPort}`, udp: b.self.udpPort, boards: b.cfg.boards.length }, 'board up');
    return b;
  }

  /** The state table as this board sees it (SPEC §4 /api/cluster). */
  view(): ClusterView {
    const core = this.link.core;
    const t = core.view();
    const m = core.master;
    return {
      cluster: this.cfg.cluster.name,
      master: m >= 0 ? this.cfg.boards[m]!.id : null,
      term: core.term,
      boards: this.cfg.boards.map((b) => ({ id: b.id, address: b.address, url: `http://${b.address}:${b.httpPort}`, linknum: t?.linknum[b.index] ?? 0, runstate: t?.runstate[b.index] ?? 0, role: b.index === m ? 'master' : 'node' })),
    };
  }

  /** Demo and tests: pull or replug this board's cable. */
  setCut(cut: boolean): void {
    this.link.setCut(cut);
    if (cut) for (const s of this.sockets) s.destroy();
    this.log.warn({ cut }, cut ? 'network cut' : 'network restored');
  }

  /** Demo: pull or replug a simulated device's cable on this board. Returns false if it is not here. */
  setDevicePlugged(deviceId: string, plugged: boolean): boolean {
    const at = this.cfg.devices.find((d) => d.id === deviceId)?.attach.find((a) => a.board === this.self.index);
    if (!at || !this.simulated) return false;
    if (plugged) this.simulated.plug(at.port);
    else this.simulated.unplug(at.port);
    this.log.warn({ device: deviceId, plugged }, plugged ? 'device plugged back in' : 'device unplugged');
    return true;
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (this.hubTimer) clearInterval(this.hubTimer);
    if (this.deviceRefresh) clearInterval(this.deviceRefresh);
    for (const t of this.devicePending.values()) clearTimeout(t);
    this.devices.stop();
    this.schedules.close();
    await this.mqtt.close();
    this.hub.close();
    this.link.close();
    this.intake.close();
    this.masterAgent.destroy();
    this.loopDelay.disable();
    await this.vip?.release();
    await new Promise<void>((resolve) => {
      this.front.close(() => resolve());
      for (const sock of this.sockets) sock.destroy();
      this.server.closeAllConnections();
    });
  }

  // ---- HTTP ----

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.link.isCut) return void req.socket.destroy();
    if (this.closing) throw new EwsError('SHUTTING_DOWN');
    const url = req.url ?? '/';
    for (const [k, v] of Object.entries(this.securityHeaders)) res.setHeader(k, v);
    // The UI fails over between boards: the cluster's own origins may call any board.
    const origin = req.headers.origin;
    if (origin && this.guard.allowedOrigin(origin)) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-allow-credentials', 'true');
      res.setHeader('vary', 'Origin');
      if (req.method === 'OPTIONS') {
        res.writeHead(204, { 'access-control-allow-methods': 'GET, POST', 'access-control-allow-headers': 'content-type, x-csrf-token, idempotency-key, authorization', 'access-control-max-age': '600' });
        return void res.end();
      }
    }
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const method = req.method ?? 'GET';
    const now = Date.now();
    const core = this.link.core;
    if (method === 'GET') {
      switch (path) {
        case '/healthz':
          return sendJson(res, 200, { board: this.self.id, role: core.role === 'master' ? 'master' : 'node', state: core.role, term: core.term, master: core.master >= 0 ? this.cfg.boards[core.master]!.id : null });
        case '/metrics': {
          const text = this.metrics.render();
          res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4', 'content-length': Buffer.byteLength(text) });
          return void res.end(text);
        }
        case '/api/session':
          return this.session(req, res);
        case '/api/cluster':
          this.guard.check(req, 'viewer', now);
          return sendJson(res, 200, this.view());
        case '/api/events':
          this.guard.check(req, 'viewer', now);
          this.hub.add(res, [['cluster', this.view()]]);
          this.startHubTimer();
          return;
        case '/api/stats':
          // The master's queue: answered by the master itself, never queued.
          if (core.role === 'master') {
            this.guard.check(req, 'viewer', now);
            return sendJson(res, 200, this.intake.stats());
          }
      }
    }
    if (method === 'POST' && path === '/api/login') return this.login(req, res);
    if (method === 'POST' && path === '/api/logout') return this.logout(req, res);
    const body = await readBody(req, this.cfg.limits.maxBodyBytes);
    if (core.role === 'master') {
      // Checked before anything is queued: the queue holds only requests that may run.
      // Checked before anything is queued; only a verified session passes admission control.
      const who = this.guard.check(req, needFor(method, path), now);
      return this.intake.handle(req, res, body, who?.session !== undefined);
    }
    // Not the master: pass it on, once. A request that was already passed on is not bounced again.
    if (req.headers['x-ews-via'] !== undefined || core.master < 0) throw new EwsError('NO_MASTER');
    this.passToMaster(req, res, body);
  }

  // ---- sessions ----

  private async login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const auth = this.cfg.auth;
    if (req.headers.origin && !this.guard.sameSite(req)) throw new EwsError('FORBIDDEN', 'cross-site login refused');
    const raw = await readBody(req, 4096);
    let name = '', password = '';
    try {
      const b = JSON.parse(raw.toString('utf8')) as { name?: unknown; password?: unknown };
      if (typeof b.name === 'string' && typeof b.password === 'string' && b.name.length <= 128 && b.password.length <= 1024) ({ name, password } = b as { name: string; password: string });
    } catch {
      /* handled below */
    }
    if (!name) throw new EwsError('BAD_REQUEST', 'send {"name": …, "password": …}');
    const now = Date.now();
    const wait = Math.max(this.loginByClient.take(req.socket.remoteAddress ?? '?', now), this.loginByUser.take(name, now));
    if (wait > 0) throw new EwsError('RATE_LIMITED', undefined, { retryAfterS: wait });
    if (!auth || auth.disabled) return sendJson(res, 200, { token: '', role: 'operator', csrf: '', expiresAt: null, open: true });
    const user = auth.users.find((u) => u.name === name);
    // The same scrypt work whether or not the user exists.
    const ok = (await verifyPassword(password, user?.passwordHash ?? (await dummyHash()))) && user !== undefined;
    if (!ok || !user) throw new EwsError('UNAUTHENTICATED', 'wrong name or password');
    const { token, session } = this.guard.signer.issue(user.name, user.role, auth.sessionTtlS, now);
    const secure = (req.socket as { encrypted?: boolean }).encrypted ? '; Secure' : '';
    res.setHeader('set-cookie', `${COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${auth.sessionTtlS}${secure}`);
    sendJson(res, 200, { token, role: user.role, user: user.name, csrf: this.guard.signer.csrf(session), expiresAt: session.exp * 1000 });
  }

  private logout(req: IncomingMessage, res: ServerResponse): void {
    if (req.headers.origin && !this.guard.sameSite(req)) throw new EwsError('FORBIDDEN', 'cross-site logout refused');
    // The token dies everywhere, not just the cookie here: sent twice, as a lost packet must not keep it alive.
    const p = this.guard.principal(req, Date.now());
    if (p?.session) {
      this.guard.signer.revoke(p.session.sid, p.session.exp, Date.now());
      const body = { sid: p.session.sid, exp: p.session.exp };
      this.link.broadcastApp('REVOKE', body);
      setTimeout(() => this.link.broadcastApp('REVOKE', body), this.cfg.cluster.heartbeatMs).unref();
    }
    res.setHeader('set-cookie', `${COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`);
    sendJson(res, 200, { ok: true });
  }

  private session(req: IncomingMessage, res: ServerResponse): void {
    const p = this.guard.principal(req, Date.now());
    if (!p) throw new EwsError('UNAUTHENTICATED', 'not logged in');
    sendJson(res, 200, { user: p.user, role: p.role, csrf: p.session ? this.guard.signer.csrf(p.session) : '', expiresAt: p.session ? p.session.exp * 1000 : null, open: p.via === 'open' });
  }

  /** A request the master dispatched to this board over the dispatch link. */
  private onLinkRequest(f: RequestFrame, answer: (a: AnswerFrame) => void): { cancel(): void } | undefined {
    const core = this.link.core;
    let reason = '';
    if (f.target !== this.self.index) reason = 'target';
    else if (f.master === this.self.index) reason = 'self';
    else if (!(f.term > core.term || (f.term === core.term && f.master === core.master))) reason = 'stale';
    else if (!this.dispatchGuard.accept(f)) reason = 'replay';
    const cls = this.cfg.classes[f.cls];
    if (!reason && !cls) reason = 'class';
    const reply = (status: number, headers: string[], body: Buffer): void => answer({ id: f.id, load: core.load, status, headers, body });
    if (reason || !cls) {
      this.rejected.inc({ reason });
      const out = new CapturedAnswer(reply);
      sendError(out, new EwsError('NOT_FROM_MASTER'));
      return undefined;
    }
    const headers: IncomingMessage['headers'] = {};
    for (let i = 0; i < f.headers.length; i += 2) headers[f.headers[i]!] = f.headers[i + 1]!;
    const cancel = new Cancel();
    const out = new CapturedAnswer((status, h, body) => {
      core.finished();
      reply(status, h, body);
    });
    core.accepted();
    this.worker.execute({ method: f.method, url: f.url, headers, body: f.body, cls: cls.name, tree: f.tree, origin: f.origin, signal: cancel }, out).catch((err: unknown) => sendError(out, err)).finally(() => {
      if (!out.writableFinished) out.destroy();
    });
    return cancel;
  }

  /** The master runs a request itself: `done` when its answer is over (or the client left). */
  private runLocal(run: LocalRun, done: () => void): { cancel(): void } {
    const core = this.link.core;
    const cancel = new Cancel();
    core.accepted();
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      core.finished();
      done();
    };
    run.res.once('close', end);
    this.worker.execute({ method: run.method, url: run.url, headers: run.headers, body: run.body, cls: run.cls, tree: run.tree, origin: run.origin, signal: cancel }, run.res).catch((err: unknown) => sendError(run.res, err)).finally(() => {
      if (run.res.writableFinished || run.res.destroyed) end();
    });
    return cancel;
  }

  private passToMaster(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
    const m = this.cfg.boards[this.link.core.master]!;
    const headers: Record<string, string | string[]> = endToEndHeaders(req.headers);
    // The master checks origins against the Host the browser used.
    if (req.headers.host) headers.host = req.headers.host;
    headers['x-ews-via'] = this.self.id;
    headers['x-forwarded-for'] = req.socket.remoteAddress ?? '';
    headers['content-length'] = String(body.length);
    const up = http.request({ host: m.address, port: m.httpPort, method: req.method, path: req.url, headers, agent: this.masterAgent, timeout: this.cfg.limits.requestTimeoutMs });
    if (this.link.isCut) process.nextTick(() => up.destroy(new Error('network cut')));
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    up.on('response', (ur) => relayResponse(ur, res));
    up.on('timeout', () => up.destroy(new EwsError('DISPATCH_TIMEOUT', `master ${m.id} did not answer in time`)));
    up.on('error', (err) => sendError(res, err instanceof EwsError ? err : new EwsError('NO_MASTER', `master ${m.id} unreachable`)));
    up.end(body);
  }

  // ---- cluster events ----

  private onEvents(events: CoreEvent[]): void {
    for (const e of events) {
      if (e.kind === 'role') {
        this.log.info({ role: e.role, term: e.term, master: this.cfg.boards[e.master]?.id, previous: e.previous }, 'role');
        this.mqtt.setMaster(e.role === 'master');
        if (e.role === 'master') this.mqtt.republish();
        if (e.role === 'master') {
          void this.vip?.claim();
          if (!this.closing) this.schedules.start();
        } else if (e.previous === 'master') {
          void this.vip?.release();
          this.schedules.stop();
          // Step down: whatever is still queued here goes to the new master.
          for (const p of this.intake.drain()) this.passToMaster(p.req, p.res, p.body);
        }
      } else if (e.kind === 'runstate') {
        this.log.info({ peer: this.cfg.boards[e.board]?.id, runstate: e.runstate }, 'board runstate');
        if (e.runstate === -1) this.directory.boardDown(e.board);
      } else if (e.kind === 'stale-master') {
        this.log.warn({ peer: this.cfg.boards[e.board]?.id, term: e.term }, 'another board still claims to be master');
        void this.vip?.announce();
        this.mqtt.republish();
      }
    }
    this.publishCluster();
  }

  /** A local device changed: record it, and tell the cluster (coalesced per device). */
  private onSnapshot(snap: DeviceSnapshot): void {
    this.directory.apply(snap, this.self.index);
    this.hub.publish('device', snap);
    this.mqtt.publishState();
    if (this.devicePending.has(snap.id)) return;
    this.devicePending.set(snap.id, setTimeout(() => {
      this.devicePending.delete(snap.id);
      const latest = this.devices.snapshots().find((s) => s.id === snap.id);
      if (latest && !this.link.broadcastApp('DEVICE', { ...latest })) this.log.warn({ device: snap.id }, 'device reading too large for one packet');
    }, 100));
  }

  private startHubTimer(): void {
    if (this.hubTimer) return;
    this.hubTimer = setInterval(() => {
      if (this.hub.size === 0) {
        clearInterval(this.hubTimer);
        this.hubTimer = undefined;
        return;
      }
      this.publishCluster();
    }, 250);
    this.hubTimer.unref();
  }

  private publishCluster(): void {
    this.mqtt.publishState();
    if (this.hub.size === 0) return;
    const v = this.view();
    const s = JSON.stringify(v);
    if (s === this.lastPublished) return;
    this.lastPublished = s;
    this.hub.publish('cluster', v);
  }
}
