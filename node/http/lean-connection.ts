// The master's lean intake: client connections read without Node's HTTP server. Measured on a
// board-like CPU (bench/results/boards.md), Node's server costs the master more per request than
// the rest of the dispatch path together; here a request is one read, one parse of its head
// (shared/http-head.ts) and one write of its answer. Only the plain requests the master queues go
// this way; at the first request that is anything else (a chunked body, a login, the events
// stream, a malformed head, another role) the connection is handed, unread, to Node's HTTP
// server, which keeps it. One request at a time per connection: a pipelined one waits, bounded.
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

/** Serve a client connection (its first bytes already read) until it closes or is handed off. */
export function serveLean(sock: Socket, first: Buffer, l: LimitsConfig, routes: LeanRoutes): void {
  let buf: Buffer | undefined = first.length > 0 ? first : undefined;
  let busy: LeanResponse | undefined;
  let closeAfter = false;
  let paused = false;
  let slow: NodeJS.Timeout | undefined;
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
    if (slow) clearTimeout(slow);
    busy?.gone();
  };
  const waitSlow = (): void => {
    // A head or body that does not arrive in time (slowloris): 408 and close, as the full server does.
    slow ??= setTimeout(() => {
      if (!sock.destroyed) sock.end(TIMEOUT_ANSWER);
    }, l.headersTimeoutMs);
  };
  const handoff = (): void => {
    sock.off('data', onData);
    sock.off('close', onClose);
    sock.off('timeout', onIdle);
    if (slow) clearTimeout(slow);
    sock.setTimeout(0);
    sock.pause();
    routes.handoff(sock, buf ?? EMPTY);
  };

  function next(): void {
    if (busy || sock.destroyed) return;
    if (!buf) {
      // Idle between requests: the keep-alive timeout applies.
      sock.setTimeout(l.keepAliveTimeoutMs);
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
    if (slow) {
      clearTimeout(slow);
      slow = undefined;
    }
    sock.setTimeout(0);
    const body = v.bodyBytes > 0 ? buf.subarray(v.headBytes, total) : EMPTY;
    buf = buf.length > total ? buf.subarray(total) : undefined;
    closeAfter = v.close;
    const res = new LeanResponse(sink, v.method === 'HEAD', v.close, keepAliveS);
    busy = res;
    routes.handle({ method: v.method, url: v.url, headers: v.headers, rawHeaders: v.rawHeaders, socket: sock }, res, body, path);
  }

  const onIdle = (): void => void sock.destroy();
  sock.on('data', onData);
  sock.on('close', onClose);
  sock.on('timeout', onIdle);
  next();
  sock.resume();
}
