// Where a handler writes its answer: a client's ServerResponse, or, for a request that came over
// the dispatch link, a captured answer that becomes one ANSWER frame. Handlers see only this.
import type { Answer, HeaderValue } from './http-io.ts';

/** Status and headers held until the answer ends (then written out whole, by the subclass). */
export abstract class HeldAnswer implements Answer {
  headersSent = false;
  destroyed = false;
  writableFinished = false;
  statusCode = 200;
  /** Made at the first header set: a forwarded answer on the master sets none. */
  private map: Map<string, HeaderValue> | undefined;
  private static readonly NONE: ReadonlyMap<string, HeaderValue> = new Map();

  /** The headers set so far (read-only; set them with setHeader or writeHead). */
  protected get headers(): ReadonlyMap<string, HeaderValue> {
    return this.map ?? HeldAnswer.NONE;
  }

  setHeader(name: string, value: HeaderValue): this {
    if (!this.map) this.map = new Map();
    this.map.set(name.toLowerCase(), value);
    return this;
  }
  getHeader(name: string): HeaderValue | undefined {
    return this.map?.get(name.toLowerCase());
  }
  writeHead(status: number, headers?: Record<string, HeaderValue>): this {
    this.statusCode = status;
    if (headers) for (const k in headers) this.setHeader(k, headers[k]!);
    this.headersSent = true;
    return this;
  }
  abstract end(body?: string | Buffer): this;
  abstract destroy(): this;
}

/** An answer held in memory until `end`, then handed over whole (status, headers, body). */
export class CapturedAnswer extends HeldAnswer {
  constructor(private readonly done: (status: number, headers: string[], body: Buffer) => void) {
    super();
  }

  end(body?: string | Buffer): this {
    if (this.writableFinished || this.destroyed) return this;
    this.headersSent = true;
    this.writableFinished = true;
    const flat: string[] = [];
    for (const [k, v] of this.headers) {
      if (Array.isArray(v)) for (const x of v) flat.push(k, String(x));
      else flat.push(k, String(v));
    }
    this.done(this.statusCode, flat, body === undefined ? EMPTY : typeof body === 'string' ? Buffer.from(body) : body);
    return this;
  }
  /** The handler gave up mid-answer: the master sees a failed board (502). */
  destroy(): this {
    if (this.writableFinished || this.destroyed) return this;
    this.destroyed = true;
    this.done(0, [], EMPTY);
    return this;
  }
}

/** An empty body, shared (never written into). */
export const EMPTY = Buffer.alloc(0);
