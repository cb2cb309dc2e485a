// Each point's recent values, on every board: every board sees every reading (its own, and the
// others' in DEVICE packets), so a trend survives any one board, the master included. One ring
// per configured point, at most one sample per interval: memory is bounded by the config.
import type { DeviceConfig } from '../../shared/device-config.ts';
import type { HistoryConfig } from '../../shared/operator-config.ts';

class Ring {
  private readonly t: Float64Array;
  private readonly v: Float64Array;
  private start = 0;
  len = 0;
  constructor(readonly capacity: number) {
    this.t = new Float64Array(capacity);
    this.v = new Float64Array(capacity);
  }
  lastT(): number {
    return this.len === 0 ? -Infinity : this.t[(this.start + this.len - 1) % this.capacity]!;
  }
  push(t: number, v: number): void {
    const i = (this.start + this.len) % this.capacity;
    this.t[i] = t;
    this.v[i] = v;
    if (this.len < this.capacity) this.len++;
    else this.start = (this.start + 1) % this.capacity;
  }
  since(from: number): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    for (let k = 0; k < this.len; k++) {
      const i = (this.start + k) % this.capacity;
      if (this.t[i]! >= from) out.push([this.t[i]!, this.v[i]!]);
    }
    return out;
  }
}

export class History {
  private readonly rings = new Map<string, Ring>();
  private readonly intervalMs: number;
  private readonly retentionMs: number;

  constructor(devices: readonly DeviceConfig[], cfg: HistoryConfig) {
    this.intervalMs = cfg.intervalS * 1000;
    this.retentionMs = cfg.retentionS * 1000;
    const capacity = Math.max(1, Math.ceil(cfg.retentionS / cfg.intervalS) + 1);
    for (const d of devices) for (const p of d.points) this.rings.set(`${d.id}\u0000${p.name}`, new Ring(capacity));
  }

  /** A reading taken at `at`: each numeric or on/off point gets a sample unless it has one within the interval. */
  record(device: string, points: Readonly<Record<string, number | boolean>>, at: number | null): void {
    if (at === null) return;
    for (const [name, value] of Object.entries(points)) {
      const ring = this.rings.get(`${device}\u0000${name}`);
      if (!ring || at < ring.lastT() + this.intervalMs) continue;
      ring.push(at, typeof value === 'boolean' ? Number(value) : value);
    }
  }

  /** `[[t, v], …]` oldest first, within the retention and from `sinceMs`; undefined for an unknown point. */
  query(device: string, point: string, sinceMs: number, nowMs: number): Array<[number, number]> | undefined {
    const ring = this.rings.get(`${device}\u0000${point}`);
    return ring?.since(Math.max(sinceMs, nowMs - this.retentionMs));
  }
}
