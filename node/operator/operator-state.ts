// What an operator reads besides live values: trends (history), alarms and the audit log, kept on
// every board. Entries of the log travel in LOG packets (each sent twice; a board that joins gets
// the master's recent ones in bulk); readings feed the history; alarms are evaluated here from
// the readings and the state table, and only the master writes their raising and clearing to the
// log (every board would otherwise write the same line).
import type { Config } from '../../shared/config.ts';
import type { AppMessage } from '../../shared/protocol.ts';
import { broadcastList } from '../cluster/list-broadcast.ts';
import type { DeviceView } from '../devices/device-directory.ts';
import { type AlarmInputs, Alarms, type AlarmView } from './alarms.ts';
import { AuditLog, type LogEntry, type LogKind, parseLogEntry, typedName } from './audit-log.ts';
import { History } from './history.ts';
import type { OperatorDisk } from './operator-disk.ts';

/** Entries a (re)joining board gets from the master. */
const JOIN_ENTRIES = 200;

export interface OperatorDeps {
  cfg: Config;
  self: number;
  bootEpoch: number;
  /** Broadcast a LOG packet; false if the body does not fit. */
  broadcast(type: AppMessage['type'], body: Record<string, unknown>): boolean;
  isMaster(): boolean;
  devices(): DeviceView[];
  boards(): AlarmInputs['boards'];
  /** Alarms changed (raised, cleared, acknowledged): the UI and MQTT hear of it. */
  alarmsChanged(list: AlarmView[]): void;
  logged(e: LogEntry): void;
  /** The station's memory on disk (stateDir); none: memory only. */
  disk?: OperatorDisk;
}

/** What a board sends one that fills its gap (GET /api/sync): the log and the history since a time. */
export interface SyncBody {
  log: LogEntry[];
  history: Array<[string, string, Array<[number, number]>]>;
}

export class OperatorState {
  readonly history: History;
  readonly log: AuditLog;
  readonly alarms: Alarms;

  constructor(private readonly d: OperatorDeps) {
    const { cfg } = d;
    this.history = new History(cfg.devices, cfg.history);
    this.log = new AuditLog(cfg.limits.auditLogMax, cfg.boards[d.self]!.id, d.bootEpoch);
    this.alarms = new Alarms(
      cfg.alarms,
      cfg.devices.map((x) => x.id),
      cfg.boards.map((b) => b.id),
    );
    const disk = d.disk;
    if (disk) this.restore(disk, Date.now());
    this.log.onEntry = (e) => {
      d.logged(e);
      disk?.logged(e, () => this.log.since(0), this.log.capacity);
    };
  }

  /** A pushed config's devices and alarms, live (history rings and alarm episodes of what stays are kept). */
  reconfigure(cfg: Config): void {
    this.history.reconfigure(cfg.devices);
    this.alarms.reconfigure(
      cfg.alarms,
      cfg.devices.map((x) => x.id),
      cfg.boards.map((b) => b.id),
    );
  }

  /** Boot: the log (its acknowledgements re-applied), the alarm episodes, the history, as the disk has them. */
  private restore(disk: OperatorDisk, nowMs: number): void {
    const saved = disk.read();
    for (const raw of saved.entries) {
      const e = parseLogEntry(raw);
      if (e && this.log.add(e) && e.kind === 'alarm-ack' && e.subject) this.alarms.ack(e.subject, e.user ?? '?', e.at);
    }
    this.alarms.restore(saved.alarms);
    for (const { device, point, samples } of saved.history.values()) this.history.merge(device, point, samples, nowMs);
    disk.restored(
      this.history,
      () => this.log.since(0),
      () => this.alarms.list(),
    );
  }

  /** A login: a name typed at a failed one is kept as a hash unless it is a configured user's (it may be a password). */
  recordLogin(user: string, ok: boolean, client: string, known: boolean): void {
    this.record('login', { user: ok || known ? user : typedName(user), subject: client, status: ok ? 200 : 401, text: ok ? 'logged in' : 'wrong name or password' });
  }

  /** Newest time this board holds anything for (a rejoining board asks the master for what came after). */
  newestAt(): number {
    const last = this.log.since(0).at(-1)?.at ?? -Infinity;
    return Math.max(last, this.history.newestAt());
  }

  /** GET /api/sync: what a board that was away asks for. */
  syncSince(sinceMs: number): SyncBody {
    return { log: this.log.since(sinceMs), history: this.history.samplesAfter(sinceMs - 1) };
  }

  /** The master's answer to /api/sync, checked entry by entry. */
  mergeSync(body: unknown, nowMs = Date.now()): { entries: number; points: number } {
    if (typeof body !== 'object' || body === null) return { entries: 0, points: 0 };
    const b = body as Record<string, unknown>;
    let entries = 0,
      points = 0;
    for (const raw of Array.isArray(b.log) ? b.log : []) {
      const e = parseLogEntry(raw);
      if (!e || !this.log.add(e)) continue;
      entries++;
      if (e.kind === 'alarm-ack' && e.subject) this.ackApplied(e);
    }
    for (const h of Array.isArray(b.history) ? b.history : []) {
      if (!Array.isArray(h) || typeof h[0] !== 'string' || typeof h[1] !== 'string') continue;
      this.history.merge(h[0], h[1], h[2], nowMs);
      points++;
    }
    // Samples older than the last flush: the disk gets the whole history again.
    if (points > 0) this.d.disk?.compactHistory(this.history);
    return { entries, points };
  }

  /** Alarm episodes from a backup: they fill in what this board has never seen, and their acknowledgements count. */
  mergeAlarms(saved: readonly unknown[]): void {
    const fresh = saved.filter((raw) => {
      const id = (raw as { id?: unknown } | null)?.id;
      return typeof id === 'string' && this.alarms.get(id)?.since === null;
    });
    this.alarms.restore(fresh);
    for (const raw of saved) {
      const a = raw as { id?: unknown; acked?: { user?: unknown; at?: unknown } | null };
      if (typeof a?.id === 'string' && typeof a.acked?.user === 'string' && typeof a.acked.at === 'number') this.alarms.ack(a.id, a.acked.user.slice(0, 64), a.acked.at);
    }
    for (const v of this.alarms.list()) this.d.disk?.alarm(v, () => this.alarms.list());
    this.d.alarmsChanged(this.alarms.list());
  }

  /** Every history.flushS, and at shutdown: this board's new samples to disk. */
  flushHistory(): void {
    this.d.disk?.flushHistory(this.history);
  }

  /** Write an entry here and share it with every board. */
  record(kind: LogKind, fields: { user?: string | null; subject?: string | null; text: string; status?: number | null }): LogEntry {
    const e = this.log.make(kind, fields);
    if (kind === 'alarm-ack' && e.subject) this.ackApplied(e);
    this.send([e]);
    return e;
  }

  /** A LOG packet from another board. */
  onLog(body: Record<string, unknown>): void {
    const list = Array.isArray(body.list) ? body.list : [];
    for (const raw of list) {
      const e = parseLogEntry(raw);
      if (e && this.log.add(e) && e.kind === 'alarm-ack' && e.subject) this.ackApplied(e);
    }
  }

  /** Master: a board (re)joined; it gets the recent log (acknowledgements included). */
  sendRecent(): void {
    this.send(this.log.since(0, JOIN_ENTRIES));
  }

  /** A device reading (this board's or another's). */
  reading(id: string, points: Readonly<Record<string, number | boolean>>, updatedAt: number | null): void {
    this.history.record(id, points, updatedAt);
  }

  /** Re-evaluate the alarms (after readings, table changes, and every second). */
  evaluate(nowMs = Date.now()): void {
    // A device never heard of since this board started is unknown, not offline.
    const devices = this.d.devices().filter((x) => x.online || x.updatedAt !== null || x.error !== null);
    const changed = this.alarms.evaluate({ devices, boards: this.d.boards() }, nowMs);
    if (changed.length === 0) return;
    for (const a of changed) this.d.disk?.alarm(a, () => this.alarms.list());
    if (this.d.isMaster()) {
      for (const a of changed)
        this.record('alarm', { subject: a.id, text: a.active ? `raised: ${a.message}${a.value !== null && a.kind === 'point' ? ` (${String(a.value)})` : ''}` : `cleared: ${a.message}` });
    }
    this.d.alarmsChanged(this.alarms.list());
  }

  private ackApplied(e: LogEntry): void {
    if (this.alarms.ack(e.subject!, e.user ?? '?', e.at)) {
      const v = this.alarms.get(e.subject!);
      if (v) this.d.disk?.alarm(v, () => this.alarms.list());
    }
    this.d.alarmsChanged(this.alarms.list());
  }

  /** Entries in as few packets as fit, each sent twice. */
  private send(entries: LogEntry[]): void {
    broadcastList((body) => this.d.broadcast('LOG', body), entries, this.d.cfg.limits.udpPacketBytesMax, this.d.cfg.cluster.heartbeatMs);
  }
}
