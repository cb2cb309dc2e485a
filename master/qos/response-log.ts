// The last k responses of a class as quality values (paper 000): F (full level) = 1,
// P (partial, level level/M) in (0,1), D (dropped or refused) = 0. absQoS is their sum, kept by
// the sliding update absQoS_new = absQoS_old − log[oldest] + log[latest]. Pure.
export class ResponseLog {
  private readonly log: number[];
  private next = 0;
  private filled = 0;
  absQoS = 0;

  constructor(readonly k: number) {
    if (!Number.isInteger(k) || k < 1 || k > 4096) throw new Error('response log length out of range');
    this.log = new Array<number>(k).fill(0);
  }

  /** Quality of one response: level/M, 0 when refused. */
  static quality(level: number, levels: number): number {
    return levels <= 0 ? 0 : Math.max(0, Math.min(1, level / levels));
  }

  push(q: number): void {
    const oldest = this.filled === this.k ? this.log[this.next]! : 0;
    this.absQoS += q - oldest;
    this.log[this.next] = q;
    this.next = (this.next + 1) % this.k;
    this.filled = Math.min(this.k, this.filled + 1);
    if (Math.abs(this.absQoS) < 1e-9) this.absQoS = 0;
  }

  get size(): number {
    return this.filled;
  }
}

/** proQoS_i = absQoS_i / Σ absQoS (equal shares while nothing has been served). */
export function proportions(logs: readonly ResponseLog[]): number[] {
  const total = logs.reduce((s, l) => s + l.absQoS, 0);
  return logs.map((l) => (total > 0 ? l.absQoS / total : 1 / logs.length));
}
