// Queue-length feedback admission (paper 000), per class, period T:
//   q(t) = q(t−T) + in(t) − out(t);  e(t) = target_q − q(t);  target_in(t) = in(t) + q0·e(t) + q1·e(t−T)
// where in(t) is what entered the queue (admitted) — offered arrivals only feed the prediction.
// Each period's budget is the target_in computed at the end of the one before. New arrivals pass
// with probability p = (budget − released) / predicted (EWMA of past arrivals) while admissions
// stay under the budget; the others wait in the reserve queue. At the end of a period the reserve
// first tops that period up to its budget (the shortfall), then the new budget is computed, and
// the reserve is served from it first, oldest first, before any newcomer (persistence). A request
// still reserved after `refuseAfterPeriods` periods is refused explicitly (503 + Retry-After),
// never left to time out. Requests of a *verified* session always pass (transactional rule; the
// caller decides what is verified). Pure: time and randomness injected.
//
// One addition to the paper: the queue is a censored sensor. When it ends a period empty, the
// server had room the law cannot see (e is at most target_q whatever the spare capacity), so the
// law alone raises the budget by only (q0 + q1)·target_q per period: after a step in load it
// refused most of the traffic for seconds while the boards idled. So when the queue ends a period
// empty while requests wait in the reserve (the budget, not the server, held them back), the
// budget grows to at least `probeGrowth` × what was admitted (multiplicative probing, as TCP's
// slow start); as soon as the queue holds anything the paper's law alone decides again.

export interface AdmissionParams {
  targetQueue: readonly number[];
  q0: number;
  q1: number;
  /** Weight of the newest period in the arrival prediction. */
  alpha: number;
  refuseAfterPeriods: number;
  /** Budget growth per period while the queue ends empty and the reserve holds requests (1 = the paper's law alone). */
  probeGrowth: number;
}

export interface ClassAdmission {
  in: number;
  admitted: number;
  targetIn: number;
  predicted: number;
  p: number;
  e: number;
  q: number;
}

export class AdmissionController {
  readonly classes: ClassAdmission[];
  private readonly ePrev: number[];

  constructor(
    n: number,
    readonly params: AdmissionParams,
    private readonly rand: () => number,
  ) {
    if (params.targetQueue.length !== n) throw new Error('admission: one target queue length per class');
    this.classes = Array.from({ length: n }, () => ({ in: 0, admitted: 0, targetIn: Infinity, predicted: 0, p: 1, e: 0, q: 0 }));
    this.ePrev = new Array<number>(n).fill(0);
  }

  /** Each class's controller state, for /metrics, /api/stats and the UI. */
  state(): Array<{ targetIn: number | null; p: number; q: number; e: number; predicted: number }> {
    return this.classes.map((c) => ({ targetIn: Number.isFinite(c.targetIn) ? +c.targetIn.toFixed(2) : null, p: +c.p.toFixed(3), q: c.q, e: c.e, predicted: +c.predicted.toFixed(2) }));
  }

  /** A request arrives: admit it now, or hold it in the reserve queue. */
  arrive(cls: number, existingSession: boolean): 'admit' | 'reserve' {
    const c = this.classes[cls]!;
    c.in++;
    if (existingSession || (c.admitted < c.targetIn && this.rand() < c.p)) {
      c.admitted++;
      return 'admit';
    }
    return 'reserve';
  }

  /**
   * The end of a period and the start of the next: the queue and reserve lengths now. Returns how
   * many reserved requests to admit now, per class: the reserve goes first, up to target_in.
   */
  period(queueLengths: readonly number[], reserved: readonly number[]): number[] {
    const { q0, q1, alpha, targetQueue } = this.params;
    return this.classes.map((c, i) => {
      // The ending period's shortfall against its own budget, from the reserve (it entered this period).
      const shortfall = Number.isFinite(c.targetIn) ? Math.min(reserved[i] ?? 0, Math.max(0, Math.floor(c.targetIn - c.admitted))) : 0;
      c.admitted += shortfall;
      const q = queueLengths[i]! + shortfall;
      const e = targetQueue[i]! - q;
      const law = c.admitted + q0 * e + q1 * this.ePrev[i]!;
      // A censored sensor: empty queue and a waiting reserve means the budget held the server back.
      const starved = q === 0 && (reserved[i] ?? 0) - shortfall > 0;
      const targetIn = Math.max(0, starved ? Math.max(law, c.admitted * this.params.probeGrowth) : law);
      // Then the new budget serves what still waits, before any newcomer.
      const release = Math.min((reserved[i] ?? 0) - shortfall, Math.floor(targetIn));
      c.predicted = c.predicted === 0 ? c.in : alpha * c.in + (1 - alpha) * c.predicted;
      c.p = c.predicted > 0 ? Math.min(1, Math.max(0, targetIn - release) / c.predicted) : 1;
      c.targetIn = targetIn;
      c.e = e;
      c.q = q;
      this.ePrev[i] = e;
      c.in = 0;
      c.admitted = release;
      return shortfall + release;
    });
  }

  /** Fewer reserved requests than released could be queued (a full class queue): count what went in. */
  admittedFromReserve(cls: number, released: number, queued: number): void {
    const c = this.classes[cls]!;
    c.admitted = Math.max(0, c.admitted - (released - queued));
  }
}
