// Reading bounded bodies and writing JSON/error answers; the only HTTP plumbing shared by roles.
import { createWriteStream, rmSync } from 'node:fs';
import { type IncomingMessage, ServerResponse } from 'node:http';
import { EwsError, errorResponse } from '../../shared/errors.ts';

/** Reads the whole body, refusing (413) past maxBytes without buffering more than that. */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBytes) return Promise.reject(new EwsError('BODY_TOO_LARGE', `request body over ${maxBytes} bytes`));
  if (req.method === 'GET' || req.method === 'HEAD') {
    if (!req.headers['content-length'] && !req.headers['transfer-encoding']) return Promise.resolve(Buffer.alloc(0));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxBytes) {
        req.removeAllListeners('data');
        req.resume();
        reject(new EwsError('BODY_TOO_LARGE', `request body over ${maxBytes} bytes`));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on('error', reject);
    req.on('aborted', () => reject(new EwsError('BAD_REQUEST', 'client aborted the request')));
  });
}

/**
 * Stream a request's body into `file` (created anew, mode 600) without holding it: refused with
 * 413 as soon as it is declared or grows over `maxBytes` (the partial file removed). Its size.
 */
export function receiveFile(req: IncomingMessage, file: string, maxBytes: number): Promise<number> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBytes) return Promise.reject(new EwsError('BODY_TOO_LARGE', `request body over ${maxBytes} bytes`));
  return new Promise((resolve, reject) => {
    const out = createWriteStream(file, { mode: 0o600 });
    let size = 0;
    let failed = false;
    const fail = (e: EwsError) => {
      if (failed) return;
      failed = true;
      req.removeListener('data', onData);
      // The rest of the body is read and dropped (not the connection), so the answer reaches the client.
      req.resume();
      out.destroy();
      rmSync(file, { force: true });
      reject(e);
    };
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > maxBytes) return fail(new EwsError('BODY_TOO_LARGE', `request body over ${maxBytes} bytes`));
      // Backpressure: the socket waits while the disk catches up.
      if (!out.write(c)) req.pause();
    };
    out.on('drain', () => req.resume());
    out.on('error', (e) => fail(new EwsError('INTERNAL', `the upload could not be stored: ${e.message}`)));
    req.on('data', onData);
    req.on('end', () => {
      if (!failed) out.end(() => resolve(size));
    });
    req.on('aborted', () => fail(new EwsError('BAD_REQUEST', 'client aborted the request')));
    req.on('error', () => fail(new EwsError('BAD_REQUEST', 'the upload broke off')));
  });
}

/**
 * Run `then` once the answer has reached the client: its connection closed (the client read the
 * answer and hung up), or at most `maxMs` after the answer left. For a master about to hand the
 * cluster on: the VIP leaves with the role, and an answer still unsent or unacknowledged on a
 * connection to it could no longer be sent from an address the board has given up.
 */
export function whenDelivered(res: ServerResponse, then: () => void, maxMs = 2000): void {
  res.once('finish', () => {
    let done = false;
    const go = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      then();
    };
    const timer = setTimeout(go, maxMs);
    const s = res.socket;
    if (!s || s.destroyed) return go();
    s.once('close', go);
  });
}

export type HeaderValue = string | number | string[];

/** Where a handler writes its answer: a ServerResponse, or an answer captured for the dispatch link. */
export interface Answer {
  readonly headersSent: boolean;
  readonly destroyed: boolean;
  readonly writableFinished: boolean;
  setHeader(name: string, value: HeaderValue): unknown;
  getHeader(name: string): unknown;
  writeHead(status: number, headers?: Record<string, HeaderValue>): unknown;
  end(body?: string | Buffer): unknown;
  destroy(): unknown;
}

export function sendJson(res: Answer, status: number, value: unknown, headers: Record<string, string> = {}): void {
  sendJsonText(res, status, JSON.stringify(value), headers);
}

/** JSON already serialized (an answer kept in a record). */
export function sendJsonText(res: Answer, status: number, body: string, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store', ...headers });
  res.end(body);
}

export function sendError(res: Answer, err: unknown, headers: Record<string, string> = {}): void {
  if (res.destroyed) return;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const r = errorResponse(err);
  res.writeHead(r.status, { ...r.headers, 'content-length': Buffer.byteLength(r.body), 'cache-control': 'no-store', ...headers });
  res.end(r.body);
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authorization', 'proxy-authenticate', 'host', 'content-length']);

/** Whether a (lower-case) header may pass on to the next hop: not hop-by-hop, not ews's own. */
export function isEndToEnd(name: string): boolean {
  return !HOP_BY_HOP.has(name) && !name.startsWith('x-ews-');
}

/** Headers safe to pass on to the next hop (hop-by-hop and ews-internal ones removed). */
export function endToEndHeaders(h: IncomingMessage['headers']): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined || !isEndToEnd(k)) continue;
    out[k] = v;
  }
  return out;
}

/**
 * Relays an upstream answer to our client: status, end-to-end headers, body (streamed to a
 * ServerResponse, else gathered whole, at most `bytesMax`: over it the client gets 502
 * ANSWER_TOO_LARGE and the upstream is dropped).
 */
export function relayResponse(upstream: IncomingMessage, res: Answer, bytesMax: number): void {
  const h: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(upstream.headers)) if (v !== undefined && k !== 'connection' && k !== 'keep-alive' && k !== 'transfer-encoding') h[k] = v;
  if (res instanceof ServerResponse) {
    if (!res.headersSent && !res.destroyed) res.writeHead(upstream.statusCode ?? 502, h);
    upstream.pipe(res);
    return;
  }
  const chunks: Buffer[] = [];
  let bytes = 0;
  upstream.on('data', (c: Buffer) => {
    bytes += c.length;
    if (bytes <= bytesMax) return void chunks.push(c);
    chunks.length = 0;
    upstream.destroy();
    sendError(res, new EwsError('ANSWER_TOO_LARGE', `the master's answer is over ${bytesMax} bytes`));
  });
  upstream.on('error', () => res.destroy());
  upstream.on('end', () => {
    if (res.headersSent || res.destroyed) return;
    delete h['content-length'];
    res.writeHead(upstream.statusCode ?? 502, h);
    res.end(Buffer.concat(chunks));
  });
}
