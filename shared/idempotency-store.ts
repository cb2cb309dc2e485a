// Recent Idempotency-Key records, bounded in count and age. Pure: time is an argument.
// A record is `pending` on the board executing it, then `done` with the answer to replay.
// `unknown`: the executing board failed after the command was started and before its outcome
// was recorded (its intent log says so on restart): the device may have run it; never again.
// No record leaves before its TTL: a store full of live keys refuses a new key (`full`, 503
// IDEMPOTENCY_STORE_FULL) rather than forget one a client may still retry. Peers' copies (IDEM
// packets) get twice the room, since every board admits new keys against the same bound and
// each store holds every board's; past that a copy is dropped and counted, never a held one.
import { createHash } from 'node:crypto';

export interface IdemRecord {
  key: string;
  /** Hash of method, path and body: the same key with anything else is a conflict (409). */
  hash: string;
  state: 'pending' | 'done' | 'unknown';
  board: number;
  status: number;
  /** The answer's body; undefined when too large to replicate (ask `board`). */
  body: string | undefined;
  atMs: number;
}

export type IdemCheck =
  | { kind: 'new' }
  | { kind: 'full'; retryAfterS: number }
  | { kind: 'conflict' }
  | { kind: 'pending'; board: number }
  | { kind: 'unknown'; board: number }
  | { kind: 'done'; rec: IdemRecord };

/** An Idempotency-Key as a client sends it. */
export const KEY_RE = /^[\x21-\x7e]{1,128}$/;
/** A key as the cluster records it: scoped to who sent it (see scopedKey). */
export const SCOPED_KEY_RE = /^[\x21-\x7e]{1,160}$/;

/**
 * Keys are the pair (who, key): another user's same key is another command, and cannot replay or
 * block this one. `who` is a user's name, or a service's (schedules, MQTT) marked `service`: a
 * service's scope starts with `~`, which no user's (a hash in base64url) can.
 */
export function scopedKey(who: string, key: string, service: boolean): string {
  const scope = service ? `~${who.replace(/[^\x21-\x7e]/g, '_').slice(0, 16)}` : createHash('sha256').update(who).digest('base64url').slice(0, 11);
  return `${scope}.${key}`;
}

export function requestHash(method: string, path: string, body: Buffer): string {
  return createHash('sha256').update(`${method} ${path}\n`).update(body).digest('base64url').slice(0, 22);
}

export class IdempotencyStore {
  /** In the order of their last update, which is the order they expire in. */
  private readonly recs = new Map<string, IdemRecord>();
  /** New keys refused because the store was full of live ones. */
  refused = 0;
  /** Peers' records not kept because even their room was full. */
  dropped = 0;
  constructor(
    /** Live keys this board admits at most (limits.idempotencyKeysMax). */
    readonly countMax: number,
    private readonly ttlMs: number,
  ) {}

  get size(): number {
    return this.recs.size;
  }

  /** What a request with this key may do now. `full`: the key is new and there is no room for it before the oldest record expires. */
  check(key: string, hash: string, nowMs: number): IdemCheck {
    const r = this.get(key, nowMs);
    if (!r) return this.roomFor(nowMs) ? { kind: 'new' } : { kind: 'full', retryAfterS: this.retryAfterS(nowMs) };
    if (r.hash !== hash) return { kind: 'conflict' };
    if (r.state === 'pending') return { kind: 'pending', board: r.board };
    if (r.state === 'unknown') return { kind: 'unknown', board: r.board };
    return { kind: 'done', rec: r };
  }

  /**
   * Record (or merge from another board) a record; a done record is never replaced by a pending or unknown one, an unknown one never by a pending one.
   * A new key is taken only while there is room: `countMax` for this board's own (`own`), twice that for peers' copies. False: not kept (counted).
   */
  put(rec: IdemRecord, nowMs: number, own = false): boolean {
    const old = this.get(rec.key, nowMs);
    if (old && old.state === 'done' && rec.state !== 'done') return true;
    if (old && old.state === 'unknown' && rec.state === 'pending') return true;
    if (old && old.state === 'done' && rec.state === 'done' && old.body !== undefined && rec.body === undefined) return true;
    if (!old && !this.roomFor(nowMs, own ? this.countMax : 2 * this.countMax)) {
      if (own) this.refused++;
      else this.dropped++;
      return false;
    }
    this.recs.delete(rec.key);
    this.recs.set(rec.key, { ...rec, atMs: nowMs });
    return true;
  }

  /** A new key this board refused (the caller answers 503). */
  refuse(): void {
    this.refused++;
  }

  /** A pending record whose attempt ended without touching the device: forget it, a retry may run. */
  drop(key: string): void {
    this.recs.delete(key);
  }

  private get(key: string, nowMs: number): IdemRecord | undefined {
    const r = this.recs.get(key);
    if (r && nowMs - r.atMs > this.ttlMs) {
      this.recs.delete(key);
      return undefined;
    }
    return r;
  }

  /** Expired records go first (they are at the front); then, is there room below `max`? */
  private roomFor(nowMs: number, max = this.countMax): boolean {
    for (const [k, r] of this.recs) {
      if (nowMs - r.atMs <= this.ttlMs) break;
      this.recs.delete(k);
    }
    return this.recs.size < max;
  }

  /** Seconds until the oldest record expires (at least 1). */
  private retryAfterS(nowMs: number): number {
    const first = this.recs.values().next().value;
    return first ? Math.max(1, Math.ceil((first.atMs + this.ttlMs - nowMs) / 1000)) : 1;
  }
}

/** The wire form in IDEM packets (validated on receipt). */
export function parseIdem(body: Record<string, unknown>, boards: number): IdemRecord | undefined {
  const { k, h, s, b, st, r } = body;
  if (typeof k !== 'string' || !SCOPED_KEY_RE.test(k) || typeof h !== 'string' || h.length > 64) return undefined;
  if (s !== 'p' && s !== 'd' && s !== 'u') return undefined;
  if (typeof b !== 'number' || !Number.isInteger(b) || b < 0 || b >= boards) return undefined;
  if (typeof st !== 'number' || !Number.isInteger(st) || st < 100 || st > 599) return undefined;
  if (r !== undefined && typeof r !== 'string') return undefined;
  return { key: k, hash: h, state: s === 'p' ? 'pending' : s === 'u' ? 'unknown' : 'done', board: b, status: st, body: r, atMs: 0 };
}

/** An IDEM packet's JSON without the answer body: key (≤ 160 characters, each escaped at worst to 2), hash, state, board, status. */
export const IDEM_RECORD_BYTES_MAX = 464;

export function idemWire(rec: IdemRecord, bodyBytesMax: number): Record<string, unknown> {
  const w: Record<string, unknown> = { k: rec.key, h: rec.hash, s: rec.state === 'pending' ? 'p' : rec.state === 'unknown' ? 'u' : 'd', b: rec.board, st: rec.status };
  if (rec.body !== undefined && Buffer.byteLength(rec.body) <= bodyBytesMax) w.r = rec.body;
  return w;
}
