// The master's lean intake: client connections read without Node's HTTP server. Measured on a
// board-like CPU (bench/results/boards.md), Node's server costs the master more per request than
// the rest of the dispatch path together; here a request is one read, one parse of its head
// (shared/http-head.ts) and one write of its answer. Only the plain requests the master queues go
// this way; at the first request that is anything else (a chunked body, a login, the events
// stream, a malformed head, another role) the connection is handed, unread, to Node's HTTP
// server, which keeps it. One request at a time per connection: a pipelined one waits, bounded.
// Timeouts are deadlines that one sweep checks (LeanDeadlines), not a socket timer per request.
import type { Socket } from 'node:net';
import type { LimitsConfig } from '../../shared/config.ts';
import { parseHead } from '../../shared/http-head.ts';
import { EMPTY } from './answer.ts';
import { type AnswerSink, type LeanRequest, LeanResponse } from './lean-exchange.ts';

export interface LeanRoutes {
  /** Whether this request goes the lean way; false hands the connection to the full server. */
  accepts(method: string, path: string): boolean;
  /** Answer the request through `res` (exactly once, or destroy it); `path` is its target without the query. */
  handle(req: LeanRequest, res: LeanResponse, body: Buffer, path: string): void;
  /** Give the connection to the full HTTP server, `pending` (unread bytes) first. */
  handoff(sock: Socket, pending: Buffer): void;
}

const TIMEOUT_BODY = '{"error":{"code":"BAD_REQUEST","message":"request took too long to arrive"}}';
const TIMEOUT_ANSWER = Buffer.from(`HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\ncontent-length: ${TIMEOUT_BODY.length}\r\nconnection: close\r\n\r\n${TIMEOUT_BODY}`);

/** A lean connection's deadline: `due` (performance.now() ms, 0 = none); `slow` says which. */
interface Deadline {
  due: number;
  /** A request is arriving too slowly (408), else the connection is idle between requests (closed). */
  slow: boolean;
  readonly sock: Socket;
}

/**
 * The lean connections' deadlines (the keep-alive timeout between requests, the head and body
 * timeout while one arrives), checked by one sweep every `everyMs`, as Node's HTTP server checks
 * its own, instead of a socket timer armed and cleared around every request. A deadline fires up
 * to `everyMs` late. Holds one entry per open lean connection (the listener bounds those).
 */
export class LeanDeadlines {
  private readonly open = new Set<Deadline>();
  private timer: NodeJS.Timeout | undefined;
  constructor(private readonly everyMs: number) {}

  add(d: Deadline): void {
    this.open.add(d);
    if (!this.timer) this.timer = setInterval(this.sweep, this.everyMs).unref();
  }

  remove(d: Deadline): void {
    this.open.delete(d);
    if (this.open.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private readonly sweep = (): void => {
    const now = performance.now();
    for (const d of this.open) {
      if (d.due === 0 || d.due > now) continue;
      d.due = 0;
      // A head or body that did not arrive in time (slowloris): 408 and close, as the full server does.
      if (d.slow) {
        if (!d.sock.destroyed) d.sock.end(TIMEOUT_ANSWER);
      } else d.sock.destroy();
    }
  };
}

/** Serve a client connection (its first bytes already read) until it closes or is handed off. */
export function serveLean(sock: Socket, first: Buffer, l: LimitsConfig, routes: LeanRoutes, deadlines: LeanDeadlines): void {
  let buf: Buffer | undefined = first.length > 0 ? first : undefined;
  let busy: LeanResponse | undefined;
  let closeAfter = false;
  let paused = false;
  const deadline: Deadline = { due: 0, slow: false, sock };
  const keepAliveS = Math.max(1, Math.floor(l.keepAliveTimeoutMs / 1000));
  const pendingMax = l.headerBytesMax + l.bodyBytesMax;

  const sink: AnswerSink = {
    write: (bytes) => {
      if (!sock.destroyed) sock.write(bytes);
    },
    answered: () => {
      busy = undefined;
      if (closeAfter) return void sock.end();
      // A client that does not read its answers: the next request waits until they have drained
      // (answers are never piled up in memory faster than the client takes them).
      if (sock.writableNeedDrain) return void sock.once('drain', goOn);
      goOn();
    },
    destroy: () => sock.destroy(),
  };

  const goOn = (): void => {
    if (paused) {
      paused = false;
      sock.resume();
    }
    next();
  };
  const onData = (chunk: Buffer): void => {
    buf = buf ? Buffer.concat([buf, chunk]) : chunk;
    if (busy || sock.writableNeedDrain) {
      // A pipelined request waits for the answer before it; past the bound, reading stops.
      if (buf.length > pendingMax && !paused) {
        paused = true;
        sock.pause();
      }
      return;
    }
    next();
  };
  const onClose = (): void => {
    deadlines.remove(deadline);
    busy?.gone();
  };
  // The client closed its side: what it sent is answered, then this side closes too.
  const onEnd = (): void => {
    closeAfter = true;
    if (!busy && !buf) sock.end();
  };
  const waitSlow = (): void => {
    // The request has begun arriving: it has headersTimeoutMs from here to be whole.
    if (deadline.slow) return;
    deadline.slow = true;
    deadline.due = performance.now() + l.headersTimeoutMs;
  };
  const handoff = (): void => {
    sock.off('data', onData);
    sock.off('close', onClose);
    sock.off('end', onEnd);
    deadlines.remove(deadline);
    sock.pause();
    routes.handoff(sock, buf ?? EMPTY);
  };

  function next(): void {
    if (busy || sock.destroyed) return;
    if (!buf) {
      // Idle between requests: the keep-alive timeout applies.
      deadline.slow = false;
      deadline.due = performance.now() + l.keepAliveTimeoutMs;
      return;
    }
    const v = parseHead(buf, l.headerBytesMax, l.bodyBytesMax);
    if (v.kind === 'partial') return void waitSlow();
    if (v.kind === 'other') return void handoff();
    const total = v.headBytes + v.bodyBytes;
    if (buf.length < total) return void waitSlow();
    const q = v.url.indexOf('?');
    const path = q < 0 ? v.url : v.url.slice(0, q);
    if (!routes.accepts(v.method, path)) return void handoff();
    deadline.slow = false;
    deadline.due = 0;
    const body = v.bodyBytes > 0 ? buf.subarray(v.headBytes, total) : EMPTY;
    buf = buf.length > total ? buf.subarray(total) : undefined;
    closeAfter = v.close;
    const res = new LeanResponse(sink, v.method === 'HEAD', v.close, keepAliveS);
    busy = res;
    routes.handle({ method: v.method, url: v.url, headers: v.headers, rawHeaders: v.rawHeaders, socket: sock }, res, body, path);
  }

  deadlines.add(deadline);
  sock.on('data', onData);
  sock.on('close', onClose);
  sock.on('end', onEnd);
  next();
  sock.resume();
}
