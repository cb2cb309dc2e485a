// Logged-out sessions, remembered until they would have expired anyway: bounded (the oldest
// expiry goes first when full) and, with a state dir, on disk (written durably on every change),
// so a logout holds across restarts. Boards share them through REVOKE packets.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeDurably } from '../boot-epoch.ts';

/** The file in stateDir (one per board, like its boot epoch). */
export const revokedFile = (stateDir: string, boardId: string): string => join(stateDir, `${boardId}.revoked-sessions.json`);
const SID_CHARS_MAX = 64;

export type RevokedEntry = readonly [sid: string, expS: number];

export class RevokedSessions {
  /** sid -> expiry (s since epoch). */
  private readonly map = new Map<string, number>();
  /** `file`: where they are kept (revokedFile()); undefined = in memory only. */
  constructor(
    private readonly max: number,
    private readonly file: string | undefined,
    nowMs: number,
    private readonly onWriteError: (e: Error) => void = () => {},
  ) {
    if (!this.file) return;
    let saved: unknown;
    try {
      saved = JSON.parse(readFileSync(this.file, 'utf8'));
    } catch {
      return; // first boot, or a file that is not ours: start empty
    }
    if (Array.isArray(saved)) this.merge(saved, nowMs);
  }

  get size(): number {
    return this.map.size;
  }

  has(sid: string): boolean {
    return this.map.has(sid);
  }

  /** Adds entries ([sid, exp] pairs; anything else is ignored); true if any was new. Persists once. */
  add(entries: readonly unknown[], nowMs: number): boolean {
    const added = this.merge(entries, nowMs);
    if (added) this.save();
    return added;
  }

  /** The live entries, soonest expiry last. */
  list(nowMs: number): RevokedEntry[] {
    this.expire(nowMs);
    return [...this.map];
  }

  private merge(entries: readonly unknown[], nowMs: number): boolean {
    this.expire(nowMs);
    let added = false;
    for (const e of entries) {
      if (!Array.isArray(e) || e.length !== 2) continue;
      const [sid, exp] = e as [unknown, unknown];
      if (typeof sid !== 'string' || sid.length === 0 || sid.length > SID_CHARS_MAX || typeof exp !== 'number' || !(exp * 1000 > nowMs) || this.map.has(sid)) continue;
      if (this.map.size >= this.max) this.evictSoonest();
      this.map.set(sid, exp);
      added = true;
    }
    return added;
  }

  private expire(nowMs: number): void {
    for (const [sid, exp] of this.map) if (exp * 1000 <= nowMs) this.map.delete(sid);
  }

  private evictSoonest(): void {
    let victim: string | undefined,
      soonest = Number.POSITIVE_INFINITY;
    for (const [sid, exp] of this.map) {
      if (exp < soonest) {
        soonest = exp;
        victim = sid;
      }
    }
    if (victim !== undefined) this.map.delete(victim);
  }

  private save(): void {
    if (!this.file) return;
    try {
      writeDurably(this.file, JSON.stringify([...this.map]));
    } catch (e) {
      this.onWriteError(e as Error);
    }
  }
}
