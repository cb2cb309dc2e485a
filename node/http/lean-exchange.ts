// The request and answer objects of the master's lean intake (node/http/lean-connection.ts): the
// few fields the request path reads, and an answer written to the socket in one write when it
// ends. Node's IncomingMessage and ServerResponse satisfy the same two interfaces, so the path
// from the router to the boards does not know which intake a request came through.
import { type IncomingHttpHeaders, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { headerPairs } from '../../shared/header-lines.ts';
import { EMPTY, HeldAnswer } from './answer.ts';
import type { Answer, HeaderValue } from './http-io.ts';

/** What the request path reads of a client's request. */
export interface ClientRequest {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders: string[];
  readonly socket: { readonly remoteAddress?: string | undefined; readonly localAddress?: string | undefined };
}

/** Where the master answers a client. */
export interface ClientAnswer extends Answer {
  readonly writableEnded: boolean;
  readonly statusCode: number;
  on(event: 'close' | 'finish', listener: () => void): unknown;
  once(event: 'close' | 'finish', listener: () => void): unknown;
}

export interface LeanRequest extends ClientRequest {
  readonly method: string;
  readonly url: string;
  readonly socket: Socket;
}

/** What an answer needs of its connection. */
export interface AnswerSink {
  write(bytes: Buffer): void;
  /** The answer is out: read the next request, or close when the client asked. */
  answered(): void;
  destroy(): void;
}

let dateSecond = -1;
let dateKeepAlive = -1;
const dateLines = ['', ''];
/** The message's closing lines (Date, once a second, and the connection's), blank line included. */
function closingLines(close: boolean, keepAliveS: number): string {
  const s = Math.floor(Date.now() / 1000);
  if (s !== dateSecond || keepAliveS !== dateKeepAlive) {
    dateSecond = s;
    dateKeepAlive = keepAliveS;
    const date = `date: ${new Date(s * 1000).toUTCString()}\r\n`;
    dateLines[0] = `${date}connection: keep-alive\r\nkeep-alive: timeout=${keepAliveS}\r\n\r\n`;
    dateLines[1] = `${date}connection: close\r\n\r\n`;
  }
  return dateLines[close ? 1 : 0]!;
}

const statusLines = new Map<number, string>();
const statusLine = (status: number): string => {
  let line = statusLines.get(status);
  if (line === undefined) {
    line = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n`;
    if (statusLines.size < 128) statusLines.set(status, line);
  }
  return line;
};

/** Answers written since the last tick, settled together after it, in the order they were written. */
let unsettled: LeanResponse[] = [];
function settleWritten(): void {
  const written = unsettled;
  unsettled = [];
  for (const r of written) r.settle();
}

// Header values are written as given: one with CR, LF or NUL would split the answer, so it is dropped.
const UNSAFE = /[\r\n\0]/;

export class LeanResponse extends HeldAnswer implements ClientAnswer {
  writableEnded = false;
  /** Listeners as [event, fn, event, fn…]: each event happens at most once per answer, so `on` is `once`. */
  private listeners: Array<'close' | 'finish' | (() => void)> | undefined;
  /** Header lines every answer on this exchange carries (the router's security headers), as written. */
  private preset: Buffer = EMPTY;
  /** The lines `endWith` wrote (a board's answer): what `getHeader` reads after the headers set here. */
  private given: Buffer = EMPTY;

  constructor(
    private readonly sink: AnswerSink,
    private readonly head: boolean,
    private readonly close: boolean,
    private readonly keepAliveS: number,
  ) {
    super();
  }

  /** Lines (`name: value\r\n`…) written into the answer before any other header. */
  presetLines(lines: Buffer): void {
    this.preset = lines;
  }

  end(body?: string | Buffer): this {
    if (this.writableEnded || this.destroyed) return this;
    const b = body === undefined ? EMPTY : typeof body === 'string' ? Buffer.from(body) : body;
    if (!this.headers.has('content-length') && !this.head) this.setHeader('content-length', b.length);
    this.write(this.statusCode, this.ownLines(), EMPTY, b);
    return this;
  }

  /**
   * The whole answer from lines made elsewhere (a board's, shared/header-lines.ts): status, the
   * preset lines, headers set on this answer, `lines`, the body's length, the body, in one write.
   */
  endWith(status: number, lines: Buffer, body: Buffer): this {
    if (this.writableEnded || this.destroyed || this.headersSent) return this;
    this.statusCode = status;
    this.given = lines;
    this.write(status, this.ownLines(), lines, body, `content-length: ${body.length}\r\n`);
    return this;
  }

  /** A header set on this answer, else one of the lines `endWith` wrote (the command log reads the board's x-ews-board). */
  override getHeader(name: string): HeaderValue | undefined {
    const own = super.getHeader(name);
    if (own !== undefined || this.given.length === 0) return own;
    const key = name.toLowerCase();
    const pairs = headerPairs(this.given);
    const values: string[] = [];
    for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === key) values.push(pairs[i + 1]!);
    return values.length === 0 ? undefined : values.length === 1 ? values[0] : values;
  }

  /** The headers set on this answer, as lines. */
  private ownLines(): string {
    let text = '';
    for (const [k, v] of this.headers) {
      if (Array.isArray(v)) {
        for (const x of v) if (!UNSAFE.test(x)) text += `${k}: ${x}\r\n`;
      } else if (typeof v === 'number' || !UNSAFE.test(v)) text += `${k}: ${v}\r\n`;
    }
    return text;
  }

  private write(status: number, own: string, lines: Buffer, body: Buffer, length = ''): void {
    this.writableEnded = this.headersSent = true;
    const first = statusLine(status);
    const last = length + closingLines(this.close, this.keepAliveS);
    const payload = this.head ? EMPTY : body;
    const out = Buffer.allocUnsafe(first.length + this.preset.length + own.length + lines.length + last.length + payload.length);
    let o = out.write(first, 0, 'latin1');
    o += this.preset.copy(out, o);
    if (own.length > 0) o += out.write(own, o, 'latin1');
    o += lines.copy(out, o);
    o += out.write(last, o, 'latin1');
    payload.copy(out, o);
    this.sink.write(out);
    this.writableFinished = true;
    // Like a ServerResponse: 'finish' then 'close', after the caller's turn (one tick for all the answers written in it).
    if (unsettled.push(this) === 1) process.nextTick(settleWritten);
  }

  /** 'finish', 'close', then the connection goes on (settleWritten calls it for each answer written). */
  settle(): void {
    this.emit('finish');
    this.emit('close');
    this.sink.answered();
  }

  /** Give up mid-answer: the connection is dropped (the client sees no half answer). */
  destroy(): this {
    if (!this.destroyed && !this.writableFinished) this.sink.destroy();
    return this;
  }

  /** The connection closed before the answer ended. */
  gone(): void {
    if (this.destroyed || this.writableFinished) return;
    this.destroyed = true;
    this.emit('close');
  }

  on(event: 'close' | 'finish', fn: () => void): this {
    if (this.listeners) this.listeners.push(event, fn);
    else this.listeners = [event, fn];
    return this;
  }
  once(event: 'close' | 'finish', fn: () => void): this {
    return this.on(event, fn);
  }
  private emit(event: 'close' | 'finish'): void {
    const ls = this.listeners;
    if (!ls) return;
    for (let i = 0; i < ls.length; i += 2) if (ls[i] === event) (ls[i + 1] as () => void)();
  }
}

/** A board's answer (from the dispatch link) to the client: status 0 is a board that gave up mid-answer. */
export function writeBoardAnswer(res: ClientAnswer, method: string, status: number, head: Buffer, body: Buffer): void {
  if (status === 0) {
    if (!res.destroyed) res.destroy();
  } else if (res instanceof LeanResponse) {
    // The board's header lines go to the client as they came.
    res.endWith(status, head, body);
  } else if (!res.destroyed && !res.headersSent) {
    const h: Record<string, string | string[]> = {};
    const pairs = headerPairs(head);
    for (let i = 0; i < pairs.length; i += 2) {
      const k = pairs[i]!,
        v = pairs[i + 1]!;
      const had = h[k];
      h[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v];
    }
    h['content-length'] = String(body.length);
    res.writeHead(status, h);
    res.end(method === 'HEAD' ? undefined : body);
  }
}
