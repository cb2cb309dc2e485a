// A node rehearses the master's request path, so that a takeover finds it compiled.
//
// A node never runs the master's side of a request: the client connection's parsing, the router's
// checks, the intake and its dispatch core, the link's sending end, the answer to the client. A board
// that took over ran them at a third of its settled speed for two seconds while V8 compiled them, on
// its own CPU quota (bench/results/dispatch-path.md). So now and then, while it is a node, the board
// starts a private copy of that path on its own address (a port the system picks): a front server, a
// router and an intake that think this board is the master of two, and a stand-in board on the same
// port that answers every dispatch a moment later without running anything. A few connections of
// its own send GETs through it (TCP, or TLS when the board speaks it), one request at a time each,
// until the count is done, the board stops being a node, or the time is up; then all of it is closed.
//
// The copy is made of the live board's parts (node/board.ts hands over its router's and intake's),
// with its own config, mirror, intake, link and counts (a registry nobody reads); it shares the
// parts that keep no per-request state (the frame codec, the session guard, the operator's log,
// which a GET of a page or the echo never writes). Its objects have the live ones' shapes and call
// the live ones' functions, so what V8 compiles for them holds when the same code serves clients.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Clock } from '../../shared/clock.ts';
import type { BoardConfig, Config } from '../../shared/config.ts';
import { frozenConfig } from '../../shared/config-shapes.ts';
import type { FrameCodec } from '../../shared/dispatch-frame.ts';
import { EwsError } from '../../shared/errors.ts';
import { headerLines } from '../../shared/header-lines.ts';
import { IdempotencyStore } from '../../shared/idempotency-store.ts';
import { type Counter, Registry } from '../../shared/metrics.ts';
import { PROTOCOL_VERSION } from '../../shared/protocol.ts';
import { ClusterMirror } from '../cluster-plane/mirror.ts';
import type { Logger } from '../log.ts';
import { dialBoard, type TlsMaterial } from '../tls-material.ts';
import { DispatchClient, type LinkRequestHandler, linkLimits, serveLink } from './dispatch-link.ts';
import { FrontServer } from './front-server.ts';
import { sendError } from './http-io.ts';
import { Intake, type IntakeDeps } from './intake.ts';
import { Router, type RouterDeps } from './router.ts';

export interface RehearsalDeps {
  /** The live router's parts and the live intake's; the rehearsal replaces the config, board, mirror, intake and link with its own. */
  router: RouterDeps;
  intake: IntakeDeps;
  frames: FrameCodec;
  clock: Clock;
  log: Logger;
  tls: TlsMaterial | undefined;
}

/**
 * Connections the rehearsal sends its requests on, each one request at a time, against the
 * stage's STAGE_SLOTS slots on the stand-in, each busy STAND_IN_MS: requests queue at the stage's
 * master as they do at a busy one, and the stand-in's pace is the rehearsal's, at most 200
 * requests a second, so a busy node's own work keeps most of its CPU (V8 compiles a function
 * after so many calls, however slowly they come).
 */
const CONNECTIONS = 6;
const STAGE_SLOTS = 2;
const STAND_IN_MS = 10;
/** What the requests ask for: the master's two kinds of work, a CGI and a page. */
const PATHS = ['/cgi-bin/echo?ms=0', '/'];
/** The first rehearsal, after the board started; and, while the board is still joining, how soon a due one looks again. */
export const REHEARSAL_FIRST_MS = 3000;
/** A rehearsal stops sending after this long, whatever it has left. */
const TIMEOUT_MS = 60_000;
const STAND_IN_HEAD = headerLines(['content-type', 'text/plain']);
const STAND_IN_BODY = Buffer.from('rehearsal\n');

export class Rehearsal {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private closed = false;
  /** The stage of the rehearsal that runs now. */
  private front: FrontServer | undefined;
  private readonly answered: Counter;

  private readonly requests: number;
  private readonly everyMs: number;

  constructor(private readonly d: RehearsalDeps) {
    ({ rehearseRequests: this.requests, rehearseEveryMs: this.everyMs } = d.router.cfg.cluster);
    this.answered = d.router.metrics.counter('ews_rehearsed_requests_total', "Requests a node's rehearsals of the master's path have answered, counted as each is answered (node/http/rehearsal.ts)");
    d.router.metrics.gauge('ews_rehearsing', 'Whether this board rehearses the master path now', () => [[{}, this.running ? 1 : 0]]);
  }

  /**
   * Rehearse REHEARSAL_FIRST_MS from now, then every `rehearseEveryMs`, whenever this board is a
   * node then. A board still joining (a slow boot, a busy CPU) looks again REHEARSAL_FIRST_MS later
   * rather than a whole period: the first rehearsal is the one a takeover soon after a boot needs.
   */
  start(): void {
    if (this.requests === 0) return;
    const tick = (): void => {
      const role = this.d.router.mirror.role;
      this.timer = setTimeout(tick, role === 'joining' ? REHEARSAL_FIRST_MS : this.everyMs).unref();
      if (!this.running && role === 'node') this.run().catch((err: unknown) => this.d.log.warn({ err }, 'the rehearsal of the master path failed'));
    };
    this.timer = setTimeout(tick, REHEARSAL_FIRST_MS).unref();
  }

  /** No more rehearsals; the one running now ends at once (its connections dropped). */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.front?.dropAll();
  }

  /** One rehearsal; resolves with how many requests were answered. */
  private run(): Promise<number> {
    this.running ??= this.stage().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async stage(): Promise<number> {
    const { d } = this;
    const live = d.router;
    const started = d.clock.now();
    const { router, intake, stage, onPort } = this.cast();
    const l = live.cfg.limits;
    const link = (sock: Socket, rest: Buffer, version: number) => serveLink(sock, rest, version, d.frames, STAND_IN, 2 * l.inFlightPerBoardMax, linkLimits(stage, d.tls !== undefined));
    const front = new FrontServer(l, { request: notFound, link, accept: () => true, lean: router }, d.log, d.tls);
    this.front = front;
    // A connection that hangs ends with the rehearsal's time: its sockets are dropped, so the next one can run.
    const cut = setTimeout(() => front.dropAll(), TIMEOUT_MS + STAND_IN_MS).unref();
    try {
      await front.listen(0, live.self.address);
      const master = onPort(front.port());
      const auth = Object.entries(live.guard.serviceHeaders('rehearsal', Date.now()))
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('');
      let left = this.requests;
      const more = (): boolean => !this.closed && live.mirror.role === 'node' && left-- > 0 && d.clock.now() - started < TIMEOUT_MS;
      const host = `${master.address}:${master.httpPort}`;
      // Counted as each answer arrives, so a running rehearsal shows its progress.
      const before = this.answered.get();
      const counted = (): void => this.answered.inc();
      await Promise.all(Array.from({ length: CONNECTIONS }, (_, i) => ask(dialBoard(master, d.tls), host, auth, i, more, counted)));
      const answered = this.answered.get() - before;
      d.log.debug({ answered, ms: Math.round(d.clock.now() - started) }, 'rehearsed the master path');
      return answered;
    } finally {
      clearTimeout(cut);
      intake.close();
      this.front = undefined;
      await front.close();
    }
  }

  /**
   * The rehearsal's master of two and its stand-in board, both on this board's address. Its parts
   * are made from the live board's own (spread, with what differs replaced), so their objects have
   * the live ones' shapes and call the live ones' functions: what V8 compiles for them, it keeps
   * when the same code serves clients. `onPort`: the port the stage got; the boards as dialled.
   */
  private cast(): { router: Router; intake: Intake; stage: Config; onPort(port: number): BoardConfig } {
    const { d } = this;
    const live = d.router;
    const l = live.cfg.limits;
    let dialled: readonly BoardConfig[] = [];
    const stage = stageConfig(live.cfg, live.self);
    const { boards } = stage;
    const metrics = new Registry();
    const mirror = new ClusterMirror(stage, boards[0]!, 1, d.clock, d.log, metrics);
    mirror.role = 'master';
    mirror.term = 1;
    mirror.master = 0;
    // Both boards are in this process and never fall silent: heard at Infinity, so a slow start (TLS
    // handshakes on a busy CPU) or a stalled board never lets Tthreshold pass and turn the stand-in down.
    mirror.table.adopt([1, 1], [0, 0], [Infinity, Infinity]);
    const link = new DispatchClient(
      () => dialled,
      d.frames,
      l.headersTimeoutMs,
      () => {},
      linkLimits(stage, false).requestBytesMax,
      () => PROTOCOL_VERSION,
      d.tls,
    );
    const idempotency = new IdempotencyStore(1, 1000);
    const intake = new Intake({ ...d.intake, cfg: stage, self: 0, mirror, dispatchLink: link, metrics, idempotency, executeLocal: neverLocal });
    const router = new Router({ ...live, cfg: stage, self: boards[0]!, mirror, intake, metrics });
    const onPort = (port: number): BoardConfig => {
      dialled = dialledBoards(stage, port);
      return dialled[0]!;
    };
    return { router, intake, stage, onPort };
  }
}

/**
 * The stage's config: the live one with two boards (this one at 0, the stand-in at 1, both on
 * this board's address), forwarding only, no VIP, STAGE_SLOTS slots a board. Frozen as the live
 * config was, so its objects get the live ones' shapes (shared/config-shapes.ts).
 */
export function stageConfig(live: Config, self: BoardConfig): Config {
  const two = [0, 1].map((index) => ({ ...self, index }));
  return frozenConfig({ ...live, boards: two, cluster: { ...live.cluster, masterWork: 'forward', vip: undefined }, limits: { ...live.limits, inFlightPerBoardMax: STAGE_SLOTS } });
}

/** The stage's boards as dialled: on the port the stage got. */
export function dialledBoards(stage: Config, port: number): readonly BoardConfig[] {
  return frozenConfig(stage.boards.map((b) => ({ ...b, httpPort: port })));
}

/** The stand-in board: every dispatch answered STAND_IN_MS later, nothing run. */
const STAND_IN: LinkRequestHandler = {
  onRequest: (f, answer) => {
    setTimeout(() => answer({ id: f.id, load: 0, status: 200, refused: false, head: STAND_IN_HEAD, body: STAND_IN_BODY }), STAND_IN_MS);
    return undefined;
  },
  onDrop: () => {},
};

const notFound = async (_req: IncomingMessage, res: ServerResponse): Promise<void> => void res.writeHead(404).end();

/** With masterWork "forward" and the stand-in up, the stage's master runs nothing itself; were it asked to, the request is answered, never left open. */
const neverLocal: IntakeDeps['executeLocal'] = (run, done) => {
  sendError(run.res, new EwsError('NO_BOARD', 'a rehearsal runs nothing itself'));
  done();
  return { cancel: () => {} };
};

/** One connection's requests, one at a time while `more()`; `counted` at each 200; resolves when the connection closes. */
function ask(dial: { sock: Socket; ready: 'connect' | 'secureConnect' }, host: string, auth: string, first: number, more: () => boolean, counted: () => void): Promise<void> {
  const { sock, ready } = dial;
  return new Promise((resolve) => {
    let n = first;
    let buf: Buffer = Buffer.alloc(0);
    const next = (): void => {
      if (!more()) return void sock.end();
      sock.write(`GET ${PATHS[n++ % PATHS.length]} HTTP/1.1\r\nhost: ${host}\r\n${auth}\r\n`);
    };
    sock.on(ready, next);
    sock.on('data', (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.subarray(0, end).toString('latin1');
      const length = /\r\ncontent-length: *(\d+)/i.exec(head);
      if (!length) return void sock.destroy();
      const total = end + 4 + Number(length[1]);
      if (buf.length < total) return;
      if (head.startsWith('HTTP/1.1 200')) counted();
      buf = buf.subarray(total);
      next();
    });
    sock.on('error', () => {});
    sock.on('close', () => resolve());
  });
}
