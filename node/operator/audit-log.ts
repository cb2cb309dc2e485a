import { createHash } from 'node:crypto';

// The cluster's event and audit log: who pressed what, logins, failovers, devices going offline,
// alarms raised and acknowledged. Each entry is made on one board and shared in LOG packets;
// every board keeps the same bounded ring (newest kept), so the log survives any one board, and
// a board that (re)joins gets the master's recent entries.

export type LogKind = 'command' | 'login' | 'master' | 'device' | 'alarm' | 'alarm-ack' | 'notify';
const KINDS: readonly LogKind[] = ['command', 'login', 'master', 'device', 'alarm', 'alarm-ack', 'notify'];

export interface LogEntry {
  /** `board.bootEpoch.seq`: unique across the cluster and across restarts. */
  id: string;
  at: number;
  /** The board that made the entry. */
  board: string;
  kind: LogKind;
  user: string | null;
  /** What it is about: a device, an alarm, a board. */
  subject: string | null;
  text: string;
  /** HTTP status of a command or a login. */
  status: number | null;
}

const STR_MAX = 160;
/** A user name or subject at most (checked on receipt, and cut to it when an entry is made, so every board takes every entry). */
const NAME_MAX = 64;
const str = (v: unknown, max: number): string | null | undefined => (v === null ? null : typeof v === 'string' && v.length <= max ? v : undefined);

/** An entry from a LOG packet, checked; undefined if it does not fit. */
export function parseLogEntry(o: unknown): LogEntry | undefined {
  if (typeof o !== 'object' || o === null) return undefined;
  const e = o as Record<string, unknown>;
  const id = str(e.id, 64),
    board = str(e.board, 32),
    user = str(e.user, NAME_MAX),
    subject = str(e.subject, NAME_MAX),
    text = str(e.text, STR_MAX);
  const kind = KINDS.find((k) => k === e.kind);
  const at = typeof e.at === 'number' && Number.isFinite(e.at) && e.at > 0 ? e.at : undefined;
  const status = e.status === null ? null : typeof e.status === 'number' && Number.isInteger(e.status) && e.status >= 0 && e.status < 1000 ? e.status : undefined;
  if (!id || !board || !kind || at === undefined || user === undefined || subject === undefined || !text || status === undefined) return undefined;
  return { id, at, board, kind, user, subject, text, status };
}

/** A failed login: anyone can make one, so they have a share of their own and never push out what matters. */
export const isFailedLogin = (e: LogEntry): boolean => e.kind === 'login' && e.status !== 200;

/** How a name typed at a failed login is kept when it is no configured user's (it may well be a password): a short hash, never the text. */
export function typedName(name: string): string {
  return `unknown #${createHash('sha256').update(name).digest('hex').slice(0, 8)}`;
}

export class AuditLog {
  private readonly entries: LogEntry[] = [];
  private readonly ids = new Set<string>();
  private seq = 0;
  private failed = 0;
  /** Failed logins kept at most: a tenth of the log, at least 10. */
  readonly failedMax: number;
  /** A new entry from this board or another: the SSE stream and MQTT hear of it. */
  onEntry: (e: LogEntry) => void = () => {};

  constructor(
    private readonly max: number,
    private readonly board: string,
    private readonly bootEpoch: number,
  ) {
    this.failedMax = Math.max(10, Math.floor(max / 10));
  }

  /** A new entry made here (the caller broadcasts it). */
  make(kind: LogKind, fields: { user?: string | null; subject?: string | null; text: string; status?: number | null }, at = Date.now()): LogEntry {
    const e: LogEntry = {
      id: `${this.board}.${this.bootEpoch}.${++this.seq}`,
      at,
      board: this.board,
      kind,
      user: fields.user?.slice(0, NAME_MAX) ?? null,
      subject: fields.subject?.slice(0, NAME_MAX) ?? null,
      text: fields.text.slice(0, STR_MAX),
      status: fields.status ?? null,
    };
    this.add(e);
    return e;
  }

  /**
   * An entry from anywhere; false if already held or too old to keep. Kept in time order. Failed
   * logins have their own bound (failedMax: the oldest of them go first); everything else has
   * `max`, so no number of failed logins can push out a command, an alarm, a master or an
   * acknowledgement.
   */
  add(e: LogEntry): boolean {
    if (this.ids.has(e.id)) return false;
    const failed = isFailedLogin(e);
    let i = this.entries.length;
    while (i > 0 && this.entries[i - 1]!.at > e.at) i--;
    this.entries.splice(i, 0, e);
    this.ids.add(e.id);
    if (failed) this.failed++;
    // Past a bound, the oldest of that share goes (possibly the one just added: it was older than all kept).
    if (failed ? this.failed > this.failedMax : this.entries.length - this.failed > this.max) {
      const k = this.entries.findIndex((x) => isFailedLogin(x) === failed);
      const [gone] = this.entries.splice(k, 1);
      this.ids.delete(gone!.id);
      if (failed) this.failed--;
      if (gone === e) return false;
    }
    this.onEntry(e);
    return true;
  }

  /** Entries at or after `sinceMs`, oldest first, at most `limit` (the newest of them). */
  since(sinceMs: number, limit = this.max): LogEntry[] {
    let i = this.entries.length;
    while (i > 0 && this.entries[i - 1]!.at >= sinceMs) i--;
    return this.entries.slice(Math.max(i, this.entries.length - limit));
  }

  get size(): number {
    return this.entries.length;
  }

  /** Entries this log keeps at most, failed logins' share included (the bound on disk too). */
  get capacity(): number {
    return this.max + this.failedMax;
  }
}
