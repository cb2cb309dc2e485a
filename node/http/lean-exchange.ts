// The request and answer objects of the master's lean intake (node/http/lean-connection.ts): the
// few fields the request path reads, and an answer written to the socket in one write when it
// ends. Node's IncomingMessage and ServerResponse satisfy the same two interfaces, so the path
// from the router to the boards does not know which intake a request came through.
import { type IncomingHttpHeaders, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { EMPTY, HeldAnswer } from './answer.ts';
import type { Answer } from './http-io.ts';

/** What the request path reads of a client's request. */
export interface ClientRequest {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders: string[];
  readonly socket: { readonly remoteAddress?: string | undefined };
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
let dateText = '';
/** The Date header, formatted once a second. */
function httpDate(): string {
  const s = Math.floor(Date.now() / 1000);
  if (s !== dateSecond) {
    dateSecond = s;
    dateText = new Date(s * 1000).toUTCString();
  }
  return dateText;
}

// Header values are written as given: one with CR, LF or NUL would split the answer, so it is dropped.
const UNSAFE = /[\r\n\0]/;

export class LeanResponse extends HeldAnswer implements ClientAnswer {
  writableEnded = false;
  private listeners: Array<{ event: 'close' | 'finish'; fn: () => void; once: boolean }> | undefined;

  constructor(
    private readonly sink: AnswerSink,
    private readonly head: boolean,
    private readonly close: boolean,
    private readonly keepAliveS: number,
  ) {
    super();
  }

  end(body?: string | Buffer): this {
    if (this.writableEnded || this.destroyed) return this;
    this.writableEnded = this.headersSent = true;
    const b = body === undefined ? EMPTY : typeof body === 'string' ? Buffer.from(body) : body;
    if (!this.headers.has('content-length') && !this.head) this.headers.set('content-length', b.length);
    let text = `HTTP/1.1 ${this.statusCode} ${STATUS_CODES[this.statusCode] ?? 'Unknown'}\r\n`;
    for (const [k, v] of this.headers) {
      if (Array.isArray(v)) {
        for (const x of v) if (!UNSAFE.test(x)) text += `${k}: ${x}\r\n`;
      } else if (typeof v === 'number' || !UNSAFE.test(v)) text += `${k}: ${v}\r\n`;
    }
    text += `date: ${httpDate()}\r\n${this.close ? 'connection: close\r\n' : `connection: keep-alive\r\nkeep-alive: timeout=${this.keepAliveS}\r\n`}\r\n`;
    const payload = this.head ? EMPTY : b;
    const out = Buffer.allocUnsafe(text.length + payload.length);
    out.write(text, 0, 'latin1');
    payload.copy(out, text.length);
    this.sink.write(out);
    this.writableFinished = true;
    // Like a ServerResponse: 'finish' then 'close', after the caller's turn.
    process.nextTick(() => {
      this.emit('finish');
      this.emit('close');
      this.sink.answered();
    });
    return this;
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
    return this.listen(event, fn, false);
  }
  once(event: 'close' | 'finish', fn: () => void): this {
    return this.listen(event, fn, true);
  }
  private listen(event: 'close' | 'finish', fn: () => void, once: boolean): this {
    if (!this.listeners) this.listeners = [];
    this.listeners.push({ event, fn, once });
    return this;
  }
  private emit(event: 'close' | 'finish'): void {
    const ls = this.listeners;
    if (!ls) return;
    this.listeners = ls.filter((l) => !(l.once && l.event === event));
    for (const l of ls) if (l.event === event) l.fn();
  }
}
