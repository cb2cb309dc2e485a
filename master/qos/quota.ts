// Per-class worker quota control (paper 003): the slots (requests in flight at once) are divided
// among classes; every period each class's response time is compared with its target and slots
// move from classes that are faster than needed — or, under saturation, from the lowest classes —
// to the classes missing their targets, highest priority first. Low classes slow down first. Pure.

export interface QuotaClass {
  targetMs: number;
  priority: number;
}

export class QuotaController {
  readonly quotas: number[];
  constructor(
    readonly classes: readonly QuotaClass[],
    readonly total: number,
    readonly gain = 0.5,
    readonly minSlots = 1,
  ) {
    if (total < classes.length * minSlots) throw new Error('quota: fewer slots than classes');
    const each = Math.floor(total / classes.length);
    this.quotas = classes.map(() => each);
    this.quotas[0]! += total - each * classes.length;
  }

  /** One period: mean response time per class (undefined = nothing completed). */
  period(measuredMs: ReadonlyArray<number | undefined>): number[] {
    const err = this.classes.map((c, i) => (measuredMs[i] === undefined ? 0 : (measuredMs[i]! - c.targetMs) / c.targetMs));
    const byPriority = this.classes.map((_, i) => i).sort((a, b) => this.classes[a]!.priority - this.classes[b]!.priority);
    for (const needy of byPriority) {
      if (err[needy]! <= 0) continue;
      let want = Math.max(1, Math.round(this.gain * err[needy]! * this.quotas[needy]!));
      // Donors: faster-than-target classes first, then the lowest-priority ones below the needy class.
      const donors = [...byPriority]
        .reverse()
        .filter((d) => d !== needy)
        .sort((a, b) => Number(err[a]! > 0) - Number(err[b]! > 0));
      for (const d of donors) {
        if (want === 0) break;
        if (err[d]! > 0 && this.classes[d]!.priority <= this.classes[needy]!.priority) continue;
        const give = Math.min(want, this.quotas[d]! - this.minSlots);
        if (give <= 0) continue;
        this.quotas[d]! -= give;
        this.quotas[needy]! += give;
        want -= give;
      }
    }
    return [...this.quotas];
  }

  canRun(cls: number, inFlight: number): boolean {
    return inFlight < this.quotas[cls]!;
  }
}
