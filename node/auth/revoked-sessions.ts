// Logged-out sessions, remembered until they would have expired anyway, and never forgotten
// before: a bounded set of session ids, and when it is full of live ones a logout becomes its
// user's "not valid before" time (every session of that user issued until then is dead; the user
// logs in again), so no number of logouts by anyone can bring a logged-out token back. With a
// state dir they are on disk, appended to a journal (one line per logout, compacted to what is
// live), so a logout holds across restarts. Boards share them through REVOKE packets.
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Journal, journalText } from '../state/journal.ts';

/** The journal in stateDir (one per board, like its boot epoch). */
export const revokedFile = (stateDir: string, boardId: string): string => join(stateDir, `${boardId}.revoked.log`);
/** What earlier versions wrote: read once, then removed. */
const oldFile = (file: string) => file.replace(/\.revoked\.log$/, '.revoked-sessions.json');
const SID_CHARS_MAX = 64;
const USER_CHARS_MAX = 128;
/** Users with a "not valid before" time at most (configured users and services are far fewer). */
const USERS_MAX = 4096;

/** A logged-out session (with its user, so a peer whose set is full can fall back to the user's not-valid-before), or a user's not-valid-before time. */
export type RevokedEntry = readonly [sid: string, expS: number, user: string] | readonly ['~', user: string, notBeforeMs: number, expS: number];

export class RevokedSessions {
  /** sid -> [expiry (s since epoch), user]. */
  private readonly map = new Map<string, [number, string]>();
  /** user -> [not valid before (ms), until when that matters (s)]. */
  private readonly users = new Map<string, [number, number]>();
  private readonly journal: Journal | undefined;
  /** Entries from peers that neither fitted nor named their user (an earlier version's). */
  dropped = 0;

  /** `file`: where they are kept (revokedFile()); undefined = in memory only. `sessionTtlS`: how long a session issued now may live. */
  constructor(
    private readonly max: number,
    file: string | undefined,
    nowMs: number,
    private readonly onWriteError: (e: Error) => void = () => {},
    private readonly sessionTtlS = 30 * 86400,
  ) {
    if (!file) return;
    mkdirSync(dirname(file), { recursive: true });
    this.journal = new Journal(file);
    const lines = this.journal.read();
    if (existsSync(oldFile(file))) {
      try {
        const saved: unknown = JSON.parse(readFileSync(oldFile(file), 'utf8'));
        if (Array.isArray(saved)) lines.push(...saved);
      } catch {
        /* a file that is not ours */
      }
    }
    this.merge(lines, nowMs, 2 * this.max);
    this.journal.rewrite(() => journalText(this.list(nowMs)));
    rmSync(oldFile(file), { force: true });
  }

  get size(): number {
    return this.map.size;
  }

  /** Once every logout appended so far is on disk. */
  async drained(): Promise<void> {
    await this.journal?.drained();
  }

  has(sid: string): boolean {
    return this.map.has(sid);
  }

  /** Sessions of `user` issued before this time (ms) are dead; 0 when none. */
  notBefore(user: string): number {
    return this.users.get(user)?.[0] ?? 0;
  }

  /** A logout on this board: the entries to share (the session, or its user's not-valid-before when the set is full of live ones). */
  revoke(sid: string, expS: number, user: string, nowMs: number): RevokedEntry[] {
    return this.add([[sid, expS, user]], nowMs, this.max);
  }

  /** Entries from another board (or a bulk send): those that changed anything here. Peers' get twice the room before falling back. */
  add(entries: readonly unknown[], nowMs: number, room = 2 * this.max): RevokedEntry[] {
    const added = this.merge(entries, nowMs, room);
    if (added.length > 0 && this.journal) {
      this.journal.appendAll(added).catch((e: Error) => this.onWriteError(e));
      if (this.journal.lines > 2 * (this.map.size + this.users.size) + 16) this.journal.rewrite(() => journalText(this.list(nowMs)));
    }
    return added;
  }

  /** The live entries. */
  list(nowMs: number): RevokedEntry[] {
    this.expire(nowMs);
    return [...[...this.map].map(([sid, [exp, user]]) => [sid, exp, user] as const), ...[...this.users].map(([user, [nvb, exp]]) => ['~', user, nvb, exp] as const)];
  }

  private merge(entries: readonly unknown[], nowMs: number, room: number): RevokedEntry[] {
    this.expire(nowMs);
    const added: RevokedEntry[] = [];
    for (const e of entries) {
      if (!Array.isArray(e)) continue;
      if (e[0] === '~' && e.length === 4) {
        const [, user, nvb, exp] = e as [string, unknown, unknown, unknown];
        if (typeof user !== 'string' || user.length === 0 || user.length > USER_CHARS_MAX || typeof nvb !== 'number' || !Number.isFinite(nvb) || typeof exp !== 'number' || !(exp * 1000 > nowMs))
          continue;
        if (this.setUser(user, nvb, exp)) added.push(['~', user, nvb, exp]);
        continue;
      }
      if (e.length !== 2 && e.length !== 3) continue;
      const [sid, exp, user] = e as [unknown, unknown, unknown];
      if (typeof sid !== 'string' || sid.length === 0 || sid.length > SID_CHARS_MAX || typeof exp !== 'number' || !(exp * 1000 > nowMs) || this.map.has(sid)) continue;
      const who = typeof user === 'string' && user.length > 0 && user.length <= USER_CHARS_MAX ? user : undefined;
      if (this.map.size < room) {
        this.map.set(sid, [exp, who ?? '']);
        added.push([sid, exp, who ?? '']);
      } else if (who !== undefined) {
        // Full of live logouts: this one covers every session of its user issued until now.
        const until = Math.floor(nowMs / 1000) + this.sessionTtlS;
        if (this.setUser(who, nowMs, until)) added.push(['~', who, nowMs, until]);
      } else this.dropped++;
    }
    return added;
  }

  private setUser(user: string, nvb: number, exp: number): boolean {
    const old = this.users.get(user);
    if (old && old[0] >= nvb) return false;
    if (!old && this.users.size >= USERS_MAX) return false;
    this.users.set(user, [nvb, Math.max(exp, old?.[1] ?? 0)]);
    return true;
  }

  private expire(nowMs: number): void {
    for (const [sid, [exp]] of this.map) if (exp * 1000 <= nowMs) this.map.delete(sid);
    for (const [user, [, exp]] of this.users) if (exp * 1000 <= nowMs) this.users.delete(user);
  }
}
