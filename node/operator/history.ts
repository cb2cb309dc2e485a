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
  /**
   * Samples from elsewhere (the disk, the master) merged in time order, each time once, the newest
   * `capacity` kept. Boards sample the same readings, so the same sample has the same time on every
   * board; two boards' samples of one interval may both stay (neither is wrong).
   */
  merge(samples: ReadonlyArray<readonly [number, number]>): void {
    const all = [...this.since(-Infinity), ...samples].sort((a, b) => a[0] - b[0]);
    const kept: Array<readonly [number, number]> = [];
    for (const s of all) if (kept.length === 0 || s[0] > kept[kept.length - 1]![0]) kept.push(s);
    this.start = 0;
    this.len = 0;
    for (const [t, v] of kept.slice(-this.capacity)) this.push(t, v);
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
  private readonly ringCapacity: number;

  constructor(devices: readonly DeviceConfig[], cfg: HistoryConfig) {
    this.intervalMs = cfg.intervalS * 1000;
    this.retentionMs = cfg.retentionS * 1000;
    this.ringCapacity = Math.max(1, Math.ceil(cfg.retentionS / cfg.intervalS) + 1);
    this.reconfigure(devices);
  }

  /** A pushed config's devices: a new point gets a ring, a point gone loses its samples, the others keep theirs. */
  reconfigure(devices: readonly DeviceConfig[]): void {
    const keys = new Set<string>();
    for (const d of devices) for (const p of d.points) keys.add(`${d.id}\u0000${p.name}`);
    for (const k of this.rings.keys()) if (!keys.has(k)) this.rings.delete(k);
    for (const k of keys) if (!this.rings.has(k)) this.rings.set(k, new Ring(this.ringCapacity));
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

  /** Every point's samples taken after `afterMs` (what a flush writes, what a rejoining board is sent), points without any left out. */
  samplesAfter(afterMs: number): Array<[device: string, point: string, samples: Array<[number, number]>]> {
    const out: Array<[string, string, Array<[number, number]>]> = [];
    for (const [k, ring] of this.rings) {
      if (ring.lastT() <= afterMs) continue;
      const [device, point] = k.split('\u0000') as [string, string];
      out.push([device, point, ring.since(afterMs + 1e-9)]);
    }
    return out;
  }

  /** Samples from the disk or from the master, checked: an unknown point, a non-finite value or an old sample is skipped. */
  merge(device: string, point: string, samples: unknown, nowMs: number): void {
    const ring = this.rings.get(`${device}\u0000${point}`);
    if (!ring || !Array.isArray(samples)) return;
    const ok = samples.filter(
      (s): s is [number, number] => Array.isArray(s) && s.length === 2 && Number.isFinite(s[0]) && Number.isFinite(s[1]) && s[0] >= nowMs - this.retentionMs && s[0] <= nowMs + 60_000,
    );
    if (ok.length > 0) ring.merge(ok);
  }

  /** The newest sample of any point; -Infinity when none. */
  newestAt(): number {
    let t = -Infinity;
    for (const ring of this.rings.values()) t = Math.max(t, ring.lastT());
    return t;
  }

  /** Samples kept at most, over every point (the bound on memory and on disk). */
  get capacity(): number {
    let n = 0;
    for (const ring of this.rings.values()) n += ring.capacity;
    return n;
  }

  /** `[[t, v], …]` oldest first, within the retention and from `sinceMs`; undefined for an unknown point. */
  query(device: string, point: string, sinceMs: number, nowMs: number): Array<[number, number]> | undefined {
    const ring = this.rings.get(`${device}\u0000${point}`);
    return ring?.since(Math.max(sinceMs, nowMs - this.retentionMs));
  }
}
