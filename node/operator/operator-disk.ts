// The station's memory on disk, so a power cut that reboots every board at once loses none of it:
// each board keeps its audit log, its alarm episodes and its history rings in stateDir, each in
// a journal of its own (append-only, group commit, a torn last line skipped, compacted atomically
// to what memory holds, so the disk is bounded by the same limits).
// - Audit entries (every board's, as this board holds them) and alarm transitions (raised,
//   cleared, acknowledged) are appended at once.
// - History is appended in batches every `history.flushS` (flash wears out): a power cut loses
//   at most that much of this board's trend, and the master fills it back when the board rejoins.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Journal, journalText } from '../state/journal.ts';
import type { AlarmView } from './alarms.ts';
import type { LogEntry } from './audit-log.ts';
import type { History } from './history.ts';

/** A journal is rewritten once it holds this many times what memory does. */
const COMPACT_FACTOR = 2;

export interface Restored {
  entries: unknown[];
  alarms: unknown[];
  /** Per point, every sample on disk (merged once, not per batch). */
  history: Map<string, { device: string; point: string; samples: unknown[] }>;
}

type HistoryLine = { s: Array<[string, string, unknown[]]> };

export class OperatorDisk {
  private readonly audit: Journal;
  private readonly episodes: Journal;
  private readonly trend: Journal;
  /** History up to this time is on disk. */
  private flushedTo = -Infinity;
  private samplesOnDisk = 0;

  constructor(
    stateDir: string,
    boardId: string,
    private readonly onError: (what: string, e: Error) => void,
  ) {
    mkdirSync(stateDir, { recursive: true });
    this.audit = new Journal(join(stateDir, `${boardId}.audit.log`));
    this.episodes = new Journal(join(stateDir, `${boardId}.alarms.log`));
    this.trend = new Journal(join(stateDir, `${boardId}.history.log`));
  }

  /** What the last run left (read once, at boot). */
  read(): Restored {
    const history = new Map<string, { device: string; point: string; samples: unknown[] }>();
    for (const raw of this.trend.read()) {
      const l = raw as HistoryLine;
      if (!Array.isArray(l?.s)) continue;
      for (const e of l.s) {
        if (!Array.isArray(e) || typeof e[0] !== 'string' || typeof e[1] !== 'string' || !Array.isArray(e[2])) continue;
        const k = `${e[0]}\u0000${e[1]}`;
        const got = history.get(k) ?? { device: e[0], point: e[1], samples: [] };
        for (const s of e[2]) got.samples.push(s);
        this.samplesOnDisk += e[2].length;
        history.set(k, got);
      }
    }
    return { entries: this.audit.read(), alarms: this.episodes.read(), history };
  }

  /** After the restore: the disk holds what memory now does (history up to its newest sample). */
  restored(history: History, log: () => LogEntry[], alarms: () => AlarmView[]): void {
    this.flushedTo = history.newestAt();
    this.compactHistory(history);
    this.audit.rewrite(() => journalText(log()));
    this.episodes.rewrite(() => journalText(alarms().map(episode)));
  }

  /** A new entry in this board's log (its own or another board's). */
  /** `capacity`: entries the log keeps at most (AuditLog.capacity: the bound on disk too). */
  logged(e: LogEntry, all: () => LogEntry[], capacity: number): void {
    this.audit.append(e).catch((err: Error) => this.onError('audit log', err));
    if (this.audit.lines > COMPACT_FACTOR * capacity) this.audit.rewrite(() => journalText(all()));
  }

  /** An alarm raised, cleared or acknowledged. */
  alarm(v: AlarmView, all: () => AlarmView[]): void {
    this.episodes.append(episode(v)).catch((err: Error) => this.onError('alarm episodes', err));
    if (this.episodes.lines > COMPACT_FACTOR * 4 * Math.max(1, all().length)) this.episodes.rewrite(() => journalText(all().map(episode)));
  }

  /** Every flushS: the samples taken since the last flush, in one line. */
  flushHistory(history: History): void {
    const batch = history.samplesAfter(this.flushedTo);
    if (batch.length === 0) return;
    this.flushedTo = history.newestAt();
    for (const [, , s] of batch) this.samplesOnDisk += s.length;
    if (this.samplesOnDisk > COMPACT_FACTOR * history.capacity) this.compactHistory(history);
    else this.trend.append({ s: batch } satisfies HistoryLine).catch((err: Error) => this.onError('history', err));
  }

  /** Bytes given to the flash since boot (bench:persistence). */
  get bytesWritten(): number {
    return this.audit.bytesWritten + this.episodes.bytesWritten + this.trend.bytesWritten;
  }

  /** Resolves once everything appended so far is on disk. */
  async drained(): Promise<void> {
    await Promise.all([this.audit, this.episodes, this.trend].map((j) => j.drained()));
  }

  /** Once what is queued is on disk. */
  async close(): Promise<void> {
    await this.drained();
    for (const j of [this.audit, this.episodes, this.trend]) j.close();
  }

  /** The whole history rewritten (after samples older than the last flush were merged in: a gap filled, a restore). */
  compactHistory(history: History): void {
    const all = history.samplesAfter(-Infinity);
    this.samplesOnDisk = all.reduce((n, [, , s]) => n + s.length, 0);
    this.trend.rewrite(() => (all.length > 0 ? journalText([{ s: all } satisfies HistoryLine]) : ''));
  }
}

/** What of an alarm is its episode: the rest (message, severity) comes from the config. */
const episode = (v: AlarmView) => ({ id: v.id, active: v.active, since: v.since, clearedAt: v.clearedAt, value: v.value, acked: v.acked });
