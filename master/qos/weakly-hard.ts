// Weakly-hard real-time scheduling (paper 002). Each class has an (m, k) constraint — at least m
// deadlines met in any k consecutive — and a µ-pattern of its last k outcomes (1 met, 0 missed).
// The critical function CF = met(last k−1) − m + 1: ≥ 1 a miss is still tolerable, 0 critical
// (the next deadline must be met), < 0 violated. A class whose CF is exactly 0 is in panic mode
// and goes before every normal-mode class (by its fixed priority): it can still be saved. A class
// already in violation (CF < 0) is not promoted: the paper's rule is CF = 0, and promoting a lost
// cause takes the slots a savable class needs. Normal mode: a class whose AbsQoS (quality over
// its last k answers) is below its SetQoS is *critical* and goes first; then a class at or above
// its share ProSet gets Priority = 100 − ProQoS (in %), one below its share keeps a priority above
// 100; the highest priority goes first. A critical class is never served degraded content
// (`protect`); one in panic may be (a lighter answer meets its deadline sooner).
import { type ClassBounds, ClassQueues, type Outcome, type QueueItem, type RunTest, type SchedulerLimits } from '../scheduler.ts';
import { proportions, ResponseLog } from './response-log.ts';

export interface MK {
  m: number;
  k: number;
}

export class MuPattern {
  private bits: number[] = [];
  constructor(readonly mk: MK) {
    if (!(mk.k >= 1 && mk.k <= 64 && mk.m >= 0 && mk.m <= mk.k)) throw new Error('(m,k) out of range');
    // Start as if every deadline had been met.
    this.bits = new Array<number>(mk.k).fill(1);
  }
  /** Shift left and append the latest outcome. */
  push(met: boolean): void {
    this.bits.shift();
    this.bits.push(met ? 1 : 0);
  }
  get pattern(): string {
    return this.bits.join('');
  }
  /** met(last k−1) − m + 1 */
  get cf(): number {
    const lastK1 = this.bits.slice(1).reduce((a, b) => a + b, 0);
    return lastK1 - this.mk.m + 1;
  }
  get satisfied(): boolean {
    return this.bits.reduce((a, b) => a + b, 0) >= this.mk.m;
  }
}

export class WeaklyHardScheduler<T extends QueueItem> extends ClassQueues<T> {
  readonly name = 'weakly-hard';
  readonly patterns: MuPattern[];
  readonly logs: ResponseLog[];
  readonly shares: number[];
  promotions = 0;

  /** Per class, the least AbsQoS (as a share of k) before the class is critical. */
  readonly setQoS: readonly number[];

  constructor(classes: readonly ClassBounds[], limits: SchedulerLimits, mk: readonly MK[], shares: readonly number[], k: number, setQoS: readonly number[] = []) {
    super(classes, limits);
    this.setQoS = classes.map((_, i) => setQoS[i] ?? 0);
    if (mk.length !== classes.length || shares.length !== classes.length) throw new Error('weakly-hard: one (m,k) and one share per class');
    const total = shares.reduce((a, b) => a + b, 0);
    this.shares = shares.map((s) => s / total);
    this.patterns = mk.map((x) => new MuPattern(x));
    this.logs = classes.map(() => new ResponseLog(k));
  }

  panic(cls: number): boolean {
    return this.patterns[cls]!.cf === 0;
  }

  /** AbsQoS below SetQoS (only once the class has answered a full window). */
  critical(cls: number): boolean {
    const log = this.logs[cls]!;
    return log.size >= log.k && log.absQoS < this.setQoS[cls]! * log.k;
  }

  /**
   * Served at the full content level: a critical class (quality under its SetQoS) must not lose
   * more. A class in panic is not protected: a lighter answer is faster, and its next deadline is
   * what it must meet (the imprecise computation's point).
   */
  override protect(cls: number): boolean {
    return this.critical(cls);
  }

  /** Normal-mode priority (higher goes first). */
  priority(cls: number, pro = proportions(this.logs)): number {
    const p = pro[cls]!;
    return p >= this.shares[cls]! ? 100 - 100 * p : 200 - this.classes[cls]!.priority;
  }

  protected pick(test: RunTest<T>): T | undefined {
    const pro = proportions(this.logs);
    let best: { item: T; panic: boolean; prio: number; fixed: number; seq: number } | undefined;
    for (const h of this.heads(test)) {
      const c = { item: h.item, panic: this.panic(h.cls), prio: (this.critical(h.cls) ? 1000 : 0) + this.priority(h.cls, pro), fixed: this.classes[h.cls]!.priority, seq: h.seq };
      const better =
        !best ||
        (c.panic && !best.panic) ||
        (c.panic === best.panic &&
          (c.panic
            ? c.fixed < best.fixed || (c.fixed === best.fixed && c.seq < best.seq)
            : c.prio > best.prio + 1e-9 || (Math.abs(c.prio - best.prio) <= 1e-9 && (c.fixed < best.fixed || (c.fixed === best.fixed && c.seq < best.seq)))));
      if (better) best = c;
    }
    if (best?.panic) this.promotions++;
    return best?.item;
  }

  override completed(item: T, o: Outcome): void {
    this.patterns[item.cls]!.push(o.deadlineMet);
    this.logs[item.cls]!.push(ResponseLog.quality(o.level, o.levels));
  }

  override state(): Record<string, number | string[] | number[]> {
    return {
      patterns: this.patterns.map((p) => p.pattern),
      cf: this.patterns.map((p) => p.cf),
      proQoS: proportions(this.logs).map((p) => +p.toFixed(3)),
      critical: this.classes.map((_, i) => (this.critical(i) ? 1 : 0)),
      promotions: this.promotions,
    };
  }
}
