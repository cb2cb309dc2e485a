// Server-Sent Events for the UI: a bounded set of listeners (in all, and per user) and a
// change-driven publisher. A stream belongs to the session that opened it: it ends when that
// session is logged out or expires. Each stream is bounded in bytes: while its client is behind,
// events wait coalesced (the latest reading per device, the latest cluster view and alarm list;
// every log entry), and a stream whose backlog passes `bytesMax` is closed (the UI reconnects and
// starts again from the current state). Memory for streams is at most max × bytesMax.
import type { ServerResponse } from 'node:http';
import { EwsError } from '../../shared/errors.ts';

/** Who opened a stream; `sid` undefined when login is off. */
export interface StreamOwner {
  readonly user: string;
  readonly sid: string | undefined;
  readonly expS: number | undefined;
}

interface Stream {
  owner: StreamOwner;
  /** Events waiting for the client to catch up, by what they replace (insertion order is the order they go out in). */
  pending: Map<string, string>;
  pendingBytes: number;
}

const KEEP_ALIVE_MS = 15_000;
/** Longest delay a Node timer takes; later expiries are caught by the keep-alive sweep. */
const TIMER_MS_MAX = 2 ** 31 - 1;

export class EventsHub {
  private readonly clients = new Map<ServerResponse, Stream>();
  private readonly keepAlive: NodeJS.Timeout;
  private logSeq = 0;
  /** Streams closed because their client fell more than bytesMax behind. */
  closedBehind = 0;
  constructor(
    private readonly max: number,
    private readonly perUserMax: number,
    private readonly bytesMax: number,
  ) {
    this.keepAlive = setInterval(() => {
      this.endExpired(Date.now());
      this.send('keep-alive', ': keep-alive\n\n');
    }, KEEP_ALIVE_MS).unref();
  }
  get size(): number {
    return this.clients.size;
  }

  add(res: ServerResponse, owner: StreamOwner, initial: Array<[string, unknown]>, nowMs: number): void {
    if (this.clients.size >= this.max) throw new EwsError('QUEUE_FULL', `at most ${this.max} event listeners`, { retryAfterS: 5 });
    let mine = 0;
    for (const s of this.clients.values()) if (s.owner.user === owner.user) mine++;
    if (mine >= this.perUserMax) throw new EwsError('RATE_LIMITED', `at most ${this.perUserMax} event streams per user on a board`, { retryAfterS: 5 });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
    const stream: Stream = { owner, pending: new Map(), pendingBytes: 0 };
    this.clients.set(res, stream);
    let expiry: NodeJS.Timeout | undefined;
    if (owner.expS !== undefined && owner.expS * 1000 - nowMs < TIMER_MS_MAX) expiry = setTimeout(() => res.end(), Math.max(0, owner.expS * 1000 - nowMs)).unref();
    res.on('close', () => {
      this.clients.delete(res);
      if (expiry) clearTimeout(expiry);
    });
    res.on('drain', () => this.catchUp(res, stream));
    for (const [e, d] of initial) this.put(res, stream, e, `event: ${e}\ndata: ${JSON.stringify(d)}\n\n`);
  }

  /** A session was logged out: its streams end. */
  endSession(sid: string): void {
    for (const [res, s] of this.clients) if (s.owner.sid === sid) res.end();
  }

  /** Every session of a user issued until now was logged out: their streams end (the UI logs in again). */
  endUser(user: string): void {
    for (const [res, s] of this.clients) if (s.owner.sid !== undefined && s.owner.user === user) res.end();
  }

  publish(event: string, data: unknown): void {
    if (this.clients.size === 0) return;
    // What an event replaces while a client is behind: a device's reading its earlier one; a log entry nothing.
    const id = (data as { id?: unknown } | null)?.id;
    const key = event === 'log' ? `log ${++this.logSeq}` : event === 'device' && typeof id === 'string' ? `device ${id}` : event;
    this.send(key, `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  private endExpired(nowMs: number): void {
    for (const [res, s] of this.clients) if (s.owner.expS !== undefined && s.owner.expS * 1000 <= nowMs) res.end();
  }

  private send(key: string, frame: string): void {
    for (const [res, s] of this.clients) this.put(res, s, key, frame);
  }

  private put(res: ServerResponse, s: Stream, key: string, frame: string): void {
    if (!res.writableNeedDrain && s.pending.size === 0) {
      res.write(frame);
    } else {
      const old = s.pending.get(key);
      if (old !== undefined) s.pendingBytes -= old.length;
      s.pending.delete(key);
      s.pending.set(key, frame);
      s.pendingBytes += frame.length;
    }
    if (res.writableLength + s.pendingBytes > this.bytesMax) {
      this.closedBehind++;
      this.clients.delete(res);
      res.destroy();
    }
  }

  private catchUp(res: ServerResponse, s: Stream): void {
    const frames = [...s.pending.values()];
    s.pending.clear();
    s.pendingBytes = 0;
    for (const f of frames) res.write(f);
  }

  close(): void {
    clearInterval(this.keepAlive);
    for (const c of this.clients.keys()) c.end();
    this.clients.clear();
  }
}
