// Alarms: thresholds on points from the config, plus built-in ones for a device offline, a
// board down and a board whose state is in memory only. Every board evaluates them from the same inputs (every board sees every reading
// and the state table), so every board shows the same alarms, before and after a failover. An
// acknowledgement is a log entry (shared like every entry): it covers the episode that was active
// when it was made.
import type { AlarmConfig, AlarmSeverity } from '../../shared/operator-config.ts';

export interface AlarmView {
  id: string;
  kind: 'point' | 'device-offline' | 'board-down' | 'state-volatile' | 'config-mismatch';
  /** The device or board it watches. */
  subject: string;
  severity: AlarmSeverity;
  message: string;
  active: boolean;
  /** When the current (or last) episode was raised here; null if never. */
  since: number | null;
  clearedAt: number | null;
  /** The watched value when it was raised. */
  value: number | boolean | null;
  acked: { user: string; at: number } | null;
}

interface Rule {
  view: AlarmView;
  cfg: AlarmConfig | undefined;
  /** The condition has held since (debounce for the built-in ones). */
  pendingSince: number | null;
  holdMs: number;
}

/** A device or board must stay offline or down this long before its alarm is raised (a boot or a blip is not one). */
export const BUILTIN_HOLD_MS = 3000;
/** A board's config may differ from the master's this long (a config being rolled out) before its alarm is raised. */
export const CONFIG_MISMATCH_HOLD_MS = 10_000;
/** Boards judge an episode's start independently: an acknowledgement covers one that began up to this much after it. */
export const ACK_SLACK_MS = 5000;

export interface AlarmInputs {
  /** `maintenance`: every board it is attached to is drained (its being offline then is no alarm). */
  devices: ReadonlyArray<{ id: string; online: boolean; maintenance?: boolean; points: Readonly<Record<string, number | boolean>> }>;
  /** `durable`: the board keeps its state on disk; `configHash`: the config it runs; null until its health is heard. */
  boards: ReadonlyArray<{ id: string; runstate: number; role?: 'master' | 'node'; drained?: boolean; durable?: boolean | null; configHash?: string | null }>;
}

function buildRules(alarms: readonly AlarmConfig[], deviceIds: readonly string[], boardIds: readonly string[]): Rule[] {
  const rules: Rule[] = [];
  const base = { active: false, since: null, clearedAt: null, value: null, acked: null };
  for (const a of alarms) rules.push({ view: { id: a.id, kind: 'point', subject: a.device, severity: a.severity, message: a.message, ...base }, cfg: a, pendingSince: null, holdMs: 0 });
  for (const d of deviceIds)
    rules.push({
      view: { id: `device-offline-${d}`, kind: 'device-offline', subject: d, severity: 'warning', message: `device ${d} is offline`, ...base },
      cfg: undefined,
      pendingSince: null,
      holdMs: BUILTIN_HOLD_MS,
    });
  for (const b of boardIds)
    rules.push({
      view: { id: `board-down-${b}`, kind: 'board-down', subject: b, severity: 'critical', message: `board ${b} is down`, ...base },
      cfg: undefined,
      pendingSince: null,
      holdMs: BUILTIN_HOLD_MS,
    });
  for (const b of boardIds)
    rules.push({
      view: {
        id: `state-volatile-${b}`,
        kind: 'state-volatile',
        subject: b,
        severity: 'warning',
        message: `board ${b} keeps its state in memory only: a restart loses its logouts, history and logbook`,
        ...base,
      },
      cfg: undefined,
      pendingSince: null,
      holdMs: 0,
    });
  for (const b of boardIds)
    rules.push({
      view: { id: `config-mismatch-${b}`, kind: 'config-mismatch', subject: b, severity: 'warning', message: `board ${b} runs another config than the master`, ...base },
      cfg: undefined,
      pendingSince: null,
      holdMs: CONFIG_MISMATCH_HOLD_MS,
    });
  return rules;
}

export class Alarms {
  private rules: Rule[];
  private readonly lastAck = new Map<string, { user: string; at: number }>();

  constructor(alarms: readonly AlarmConfig[], deviceIds: readonly string[], boardIds: readonly string[]) {
    this.rules = buildRules(alarms, deviceIds, boardIds);
  }

  /**
   * A pushed config's alarms and devices, live: a rule that stays (same id and kind) keeps its
   * episode (active, since, its acknowledgement) and takes the new threshold; new ones start clear.
   */
  reconfigure(alarms: readonly AlarmConfig[], deviceIds: readonly string[], boardIds: readonly string[]): void {
    const old = new Map(this.rules.map((r) => [r.view.id, r]));
    this.rules = buildRules(alarms, deviceIds, boardIds).map((r) => {
      const o = old.get(r.view.id);
      if (!o || o.view.kind !== r.view.kind) return r;
      const { active, since, clearedAt, value, acked } = o.view;
      return { ...r, view: { ...r.view, active, since, clearedAt, value, acked }, pendingSince: o.pendingSince };
    });
  }

  /** Re-evaluate every alarm; the ones raised or cleared now. */
  evaluate(inputs: AlarmInputs, nowMs: number): AlarmView[] {
    const changed: AlarmView[] = [];
    for (const r of this.rules) {
      const cond = this.condition(r, inputs);
      if (cond === undefined) continue; // no reading: keep the state
      const v = r.view;
      if (cond.on && !v.active) {
        r.pendingSince ??= nowMs;
        if (nowMs - r.pendingSince < r.holdMs) continue;
        Object.assign(v, { active: true, since: r.pendingSince, clearedAt: null, value: cond.value });
        v.acked = this.ackFor(v);
        changed.push({ ...v });
      } else if (!cond.on) {
        r.pendingSince = null;
        if (v.active && cond.clear) {
          Object.assign(v, { active: false, clearedAt: nowMs });
          changed.push({ ...v });
        }
      }
    }
    return changed;
  }

  /** An acknowledgement (from this board or another); true if it covers an active alarm here. */
  ack(id: string, user: string, at: number): boolean {
    const prev = this.lastAck.get(id);
    if (!prev || prev.at < at) this.lastAck.set(id, { user, at });
    const r = this.rules.find((x) => x.view.id === id);
    if (!r?.view.active) return false;
    r.view.acked = this.ackFor(r.view);
    return r.view.acked !== null;
  }

  /**
   * Episodes as this board last wrote them (its stateDir): an alarm active before a restart stays
   * active with its start (so its acknowledgement still covers it, and it is not raised again)
   * until the readings clear it. Unknown ids and malformed entries are skipped.
   */
  restore(saved: readonly unknown[]): void {
    for (const raw of saved) {
      if (typeof raw !== 'object' || raw === null) continue;
      const e = raw as Record<string, unknown>;
      const r = this.rules.find((x) => x.view.id === e.id);
      const time = (v: unknown) => (v === null ? null : typeof v === 'number' && Number.isFinite(v) ? v : undefined);
      const since = time(e.since),
        clearedAt = time(e.clearedAt);
      const value = e.value === null || typeof e.value === 'boolean' || (typeof e.value === 'number' && Number.isFinite(e.value)) ? e.value : undefined;
      if (!r || typeof e.active !== 'boolean' || since === undefined || clearedAt === undefined || value === undefined) continue;
      Object.assign(r.view, { active: e.active, since, clearedAt, value });
      const a = e.acked as { user?: unknown; at?: unknown } | null | undefined;
      if (a && typeof a.user === 'string' && a.user.length <= 64 && typeof a.at === 'number' && Number.isFinite(a.at)) {
        const prev = this.lastAck.get(r.view.id);
        if (!prev || prev.at < a.at) this.lastAck.set(r.view.id, { user: a.user, at: a.at });
      }
      r.view.acked = this.ackFor(r.view);
    }
  }

  has(id: string): boolean {
    return this.rules.some((r) => r.view.id === id);
  }

  get(id: string): AlarmView | undefined {
    const r = this.rules.find((x) => x.view.id === id);
    return r && { ...r.view };
  }

  /** Active first (unacknowledged before acknowledged, newest first), then the rest. */
  list(): AlarmView[] {
    const rank = (v: AlarmView) => (v.active ? (v.acked ? 1 : 0) : 2);
    return this.rules.map((r) => ({ ...r.view })).sort((a, b) => rank(a) - rank(b) || (b.since ?? 0) - (a.since ?? 0));
  }

  private ackFor(v: AlarmView): { user: string; at: number } | null {
    const a = this.lastAck.get(v.id);
    return a && v.since !== null && a.at >= v.since - ACK_SLACK_MS ? a : null;
  }

  /** on: the alarm condition holds; clear: it is far enough from it to clear (hysteresis). */
  private condition(r: Rule, inputs: AlarmInputs): { on: boolean; clear: boolean; value: number | boolean | null } | undefined {
    if (r.view.kind === 'board-down') {
      const b = inputs.boards.find((x) => x.id === r.view.subject);
      // A board drained for maintenance may be switched off: that is no alarm.
      return b && { on: b.runstate === -1 && !b.drained, clear: b.runstate === 1 || !!b.drained, value: b.runstate };
    }
    if (r.view.kind === 'config-mismatch') {
      const b = inputs.boards.find((x) => x.id === r.view.subject);
      const master = inputs.boards.find((x) => x.role === 'master');
      if (!b || !master || b.runstate === -1) return b && { on: false, clear: true, value: null };
      if (typeof b.configHash !== 'string' || typeof master.configHash !== 'string') return undefined;
      const same = b.configHash === master.configHash;
      return { on: !same, clear: same, value: same };
    }
    if (r.view.kind === 'state-volatile') {
      const b = inputs.boards.find((x) => x.id === r.view.subject);
      return b && typeof b.durable === 'boolean' ? { on: !b.durable, clear: b.durable, value: b.durable } : undefined;
    }
    const d = inputs.devices.find((x) => x.id === r.view.subject);
    if (!d) return undefined;
    if (r.view.kind === 'device-offline') return { on: !d.online && !d.maintenance, clear: d.online || !!d.maintenance, value: d.online };
    const a = r.cfg!;
    const v = d.points[a.point];
    if (v === undefined) return undefined;
    const n = typeof v === 'boolean' ? Number(v) : v;
    if (a.above !== undefined) return { on: n > a.above, clear: n <= a.above - a.hysteresis, value: v };
    if (a.below !== undefined) return { on: n < a.below, clear: n >= a.below + a.hysteresis, value: v };
    const eq = typeof a.equals === 'boolean' ? n === Number(a.equals) : n === a.equals;
    return { on: eq, clear: !eq, value: v };
  }
}
