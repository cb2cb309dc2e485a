// Last readings of every device in the cluster, as boards report them in DEVICE packets, so any
// board can answer /api/devices. Bounded by the configured devices; unknown ids are dropped.
import type { DeviceConfig } from '../../shared/device-config.ts';
import type { PointValue } from './modbus-driver.ts';

export interface DeviceSnapshotWire {
  id: string;
  online: boolean;
  points: Record<string, PointValue>;
  updatedAt: number | null;
  error: string | null;
}
export interface DeviceView {
  id: string;
  name: string;
  driver: string;
  boards: string[];
  online: boolean;
  /** Every board it is attached to is drained for maintenance: its commands get 503 MAINTENANCE. */
  maintenance: boolean;
  points: Record<string, PointValue>;
  updatedAt: number | null;
  error: string | null;
  /** For the UI: each point's unit, and what each action takes. */
  units: Record<string, string>;
  /** `point`: the point the action sets, and `sets` the value it writes when fixed (start: running = true). */
  actions: Array<{ name: string; input: { type: 'number' | 'boolean'; min: number | null; max: number | null } | null; point: string | null; sets: PointValue | null }>;
  /** How often its board reads it (0: only on demand): a reading much older than this is stale. */
  pollMs: number;
}

/** Checks a DEVICE packet body against the device's config; undefined if it does not fit. */
export function parseSnapshot(body: Record<string, unknown>, devices: readonly DeviceConfig[]): DeviceSnapshotWire | undefined {
  const dev = devices.find((d) => d.id === body.id);
  if (!dev || typeof body.online !== 'boolean') return undefined;
  if (body.updatedAt !== null && typeof body.updatedAt !== 'number') return undefined;
  if (body.error !== null && typeof body.error !== 'string') return undefined;
  const pts = body.points;
  if (typeof pts !== 'object' || pts === null || Array.isArray(pts)) return undefined;
  const points: Record<string, PointValue> = {};
  for (const [k, v] of Object.entries(pts)) {
    if (!dev.points.some((p) => p.name === k) || (typeof v !== 'number' && typeof v !== 'boolean')) return undefined;
    points[k] = v;
  }
  return { id: dev.id, online: body.online, points, updatedAt: body.updatedAt, error: body.error === null ? null : body.error.slice(0, 200) };
}

export class DeviceDirectory {
  /** device id -> board index -> that board's latest snapshot */
  private readonly seen = new Map<string, Map<number, DeviceSnapshotWire>>();
  constructor(
    private devices: readonly DeviceConfig[],
    /** Whether an admin drained a board (the cluster's table as this board last heard it). */
    private readonly drained: (board: number) => boolean = () => false,
  ) {}

  /** A pushed config's devices: a device gone is forgotten, one whose boards changed keeps only those boards' readings. */
  reconfigure(devices: readonly DeviceConfig[]): void {
    this.devices = devices;
    for (const [id, m] of this.seen) {
      const d = devices.find((x) => x.id === id);
      if (!d) this.seen.delete(id);
      else for (const b of m.keys()) if (!d.attach.some((a) => a.board === b)) m.delete(b);
    }
  }

  apply(snap: DeviceSnapshotWire, board: number): boolean {
    const dev = this.devices.find((d) => d.id === snap.id);
    if (!dev?.attach.some((a) => a.board === board)) return false;
    let m = this.seen.get(dev.id);
    if (!m) {
      m = new Map();
      this.seen.set(dev.id, m);
    }
    m.set(board, snap);
    return true;
  }

  /** A board that went down: its devices are not online through it any more. */
  boardDown(board: number): void {
    for (const m of this.seen.values()) {
      const s = m.get(board);
      if (s) m.set(board, { ...s, online: false, error: 'board down' });
    }
  }

  list(): DeviceView[] {
    return this.devices.map((d) => {
      const snaps = [...(this.seen.get(d.id)?.values() ?? [])];
      const latest = snaps.filter((s) => s.updatedAt !== null).sort((a, b) => b.updatedAt! - a.updatedAt!)[0];
      return {
        id: d.id,
        name: d.name,
        driver: d.driver,
        boards: d.attach.map((a) => a.boardId),
        online: snaps.some((s) => s.online),
        maintenance: d.attach.every((a) => this.drained(a.board)),
        points: latest?.points ?? {},
        updatedAt: latest?.updatedAt ?? null,
        error: snaps.every((s) => !s.online) ? (snaps.find((s) => s.error)?.error ?? null) : null,
        units: Object.fromEntries(d.points.filter((p) => p.unit).map((p) => [p.name, p.unit!])),
        actions: d.actions.map((a) => ({
          name: a.name,
          input: a.input ? { type: a.input.type, min: a.input.min ?? null, max: a.input.max ?? null } : null,
          point: ('write' in a ? a.write : a.point) ?? null,
          sets: 'fixed' in a ? (a.fixed ?? null) : null,
        })),
        pollMs: d.pollMs,
      };
    });
  }
}
