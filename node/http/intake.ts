// The master's request path, as I/O around the pure dispatch core (master/dispatch-core.ts): classify, hand the
// request to the core, carry out its effects (run here, send over the dispatch link, or refuse), and feed back how each
// ended. What it decides on comes from pure functions: the request's facts (master/request-facts.ts), the routes, the tick rate.
import { type Classifier, createClassifier } from '../../master/classify.ts';
import { deviceTarget, keyRoute } from '../../master/device-route.ts';
import { DispatchCore, dispatchTickMs, type Effect, type Job, OUTCOMES } from '../../master/dispatch-core.ts';
import { LocalPacer } from '../../master/local-pacer.ts';
import { clientAddress, isPage, plainAddress, requestOrigin } from '../../master/request-facts.ts';
import { markedRedirect, programTarget } from '../../shared/cgi.ts';
import { PROGRAM_DEFAULTS } from '../../shared/cgi-config.ts';
import type { Clock } from '../../shared/clock.ts';
import type { Config } from '../../shared/config.ts';
import { EwsError } from '../../shared/errors.ts';
import { headerPairs } from '../../shared/header-lines.ts';
import { type IdempotencyStore, requestHash, SCOPED_KEY_RE } from '../../shared/idempotency-store.ts';
import type { Registry } from '../../shared/metrics.ts';
import { classAtRank } from '../../shared/qos-config.ts';
import { redirectWay } from '../../shared/routes.ts';
import { parseUserLine } from '../../shared/user-line.ts';
import type { ClusterMirror } from '../cluster-plane/mirror.ts';
import type { Logger } from '../log.ts';
import { EMPTY } from './answer.ts';
import type { DispatchClient } from './dispatch-link.ts';
import type { Exchange, LocalRun } from './exchange.ts';
import { isEndToEnd, sendError, sendJsonText } from './http-io.ts';
import { type ClientAnswer, type ClientRequest, writeBoardAnswer } from './lean-exchange.ts';
import { registerQosMetrics } from './qos-metrics.ts';

export type { Exchange, LocalRun } from './exchange.ts';

export interface IntakeDeps {
  cfg: Config;
  self: number;
  clock: Clock;
  /** The cluster state, as the cluster plane reports it. */
  mirror: ClusterMirror;
  /** The boards that have a CGI program; undefined when none has announced it. */
  programBoards(name: string): readonly number[] | undefined;
  dispatchLink: DispatchClient;
  /** A board's boot epoch as this board last heard it (bound into every dispatch frame). */
  epochOf(board: number): number;
  /** Execute on this board (the master is a worker too); `done` when the answer is over, `cancel` stops it. */
  executeLocal(run: LocalRun, done: () => void): { cancel(): void };
  metrics: Registry;
  log: Logger;
  idempotency: IdempotencyStore;
  /** The devices as the running config has them now (a pushed config changes them live). */
  devices(): Config['devices'];
}

/** Synchronous time the master spends starting its own jobs per event-loop turn (masterWork spill/share, more than one board). */
const LOCAL_TURN_MS = 1;
const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

export class Intake {
  private classifier: Classifier;
  /** The dispatch core; a pushed config's QoS or classes make a new one the first moment it is idle. */
  dispatch: DispatchCore<Exchange>;
  private retuneTo: Config | undefined;
  private readonly timer: NodeJS.Timeout;
  private periodTimer: NodeJS.Timeout | undefined;
  /** The core held a job back for the fill pace: pump again at wakeMs (master/high-reserve.ts). */
  private wake: NodeJS.Timeout | undefined;
  private wakeMs = -Infinity;
  private readonly trusted: ReadonlySet<string>;
  private readonly boardAddresses: ReadonlySet<string>;
  /** Jobs this board (the master) runs itself (each one's handle is on its exchange, not in a Map: docs/design.md, "No Map entry per request"). */
  private localRuns = 0;
  /** With other boards to feed, the master's own jobs are paced (master/local-pacer.ts): at most LOCAL_TURN_MS of
   * synchronous starts per event-loop turn, so a CPU-bound handler holds up the forwarding for one job, not a batch. */
  private readonly pacer: LocalPacer<[Job<Exchange>, number]> | undefined;

  constructor(private readonly d: IntakeDeps) {
    const { cfg } = d;
    this.classifier = createClassifier(cfg.classes);
    this.pacer =
      cfg.boards.length > 1
        ? new LocalPacer<[Job<Exchange>, number]>(LOCAL_TURN_MS, cfg.limits.inFlightPerBoardMax, {
            now: () => performance.now(),
            later: (fn) => setImmediate(fn),
            start: ([job, level]) => this.startLocal(job, level),
            gone: ([job]) => job.state !== 'running' || job.payload.res.destroyed || job.payload.res.writableEnded,
            // Its client left (or the core timed it out) while it waited: nothing runs; the core counts it ended, unless the timeout did.
            dropped: ([job]) => this.run(this.dispatch.finished(job, 0, this.d.clock.now())),
          })
        : undefined;
    this.dispatch = new DispatchCore<Exchange>(cfg, d.self, d.mirror.table, Math.random);
    this.boardAddresses = new Set(cfg.boards.map((b) => b.address));
    this.trusted = new Set(['127.0.0.1', '::1', ...this.boardAddresses]);
    const names = cfg.classes.map((c) => c.name);
    d.metrics.counterOf('ews_requests_total', 'Client requests at the master, by class and outcome', () =>
      names.flatMap((name, i) => OUTCOMES.map((o) => [{ class: name, outcome: o }, this.dispatch.count(o, i)] as [Record<string, string>, number])),
    );
    d.metrics.gauge('ews_queue_length', 'Requests waiting at the master, by class', () => names.map((name, i) => [{ class: name }, this.dispatch.queued(i)]));
    d.metrics.gauge('ews_queue_bytes', 'Body bytes held by queued requests', () => [[{}, this.dispatch.scheduler.bytes()]]);
    registerQosMetrics(d.metrics, () => this.dispatch.qosState(), names);
    const tickMs = dispatchTickMs(cfg);
    this.timer = setInterval(() => {
      this.run(this.dispatch.tick(this.d.clock.now()));
      this.retuneIfIdle();
    }, tickMs).unref();
    this.startPeriod(cfg);
  }

  private startPeriod(cfg: Config): void {
    clearInterval(this.periodTimer);
    this.periodTimer = this.dispatch.periodic ? setInterval(() => this.run(this.dispatch.period(this.d.clock.now())), cfg.qos.periodMs).unref() : undefined;
  }

  /** A pushed config's QoS and classes, live: a new dispatch core the first moment this one holds no request (none lost or counted twice). */
  retune(next: Config): void {
    this.retuneTo = next;
    this.retuneIfIdle();
  }

  /** A planned handover: dispatch nothing new for `ms` (0: go on); what waits is passed to the next master when this one steps down. */
  pauseDispatch(ms: number): void {
    this.dispatch.pausedUntilMs = this.d.clock.now() + ms;
    if (ms === 0) this.pump();
  }

  /** Whether the last retune has been made. */
  readonly retuned = (): boolean => this.retuneTo === undefined;

  private retuneIfIdle(): void {
    const next = this.retuneTo;
    if (!next || this.dispatch.queued() > 0 || this.dispatch.inflight.some((n) => n > 0) || this.localRuns > 0) return;
    this.retuneTo = undefined;
    this.dispatch = new DispatchCore<Exchange>(next, this.d.self, this.d.mirror.table, Math.random);
    this.startPeriod(next);
  }

  /** Drop the dispatch link's connections (a pulled cable): dispatches on them fail and are retried or refused. */
  dropConnections(): void {
    this.d.dispatchLink.close();
  }

  close(): void {
    clearInterval(this.timer);
    clearInterval(this.periodTimer);
    clearTimeout(this.wake);
    this.d.dispatchLink.close();
  }

  /** A client request at the master, body already read (bounded); `session`: it carries a verified session; `key`: its Idempotency-Key as the router scoped it. */
  handle(req: ClientRequest, res: ClientAnswer, body: Buffer, session: boolean, key?: string, user?: string): void {
    this.admit(req, res, req.method ?? 'GET', req.url ?? '/', body, session, key, user, 0);
  }

  private admit(req: ClientRequest, res: ClientAnswer, method: string, url: string, body: Buffer, session: boolean, key: string | undefined, user: string | undefined, hops: number): void {
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const client = this.clientOf(req);
    let cls = this.classifier.classify(method, path, { headers: req.headers, client });
    let candidates: readonly number[] | undefined | null;
    const program = programTarget(path);
    const options = program ? (this.d.cfg.cgi.programs[program.name] ?? PROGRAM_DEFAULTS) : undefined;
    // A program's class is its own option: control is the first class (HIGH), page the last.
    if (options) cls = classAtRank(this.d.cfg.classes, options.class === 'page' ? 'last' : 'first');
    const clsName = this.d.cfg.classes[cls]!.name;
    try {
      if (program) {
        // A program's requests go only to the boards that have it, least-connected first.
        const boards = this.d.programBoards(program.name);
        if (!boards) throw new EwsError('NOT_FOUND', `no board has a program ${program.name}`);
        if (boards.every((b) => this.d.mirror.table.runstate(b) === -1)) throw new EwsError('NO_BOARD', `every board with ${program.name} is down`);
        candidates = boards;
      }
      const t = deviceTarget(path, method, this.d.devices());
      if (t)
        candidates = this.routeDevice(
          t.device.attach.map((a) => a.board),
          method,
          path,
          key,
          res,
          body,
          clsName,
        );
    } catch (e) {
      sendError(res, e);
      return;
    }
    if (candidates === null) return; // answered from the idempotency record
    const origin = requestOrigin(req.headers['x-ews-origin'], plainAddress(req.socket.remoteAddress), this.trusted);
    const ex: Exchange = { req, res, body, method, url, origin, clsName, key, user, hops, session, local: undefined };
    const page = isPage(method, path);
    const { job, effects } = this.dispatch.submit(
      ex,
      { cls, bytes: body.length, candidates: candidates ?? undefined, safe: SAFE.has(method), page, client, session, group: program?.name, groupMax: options?.concurrencyMax ?? 0 },
      this.d.clock.now(),
    );
    // The client going away: a queued job leaves; a running one is cancelled on its board.
    res.on('close', () => this.clientGone(job));
    this.run(effects);
  }

  /** Dispatch while there is work and room (after the cluster's view of the boards changed). */
  pump(): void {
    if (this.d.mirror.role === 'master') this.run(this.dispatch.pump(this.d.clock.now()));
  }

  /** The queue and what went through it, per class (for the UI's chart). */
  stats(): { at: number; qos: Record<string, unknown>; classes: Array<{ name: string; queued: number; served: number; shed: number; expired: number }> } {
    return {
      at: Date.now(),
      qos: this.dispatch.qosState(),
      classes: this.d.cfg.classes.map((c, i) => ({
        name: c.name,
        queued: this.dispatch.queued(i),
        served: this.dispatch.count('served', i),
        shed: this.dispatch.count('shed', i),
        expired: this.dispatch.count('expired', i),
      })),
    };
  }

  /** SIGHUP: new match rules for the same classes take effect for the next request. */
  reclassify(classes: Config['classes']): boolean {
    const same = classes.length === this.d.cfg.classes.length && classes.every((c, i) => c.name === this.d.cfg.classes[i]!.name);
    if (same) this.classifier = createClassifier(classes);
    return same;
  }

  /** Step-down: hand back everything still waiting (the caller passes it to the new master). */
  drain(): Exchange[] {
    return this.dispatch
      .drain()
      .map((j) => j.payload)
      .filter((ex) => !ex.res.destroyed && !ex.res.writableEnded);
  }

  // ---- effects ----

  private run(effects: Effect<Exchange>[]): void {
    for (let i = 0; i < effects.length; i++) {
      const e = effects[i]!;
      if (e.kind === 'refuse') sendError(e.job.payload.res, new EwsError(e.code, e.message, { retryAfterS: e.retryAfterS }));
      else if (e.board === this.d.self) this.runLocal(e.job, e.level);
      else this.forward(e.job, e.board, e.id, e.level);
    }
    const w = this.dispatch.highReserve.wakeAtMs;
    if (w === undefined || this.wakeMs > this.d.clock.now()) return; // none due (no clock read: this runs per request), or one set
    clearTimeout(this.wake);
    this.wakeMs = w;
    this.wake = setTimeout(() => this.pump(), w - this.d.clock.now()).unref();
  }

  private runLocal(job: Job<Exchange>, level: number): void {
    if (this.pacer) this.pacer.submit([job, level]);
    else this.startLocal(job, level);
  }

  private startLocal(job: Job<Exchange>, level: number): void {
    const ex = job.payload;
    // What the board's handlers read as the master set it: the client's address, the scoped key, the user (no `delete`: slow).
    const headers: LocalRun['headers'] = {};
    for (const k in ex.req.headers) if (k !== 'x-ews-user') headers[k] = ex.req.headers[k];
    headers['x-forwarded-for'] = this.clientOf(ex.req);
    if (ex.key !== undefined) headers['idempotency-key'] = ex.key;
    if (ex.user !== undefined) headers['x-ews-user'] = ex.user;
    const redirect = (location: string) => this.followRedirect(ex, location);
    const handle = this.d.executeLocal({ method: ex.method, url: ex.url, headers, body: ex.body, cls: ex.clsName, level, origin: ex.origin, res: ex.res, redirect }, () => {
      if (ex.local) this.localRuns--;
      ex.local = undefined;
      this.run(this.dispatch.finished(job, Number(ex.res.getHeader('content-length') ?? 0) || 0, this.d.clock.now()));
    });
    if (job.state !== 'running') return;
    ex.local = handle;
    this.localRuns++;
  }

  private forward(job: Job<Exchange>, board: number, id: number, level: number): void {
    const ex = job.payload;
    const raw = ex.req.rawHeaders;
    const headers: string[] = [];
    for (let i = 0; i < raw.length; i += 2) {
      const k = raw[i]!.toLowerCase();
      // x-forwarded-for is the master's (below), the key as the router scoped it; Host passes (a program's SERVER_NAME, HTTP_HOST).
      if (k === 'host' || (isEndToEnd(k) && k !== 'x-forwarded-for' && k !== 'idempotency-key')) headers.push(k, raw[i + 1]!);
    }
    headers.push('x-forwarded-for', this.clientOf(ex.req));
    if (ex.key !== undefined) headers.push('idempotency-key', ex.key);
    if (ex.user !== undefined) headers.push('x-ews-user', ex.user);
    const { mirror } = this.d;
    this.d.dispatchLink.send(
      { id, master: this.d.self, term: mirror.term, target: board, epoch: this.d.epochOf(board), cls: job.cls, level, origin: ex.origin, method: ex.method, url: ex.url, headers, body: ex.body },
      (r) => {
        const now = this.d.clock.now();
        if (!r.ok) {
          this.d.log.debug({ target: this.d.cfg.boards[board]!.id, reason: r.reason, delivered: r.delivered }, 'dispatch failed');
          return this.run(this.dispatch.failed(job, r.delivered, now, r.reason));
        }
        const a = r.answer;
        mirror.observeLoad(board, a.load, now);
        // The board refused the frame without running it (a restart, a newer master): the client
        // did nothing wrong, so it is retried elsewhere or refused as retryable, never passed on.
        if (a.refused) return this.run(this.dispatch.failed(job, false, now));
        if (a.status === 302 && this.redirected(job, a.head, now)) return;
        writeBoardAnswer(ex.res, ex.method, a.status, a.head, a.body);
        this.run(this.dispatch.finished(job, a.body.length, now));
      },
    );
  }

  /** A board's answer is a CGI program's local redirect (marked by the board): its job ends, the path is served instead. */
  private redirected(job: Job<Exchange>, head: Buffer, now: number): boolean {
    const location = markedRedirect(headerPairs(head));
    if (location === undefined) return false;
    this.run(this.dispatch.finished(job, 0, now));
    this.followRedirect(job.payload, location);
    return true;
  }

  /** RFC 3875 §6.2.2: what a GET of the path answers, served inside the cluster when it may be (shared/routes.ts), else a 302. */
  private followRedirect(ex: Exchange, location: string): void {
    if (ex.res.destroyed || ex.res.writableEnded) return;
    const how = redirectWay(location, this.d.cfg.auth?.disabled ? 'admin' : parseUserLine(ex.user)?.role, ex.hops);
    if (how === 'loop') return void sendError(ex.res, new EwsError('CGI_REDIRECT_LOOP', `${ex.url} led on to ${location.slice(0, 80)}`));
    if (how === 'cluster') return void this.admit(ex.req, ex.res, 'GET', location, EMPTY, ex.session, undefined, ex.user, ex.hops + 1);
    ex.res.writeHead(302, { location, 'content-length': '0', 'cache-control': 'no-store' });
    ex.res.end();
  }

  private clientGone(job: Job<Exchange>): void {
    if (job.payload.res.writableFinished || this.dispatch.cancel(job)) return;
    if (job.state !== 'running') return;
    if (job.board === this.d.self) job.payload.local?.cancel();
    else this.d.dispatchLink.cancel(job.board, job.id);
  }

  /** A device POST with an Idempotency-Key: answer a retry from its record, or send it where the first attempt runs. */
  private routeDevice(attach: number[], method: string, path: string, key: string | undefined, res: ClientAnswer, body: Buffer, clsName: string): readonly number[] | undefined | null {
    if (method !== 'POST' || key === undefined || !SCOPED_KEY_RE.test(key)) return attach;
    const r = keyRoute(this.d.idempotency.check(key, requestHash('POST', path, body), Date.now()), attach, (b) => this.d.mirror.table.runstate(b) === 1);
    if (r.kind === 'refuse') {
      if (r.code === 'IDEMPOTENCY_STORE_FULL') this.d.idempotency.refuse();
      throw new EwsError(r.code, undefined, { retryAfterS: r.retryAfterS });
    }
    if (r.kind === 'boards') return r.boards;
    sendJsonText(res, r.rec.status, r.body, { 'idempotent-replayed': 'true', 'x-ews-board': this.d.cfg.boards[r.rec.board]!.id, 'x-ews-class': clsName });
    return null;
  }

  /** The client's address: X-Forwarded-For only from a cluster board (the hop that sets it). */
  private clientOf(req: ClientRequest): string {
    return clientAddress(plainAddress(req.socket.remoteAddress), req.headers['x-forwarded-for'], this.boardAddresses);
  }
}
