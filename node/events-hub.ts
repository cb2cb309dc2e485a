// Server-Sent Events for the UI: a bounded set of listeners (in all, and per user) and a
// change-driven publisher. A stream belongs to the session that opened it: it ends when that
// session is logged out or expires.
import type { ServerResponse } from 'node:http';
import { EwsError } from '../shared/errors.ts';

/** Who opened a stream; `sid` undefined when login is off. */
export interface StreamOwner {
  readonly user: string;
  readonly sid: string | undefined;
  readonly expS: number | undefined;
}

const KEEP_ALIVE_MS = 15_000;
/** Longest delay a Node timer takes; later expiries are caught by the keep-alive sweep. */
const TIMER_MS_MAX = 2 ** 31 - 1;

export class EventsHub {
  private readonly clients = new Map<ServerResponse, StreamOwner>();
  private readonly keepAlive: NodeJS.Timeout;
  constructor(
    private readonly max: number,
    private readonly perUserMax: number,
  ) {
    this.keepAlive = setInterval(() => {
      this.endExpired(Date.now());
      this.write(': keep-alive\n\n');
    }, KEEP_ALIVE_MS).unref();
  }
  get size(): number {
    return this.clients.size;
  }

  add(res: ServerResponse, owner: StreamOwner, initial: Array<[string, unknown]>, nowMs: number): void {
    if (this.clients.size >= this.max) throw new EwsError('QUEUE_FULL', `at most ${this.max} event listeners`, { retryAfterS: 5 });
    let mine = 0;
    for (const o of this.clients.values()) if (o.user === owner.user) mine++;
    if (mine >= this.perUserMax) throw new EwsError('RATE_LIMITED', `at most ${this.perUserMax} event streams per user on a board`, { retryAfterS: 5 });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
    this.clients.set(res, owner);
    let expiry: NodeJS.Timeout | undefined;
    if (owner.expS !== undefined && owner.expS * 1000 - nowMs < TIMER_MS_MAX) expiry = setTimeout(() => res.end(), Math.max(0, owner.expS * 1000 - nowMs)).unref();
    res.on('close', () => {
      this.clients.delete(res);
      if (expiry) clearTimeout(expiry);
    });
    for (const [e, d] of initial) res.write(`event: ${e}\ndata: ${JSON.stringify(d)}\n\n`);
  }

  /** A session was logged out: its streams end. */
  endSession(sid: string): void {
    for (const [res, o] of this.clients) if (o.sid === sid) res.end();
  }

  publish(event: string, data: unknown): void {
    if (this.clients.size > 0) this.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  private endExpired(nowMs: number): void {
    for (const [res, o] of this.clients) if (o.expS !== undefined && o.expS * 1000 <= nowMs) res.end();
  }

  private write(s: string): void {
    for (const c of this.clients.keys()) c.write(s);
  }

  close(): void {
    clearInterval(this.keepAlive);
    for (const c of this.clients.keys()) c.end();
    this.clients.clear();
  }
}
