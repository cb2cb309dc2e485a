// What a board has started to do to a device, on disk before the device is touched: an
// append-only log in stateDir (one JSON line per event), fsync'd with group commit (every
// command started in one event-loop turn shares one fsync). A command started with no outcome
// when the board restarts ran or did not: its key is answered IDEMPOTENCY_UNKNOWN, never run
// again. Bounded: compacted to the live entries (within the key TTL) when it grows past
// 4 × idempotencyKeysMax lines. Compaction drops only what the TTL expired, never a live key:
// the key store refuses new keys instead, so the live entries stay within idempotencyKeysMax.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Journal, journalText } from '../state/journal.ts';

/** The board's log in stateDir, or none without one (commands are then remembered in memory only). */
export function openIntentLog(stateDir: string | undefined, boardId: string, keysMax: number, ttlMs: number): IntentLog | undefined {
  if (!stateDir) return undefined;
  mkdirSync(stateDir, { recursive: true });
  return new IntentLog(join(stateDir, `${boardId}.intents.log`), keysMax, ttlMs);
}

export interface IntentEntry {
  key: string;
  hash: string;
  state: 'started' | 'done';
  status: number;
  body: string | undefined;
  atMs: number;
}

type Line = { k: string; h: string; s: 's' | 'd' | 'x'; st?: number; r?: string; t: number };

export class IntentLog {
  private readonly journal: Journal;
  private readonly live = new Map<string, IntentEntry>();

  /** `now`: wall-clock ms (the TTL spans restarts). */
  constructor(
    file: string,
    private readonly keysMax: number,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.journal = new Journal(file);
    for (const raw of this.journal.read()) {
      const l = raw as Line;
      if (typeof l?.k !== 'string' || typeof l.h !== 'string' || typeof l.t !== 'number') continue;
      if (l.s === 'x') this.live.delete(l.k);
      else if (l.s === 's') this.live.set(l.k, { key: l.k, hash: l.h, state: 'started', status: 0, body: undefined, atMs: l.t });
      else if (l.s === 'd') this.live.set(l.k, { key: l.k, hash: l.h, state: 'done', status: l.st ?? 200, body: l.r, atMs: l.t });
    }
    this.compact();
  }

  /** What the log held at boot, within the TTL: started-without-outcome entries are the unknown ones. */
  entries(): IntentEntry[] {
    return [...this.live.values()];
  }

  /** Resolves once the start is on disk: only then may the device be touched. */
  started(key: string, hash: string): Promise<void> {
    this.live.set(key, { key, hash, state: 'started', status: 0, body: undefined, atMs: this.now() });
    return this.append({ k: key, h: hash, s: 's', t: this.now() });
  }

  /** The outcome (not awaited: if it is lost, the key is unknown after a restart, never run twice). */
  finished(key: string, hash: string, status: number, body: string | undefined): void {
    this.live.set(key, { key, hash, state: 'done', status, body, atMs: this.now() });
    void this.append({ k: key, h: hash, s: 'd', st: status, ...(body !== undefined && body.length <= 4096 ? { r: body } : {}), t: this.now() }).catch(() => {});
  }

  /** The attempt ended without touching the device: a retry may run it. */
  forget(key: string): void {
    this.live.delete(key);
    void this.append({ k: key, h: '', s: 'x', t: this.now() }).catch(() => {});
  }

  /** Bytes given to the disk since boot. */
  get bytesWritten(): number {
    return this.journal.bytesWritten;
  }

  close(): void {
    this.journal.close();
  }

  private append(line: Line): Promise<void> {
    const p = this.journal.append(line);
    if (this.journal.lines > 4 * this.keysMax) this.compact();
    return p;
  }

  /** Drop what the TTL has expired and keep the rest, by an atomic rewrite. */
  private compact(): void {
    this.journal.rewrite(() => {
      const now = this.now();
      for (const [k, e] of this.live) if (now - e.atMs > this.ttlMs) this.live.delete(k);
      return journalText(
        [...this.live.values()].map((e) =>
          e.state === 'started' ? { k: e.key, h: e.hash, s: 's', t: e.atMs } : { k: e.key, h: e.hash, s: 'd', st: e.status, ...(e.body !== undefined ? { r: e.body } : {}), t: e.atMs },
        ),
      );
    });
  }
}
