// The master's request path: classify → bounded queue (the scheduler) → least-connection board
// → forward with a signed dispatch header over keep-alive → relay the answer. The pure parts
// (classifier, scheduler, least-connection, state table) decide; this file does the I/O.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Config } from '../shared/config.ts';
import { EwsError } from '../shared/errors.ts';
import { DISPATCH_HEADER, signDispatch } from '../shared/forward-auth.ts';
import { endToEndHeaders, relayResponse, sendError } from '../shared/http-io.ts';
import type { Clock } from '../shared/clock.ts';
import type { Counter, Registry } from '../shared/metrics.ts';
import type { Logger } from '../shared/log.ts';
import type { ClusterCore, Ready } from '../shared/election.ts';
import { createClassifier, type Classifier } from './classify.ts';
import type { Outcome, QueueItem, Scheduler } from './scheduler.ts';
import { schedulerFor } from './scheduler-factory.ts';
import { AdmissionController } from './qos/admission.ts';
import { LoadMonitor, treeFor, UtilizationController } from './qos/adaptation.ts';
import { QuotaController } from './qos/quota.ts';
import { cookieValue } from '../node/auth/guard.ts';
import { leastConnection } from './least-connection.ts';
import { deviceTarget } from './device-route.ts';
import { KEY_RE, requestHash, type IdempotencyStore } from '../node/idempotency-store.ts';
import { TREES } from '../node/ui/site.ts';

export interface Pending extends QueueItem {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly body: Buffer;
  /** Boards that already failed this request (not tried again). */
  readonly tried: Set<number>;
  /** Boards allowed to serve it (a device's attach list); undefined = any. */
  readonly candidates: readonly number[] | undefined;
  attempts: number;
  done: boolean;
  abort: AbortController;
  /** The admission period in which it went to the reserve queue (admission control). */
  reservedAt?: number;
}

export interface IntakeDeps {
  cfg: Config;
  self: number;
  clock: Clock;
  core: ClusterCore;
  /** Send a core decision batch out (the cluster link). */
  apply(r: Ready): void;
  /** Execute on this board (the master is a worker too). Resolves when the answer is over. */
  executeLocal(p: { method: string; url: string; headers: IncomingMessage['headers']; body: Buffer; cls: string; tree: number; id: number; signal: AbortSignal }, res: ServerResponse): Promise<void>;
  /** Whether this board's network is cut (demo / tests). */
  isCut(): boolean;
  metrics: Registry;
  log: Logger;
  /** Recent Idempotency-Key records (this board's, and those other boards shared). */
  idempotency: IdempotencyStore;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const NOT_DELIVERED = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTCONN']);
const SCAN_MAX = 16;

export class Intake {
  private classifier: Classifier;
  readonly scheduler: Scheduler<Pending>;
  private readonly agents: http.Agent[];
  private nextId = 1;
  private lastPick = -1;
  private readonly outcomes: Counter;
  private readonly perBoard: Counter;
  private readonly expireTimer: NodeJS.Timeout;
  private pumping = false;
  private readonly inflight: number[];
  private readonly reserve: Pending[][];
  private readonly respSum: number[];
  private readonly respCount: number[];
  private readonly admission: AdmissionController | undefined;
  private readonly adapt: { monitor: LoadMonitor; ctl: UtilizationController; U: number } | undefined;
  private readonly quota: QuotaController | undefined;
  private periodTimer: NodeJS.Timeout | undefined;
  private periodN = 0;
  private readonly boardAddresses: ReadonlySet<string>;
  /** Recent service time per class (dispatch to answer), to refuse what can no longer finish in time. */
  private readonly serviceMs: number[];

  constructor(private readonly d: IntakeDeps) {
    const { cfg } = d;
    this.classifier = createClassifier(cfg.classes);
    this.scheduler = schedulerFor<Pending>(cfg, { maxQueueBytes: cfg.limits.maxQueueBytes, scanMax: SCAN_MAX });
    const q = cfg.qos;
    this.inflight = cfg.classes.map(() => 0);
    this.boardAddresses = new Set(cfg.boards.map((b) => b.address));
    this.serviceMs = cfg.classes.map(() => 0);
    this.reserve = cfg.classes.map(() => []);
    this.respSum = cfg.classes.map(() => 0);
    this.respCount = cfg.classes.map(() => 0);
    if (q.admission) this.admission = new AdmissionController(cfg.classes.length, { ...q.admission, targetQueue: cfg.classes.map(() => q.admission!.targetQueue) }, Math.random);
    if (q.adaptation) this.adapt = { monitor: new LoadMonitor(), ctl: new UtilizationController(TREES, q.adaptation.targetUtilization, q.adaptation.k), U: 0 };
    if (q.quota) this.quota = new QuotaController(cfg.classes.map((c) => ({ targetMs: c.targetMs, priority: c.priority })), cfg.boards.length * cfg.limits.maxInFlightPerBoard, q.quota.gain);
    if (this.admission || this.adapt || this.quota || this.scheduler.periodic) this.periodTimer = setInterval(() => this.period(), q.periodMs).unref();
    this.agents = cfg.boards.map(() => new http.Agent({ keepAlive: true, maxSockets: cfg.limits.maxInFlightPerBoard, maxFreeSockets: cfg.limits.maxInFlightPerBoard, timeout: cfg.limits.keepAliveTimeoutMs }));
    this.outcomes = d.metrics.counter('ews_requests_total', 'Client requests at the master, by class and outcome');
    this.perBoard = d.metrics.counter('ews_dispatched_total', 'Requests dispatched, by executing board');
    d.metrics.gauge('ews_queue_length', 'Requests waiting at the master, by class', () => cfg.classes.map((c, i) => [{ class: c.name }, this.scheduler.size(i)]));
    d.metrics.gauge('ews_queue_bytes', 'Body bytes held by queued requests', () => [[{}, this.scheduler.bytes()]]);
    d.metrics.gauge('ews_qos', 'QoS controller state (SPEC §7): weights, patterns\' CF, proQoS, target_in, p, G, U, quotas', () => this.qosMetrics());
    const tickMs = Math.max(10, Math.min(250, Math.min(...cfg.classes.map((c) => c.deadlineMs)) / 4));
    this.expireTimer = setInterval(() => this.expire(), tickMs).unref();
  }

  close(): void {
    clearInterval(this.expireTimer);
    if (this.periodTimer) clearInterval(this.periodTimer);
    for (const a of this.agents) a.destroy();
  }

  /** A client request at the master, body already read (bounded). */
  handle(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const cls = this.classifier.classify(req.method ?? 'GET', q < 0 ? url : url.slice(0, q), { headers: req.headers, client: this.clientOfReq(req) });
    const clsName = this.d.cfg.classes[cls]!.name;
    let candidates: number[] | undefined;
    try {
      const path = q < 0 ? url : url.slice(0, q);
      const t = deviceTarget(path, req.method ?? 'GET', this.d.cfg.devices);
      if (t) candidates = t.device.attach.map((a) => a.board);
      const key = req.headers['idempotency-key'];
      if (t && req.method === 'POST' && typeof key === 'string' && KEY_RE.test(key)) {
        // A retry: answer it from the record, or send it where the first attempt runs.
        const c = this.d.idempotency.check(key, requestHash('POST', path, body), Date.now());
        if (c.kind === 'conflict') throw new EwsError('IDEMPOTENCY_CONFLICT');
        if (c.kind === 'done' && c.rec.body !== undefined) {
          this.outcomes.inc({ class: clsName, outcome: 'replayed' });
          res.writeHead(c.rec.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(c.rec.body), 'idempotent-replayed': 'true', 'x-ews-board': this.d.cfg.boards[c.rec.board]!.id, 'x-ews-class': clsName });
          return void res.end(c.rec.body);
        }
        const holder = c.kind === 'pending' ? c.board : c.kind === 'done' ? c.rec.board : -1;
        if (holder >= 0 && candidates?.includes(holder) && this.d.core.table.runstate(holder) === 1) candidates = [holder];
      }
    } catch (e) {
      this.outcomes.inc({ class: clsName, outcome: 'rejected' });
      return sendError(res, e);
    }
    const p: Pending = { cls, bytes: body.length, enqueuedMs: this.d.clock.now(), req, res, body, tried: new Set(), candidates, attempts: 0, done: false, abort: new AbortController() };
    // A client that goes away leaves the queue (or the reserve) at once; if dispatched, its board stops the work.
    res.on('close', () => {
      if (p.done) return;
      p.done = true;
      if (this.scheduler.remove(p) || this.unreserve(p)) this.outcomes.inc({ class: clsName, outcome: 'gone' });
      p.abort.abort();
    });
    // Admission control (paper 000): requests of existing sessions always pass; others pass with
    // probability p up to target_in, the rest wait in the reserve queue for the next period.
    if (this.admission && this.admission.arrive(cls, cookieValue(req.headers.cookie, 'ews_session') !== undefined) === 'reserve') {
      const held = this.reserve.reduce((n, r) => n + r.length, 0);
      if (held >= this.d.cfg.qos.admission!.reserveMax) return this.refuse(p, 'shed', new EwsError('QUEUE_FULL', 'the reserve queue is full', { retryAfterS: 1 }));
      p.reservedAt = this.periodN;
      this.reserve[cls]!.push(p);
      return;
    }
    const r = this.scheduler.enqueue(p);
    if (r !== 'ok') {
      this.outcomes.inc({ class: clsName, outcome: 'shed' });
      p.done = true;
      this.scheduler.completed(p, this.dropped(), this.d.clock.now());
      sendError(res, new EwsError('QUEUE_FULL', r === 'class-full' ? `queue for class ${clsName} is full` : 'queued bytes at the limit', { retryAfterS: 1 }));
      return;
    }
    this.pump();
  }

  /** Dispatch while there is work and a board with room for it. */
  pump(): void {
    if (this.pumping || this.d.core.role !== 'master') return;
    this.pumping = true;
    try {
      const cap = this.d.cfg.limits.maxInFlightPerBoard;
      const table = this.d.core.table;
      for (;;) {
        let chosen = -1;
        const item = this.scheduler.take(this.d.clock.now(), (p) => {
          if (this.quota && !this.quota.canRun(p.cls, this.inflight[p.cls]!)) return false;
          const b = leastConnection(table, cap, this.lastPick, p.tried.size || p.candidates ? this.candidates(p) : undefined);
          if (b === undefined) return false;
          chosen = b;
          return true;
        });
        if (!item) break;
        // It would finish after its class deadline (waited + the recent service time): answer now
        // rather than spend a board on an answer its client will not wait for.
        const c = this.d.cfg.classes[item.cls]!;
        if (this.d.clock.now() - item.enqueuedMs + this.serviceMs[item.cls]! > c.deadlineMs) {
          this.refuse(item, 'expired', new EwsError('QUEUE_TIMEOUT', 'it could not be served within its deadline', { retryAfterS: 1 }));
          continue;
        }
        this.lastPick = chosen;
        this.dispatch(item, chosen);
      }
    } finally {
      this.pumping = false;
    }
  }

  /** The queue and what went through it, per class (for the UI's chart). */
  stats(): { at: number; qos: Record<string, unknown>; classes: Array<{ name: string; queued: number; served: number; shed: number; expired: number }> } {
    return {
      at: Date.now(),
      qos: this.qosState(),
      classes: this.d.cfg.classes.map((c, i) => ({
        name: c.name, queued: this.scheduler.size(i),
        served: this.outcomes.get({ class: c.name, outcome: 'served' }) + this.outcomes.get({ class: c.name, outcome: 'replayed' }),
        shed: this.outcomes.get({ class: c.name, outcome: 'shed' }), expired: this.outcomes.get({ class: c.name, outcome: 'expired' }),
      })),
    };
  }

  private dropped(): Outcome {
    return { responseMs: 0, level: 0, levels: TREES, deadlineMet: false };
  }

  /** Answer now with an explicit refusal: counted, fed back as a dropped response. */
  private refuse(p: Pending, outcome: string, err: EwsError): void {
    p.done = true;
    this.outcomes.inc({ class: this.d.cfg.classes[p.cls]!.name, outcome });
    this.scheduler.completed(p, this.dropped(), this.d.clock.now());
    sendError(p.res, err);
  }

  private unreserve(p: Pending): boolean {
    const r = this.reserve[p.cls]!;
    const i = r.indexOf(p);
    if (i < 0) return false;
    r.splice(i, 1);
    return true;
  }

  /** The client's address: X-Forwarded-For only from a board of the cluster (the hop that sets it). */
  private clientOfReq(req: IncomingMessage): string {
    const peer = (req.socket.remoteAddress ?? '?').replace(/^::ffff:/, '');
    if (!this.boardAddresses.has(peer)) return peer;
    const xff = req.headers['x-forwarded-for'];
    const first = typeof xff === 'string' ? xff.split(',')[0]!.trim() : '';
    return first || peer;
  }

  /** SIGHUP: new match rules for the same classes take effect for the next request. */
  reclassify(classes: Config['classes']): boolean {
    const same = classes.length === this.d.cfg.classes.length && classes.every((c, i) => c.name === this.d.cfg.classes[i]!.name);
    if (same) this.classifier = createClassifier(classes);
    return same;
  }

  /** One control period of every QoS loop. */
  private period(): void {
    this.periodN++;
    const { cfg } = this.d;
    if (this.admission) {
      const topUp = this.admission.period(cfg.classes.map((_, i) => this.scheduler.size(i)));
      this.reserve.forEach((r, cls) => {
        // Persistence: reserved requests go before new ones, oldest first; then the stale are refused.
        let n = 0;
        while (n < topUp[cls]! && r.length > 0) {
          const p = r.shift()!;
          if (this.scheduler.enqueue(p) !== 'ok') {
            r.unshift(p);
            break;
          }
          n++;
        }
        this.admission!.admittedFromReserve(cls, n);
        while (r.length > 0 && this.periodN - r[0]!.reservedAt! >= cfg.qos.admission!.refuseAfterPeriods) {
          this.refuse(r.shift()!, 'refused', new EwsError('QUEUE_FULL', `refused after ${cfg.qos.admission!.refuseAfterPeriods} periods in the reserve queue`, { retryAfterS: 2 }));
        }
      });
    }
    if (this.adapt) {
      const a = cfg.qos.adaptation!;
      this.adapt.U = this.adapt.monitor.take(cfg.qos.periodMs, a.a, a.b).U;
      this.adapt.ctl.step(this.adapt.U);
    }
    if (this.quota) {
      this.quota.period(this.respCount.map((n, i) => (n > 0 ? this.respSum[i]! / n : undefined)));
      this.respSum.fill(0);
      this.respCount.fill(0);
    }
    this.scheduler.tick(this.d.clock.now());
    this.pump();
  }

  private qosMetrics(): Array<[Record<string, string | number>, number]> {
    const out: Array<[Record<string, string | number>, number]> = [];
    const names = this.d.cfg.classes.map((c) => c.name);
    for (const [k, v] of Object.entries(this.qosState())) {
      if (typeof v === 'number') out.push([{ name: k }, v]);
      else if (Array.isArray(v)) {
        v.forEach((x, i) => {
          if (typeof x === 'number') out.push([{ name: k, class: names[i] ?? i }, x]);
          else if (x && typeof x === 'object') for (const [kk, vv] of Object.entries(x)) if (typeof vv === 'number') out.push([{ name: `${k}_${kk}`, class: names[i] ?? i }, vv]);
        });
      }
    }
    return out;
  }

  /** Every controller's state, for /metrics, /api/stats and the UI. */
  qosState(): Record<string, unknown> {
    return {
      scheduler: this.d.cfg.qos.scheduler, ...this.scheduler.state(),
      ...(this.admission ? { admission: this.admission.classes.map((c) => ({ targetIn: Number.isFinite(c.targetIn) ? +c.targetIn.toFixed(2) : null, p: +c.p.toFixed(3), q: c.q, e: c.e, predicted: +c.predicted.toFixed(2) })), reserve: this.reserve.map((r) => r.length) } : {}),
      ...(this.adapt ? { G: +this.adapt.ctl.G.toFixed(3), U: +this.adapt.U.toFixed(3) } : {}),
      ...(this.quota ? { quotas: [...this.quota.quotas] } : {}),
      inflight: [...this.inflight],
    };
  }

  /** Step-down: hand back everything still queued (the caller passes it to the new master). */
  drain(): Pending[] {
    const reserved = this.reserve.flatMap((r) => r.splice(0));
    return [...this.scheduler.drain(), ...reserved].filter((p) => !p.done);
  }

  private candidates(p: Pending): number[] {
    return (p.candidates ?? this.d.cfg.boards.map((b) => b.index)).filter((i) => !p.tried.has(i));
  }

  private expire(): void {
    for (const p of this.scheduler.expire(this.d.clock.now())) {
      p.done = true;
      this.scheduler.completed(p, { ...this.dropped(), responseMs: this.d.clock.now() - p.enqueuedMs }, this.d.clock.now());
      this.outcomes.inc({ class: this.d.cfg.classes[p.cls]!.name, outcome: 'expired' });
      sendError(p.res, new EwsError('QUEUE_TIMEOUT', undefined, { retryAfterS: 1 }));
    }
    if (this.scheduler.size() > 0) this.pump();
  }

  private dispatch(p: Pending, board: number): void {
    const { core, clock, cfg } = this.d;
    const clsName = cfg.classes[p.cls]!.name;
    const method = p.req.method ?? 'GET';
    const url = p.req.url ?? '/';
    // The content level (papers 000/002): pages adapt to load by client; device control never does.
    const page = (method === 'GET' || method === 'HEAD') && !url.startsWith('/cgi-bin/') && !url.startsWith('/api/');
    const tree = this.adapt && page ? treeFor(this.adapt.ctl.G, this.clientOfReq(p.req), TREES) : TREES;
    if (tree === 0) return this.refuse(p, 'shed', new EwsError('OVERLOADED', undefined, { retryAfterS: 2 }));
    const id = this.nextId;
    this.nextId = this.nextId >= 0xffffffff ? 1 : this.nextId + 1;
    p.attempts++;
    this.d.apply(core.dispatched(board, clock.now()));
    let completed = false;
    const complete = (): void => {
      if (completed) return;
      completed = true;
      const now = clock.now();
      this.inflight[p.cls]!--;
      const responseMs = now - p.enqueuedMs;
      const served = now - dispatchedAt;
      this.serviceMs[p.cls] = this.serviceMs[p.cls] === 0 ? served : 0.8 * this.serviceMs[p.cls]! + 0.2 * served;
      this.respSum[p.cls]! += responseMs;
      this.respCount[p.cls]!++;
      if (!bytes) bytes = Number(p.res.getHeader('content-length') ?? 0) || 0;
      this.adapt?.monitor.record(bytes);
      const outcome: Outcome = { responseMs, serviceMs: served, level: tree, levels: TREES, deadlineMet: responseMs <= cfg.classes[p.cls]!.targetMs };
      this.scheduler.completed(p, outcome, now);
      this.d.apply(core.completed(board, now));
      this.pump();
    };
    this.inflight[p.cls]!++;
    const dispatchedAt = clock.now();
    let bytes = 0;

    if (board === this.d.self) {
      this.d
        .executeLocal({ method, url, headers: p.req.headers, body: p.body, cls: clsName, tree, id, signal: p.abort.signal }, p.res)
        .catch((err: unknown) => sendError(p.res, err))
        .finally(() => {
          p.done = true;
          this.outcomes.inc({ class: clsName, outcome: 'served' });
          complete();
        });
      return;
    }

    const target = cfg.boards[board]!;
    const headers: Record<string, string | string[]> = endToEndHeaders(p.req.headers);
    headers[DISPATCH_HEADER] = signDispatch(cfg.cluster.key, method, url, { master: this.d.self, term: core.term, id, cls: clsName, tree }, p.body);
    headers['content-length'] = String(p.body.length);
    headers['x-forwarded-for'] = p.req.socket.remoteAddress ?? '';
    const up = http.request({ host: target.address, port: target.httpPort, method, path: url, headers, agent: this.agents[board], timeout: cfg.limits.requestTimeoutMs });
    const onAbort = (): void => {
      up.destroy();
    };
    p.abort.signal.addEventListener('abort', onAbort, { once: true });
    this.perBoard.inc({ board: cfg.boards[board]!.id });
    if (this.d.isCut()) process.nextTick(() => up.destroy(Object.assign(new Error('network cut'), { code: 'ENETUNREACH' })));
    up.on('timeout', () => up.destroy(new EwsError('DISPATCH_TIMEOUT', `board ${target.id} did not answer in ${cfg.limits.requestTimeoutMs} ms`)));
    up.on('response', (ur) => {
      ur.on('data', (c: Buffer) => (bytes += c.length));
      relayResponse(ur, p.res);
      ur.on('end', () => {
        p.done = true;
        this.outcomes.inc({ class: clsName, outcome: 'served' });
        p.abort.signal.removeEventListener('abort', onAbort);
        complete();
      });
      ur.on('error', () => {
        p.res.destroy();
        complete();
      });
      ur.on('close', complete);
    });
    up.on('error', (err: NodeJS.ErrnoException) => {
      p.abort.signal.removeEventListener('abort', onAbort);
      complete();
      if (p.done) return;
      const code = err.code ?? '';
      const retryable = p.attempts < cfg.limits.maxDispatchAttempts && p.tried.size + 1 < (p.candidates?.length ?? cfg.boards.length) && (SAFE_METHODS.has(method) || NOT_DELIVERED.has(code));
      this.d.log.debug({ board: target.id, code, retryable }, 'dispatch failed');
      if (retryable && !p.res.headersSent) {
        p.tried.add(board);
        if (this.scheduler.enqueue(p) === 'ok') return this.pump();
      }
      p.done = true;
      this.outcomes.inc({ class: clsName, outcome: 'failed' });
      sendError(p.res, err instanceof EwsError ? err : new EwsError('BOARD_FAILED', `board ${target.id} failed: ${code || err.message}`));
    });
    up.end(p.body);
  }
}
