// Per-class worker quota control (paper 003): the slots (requests in flight at once) are divided
// among classes. Every period each class's response time (the paper's: time waiting in the
// queue) is compared with its target, as a relative error e = (measured − target) / target.
//   - The highest-priority class missing its target (e > MISS) takes ⌈gain · e · quota⌉ slots (at
//     most STEP_MAX of all slots), from the classes *below* it only, lowest priority first, down
//     to minSlots each. One class per period: a lower class does not grab slots the class above
//     it is about to take from it (that would move its quota up and straight down again). Under
//     saturation the low classes slow down first, and a higher class never gives to a lower one
//     while it needs its slots.
//   - A class comfortably inside its target (e < −SURPLUS) that holds more than its initial share
//     gives back what it does not need: its wait goes as 1/slots, so with q slots and wait W it
//     needs ⌈W·q / (target·(1 − MISS))⌉ to stay inside its target; ⌈gain · (q − need)⌉ of the
//     surplus (at most its extra) goes to the highest class below it missing its target, or
//     else to the classes below it that hold less than their share, highest first. Slots drift home once the pressure is gone, and never so many that the
//     giver misses its target again (that would be a limit cycle).
// The gap between MISS and −SURPLUS is the hysteresis, and a class gives back only after
// CALM_PERIODS comfortable periods in a row: a class that just took slots (its wait falls at once)
// does not give them back while its backlog lasts, so quotas do not swing. Pure.

export interface QuotaClass {
  targetMs: number;
  priority: number;
}

/** Over its target by more than this: the class takes slots. */
export const MISS = 0.1;
/** Under its target by more than this: a class above its initial share gives some back. */
export const SURPLUS = 0.3;
/** The most slots one class takes in one period, as a share of all slots. */
export const STEP_MAX = 0.2;
/** Periods in a row a class must stay comfortably inside its target before it gives slots back. */
export const CALM_PERIODS = 3;

export class QuotaController {
  readonly quotas: number[];
  readonly base: readonly number[];
  private readonly calm: number[];
  /** Periods since each class last received slots: it is no donor for CALM_PERIODS after. */
  private readonly sinceGain: number[];
  private sunk: ReadonlyArray<number> = [];
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
    this.base = [...this.quotas];
    this.calm = classes.map(() => 0);
    this.sinceGain = classes.map(() => Infinity);
  }

  /**
   * One period: the wait per class (undefined = no information). `sunkMs`: the part of each wait
   * already spent (the age of the last job in line), which more slots cannot shorten; the rest
   * goes as 1/slots.
   */
  period(measuredMs: ReadonlyArray<number | undefined>, sunkMs: ReadonlyArray<number> = []): number[] {
    this.sunk = sunkMs;
    for (let i = 0; i < this.sinceGain.length; i++) this.sinceGain[i]!++;
    const before = [...this.quotas];
    const err = this.classes.map((c, i) => (measuredMs[i] === undefined ? undefined : (measuredMs[i]! - c.targetMs) / c.targetMs));
    const order = this.classes.map((_, i) => i).sort((a, b) => this.classes[a]!.priority - this.classes[b]!.priority);
    const below = (i: number) => order.filter((d) => this.classes[d]!.priority > this.classes[i]!.priority);
    for (const needy of order) {
      const e = err[needy];
      if (e === undefined || e <= MISS) continue;
      let want = Math.min(Math.ceil(this.gain * e * this.quotas[needy]!), Math.ceil(STEP_MAX * this.total));
      // A class just given slots (by a give-back) is not taken from at once: that would be a turn for nothing.
      for (const d of below(needy).reverse()) {
        if (this.sinceGain[d]! <= CALM_PERIODS) continue;
        const give = Math.min(want, this.quotas[d]! - this.minSlots);
        if (give <= 0) continue;
        this.quotas[d]! -= give;
        this.quotas[needy]! += give;
        want -= give;
        if (want === 0) break;
      }
      break;
    }
    for (const rich of order) {
      const e = err[rich];
      this.calm[rich] = e !== undefined && e < -SURPLUS ? this.calm[rich]! + 1 : 0;
      const extra = this.quotas[rich]! - this.base[rich]!;
      if (this.calm[rich]! < CALM_PERIODS || extra <= 0) continue;
      let back = Math.min(extra, Math.ceil(this.gain * (this.quotas[rich]! - this.need(rich, measuredMs[rich]!))));
      if (back <= 0) continue;
      // All to the highest class below that misses its target (a lower one given slots would lose
      // them to it again: a turn for nothing); when none below misses, to the others short of
      // their share, highest first.
      const missing = below(rich).filter((d) => (err[d] ?? 0) > MISS);
      const takers = missing.length > 0 ? missing.slice(0, 1) : below(rich);
      for (const d of takers) {
        const wants = missing.length > 0 ? this.total : this.base[d]!;
        const owed = Math.min(back, wants - this.quotas[d]!);
        if (owed <= 0 || (err[d] !== undefined && err[d]! < -SURPLUS)) continue;
        this.quotas[d]! += owed;
        this.quotas[rich]! -= owed;
        back -= owed;
        if (back === 0) break;
      }
    }
    for (let i = 0; i < this.quotas.length; i++) if (this.quotas[i]! > before[i]!) this.sinceGain[i] = 0;
    return [...this.quotas];
  }

  /** Slots class i needs to wait within its target: what is left of its wait goes as 1/slots. */
  private need(i: number, waitMs: number): number {
    const sunk = Math.min(this.sunk[i] ?? 0, waitMs);
    const room = this.classes[i]!.targetMs * (1 - MISS) - sunk;
    return room <= 0 ? this.total : Math.ceil(((waitMs - sunk) * this.quotas[i]!) / room);
  }

  canRun(cls: number, inFlight: number): boolean {
    return inFlight < this.quotas[cls]!;
  }
}
