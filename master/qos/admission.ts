// Queue-length feedback admission (paper 000), per class, period T:
//   q(t) = q(t−T) + in(t) − out(t);  e(t) = target_q − q(t);  target_in(t) = in(t) + q0·e(t) + q1·e(t−T)
// where in(t) is what entered the queue (admitted) — offered arrivals only feed the prediction.
// Arrivals this period are predicted (EWMA of past periods); each new-session arrival passes with
// probability p = target_in / predicted, the others go to a reserve queue. At the end of a period
// the reserve tops admissions up to target_in, oldest first (persistence); a request still reserved
// after `refuseAfterPeriods` periods is refused explicitly (503 + Retry-After), never left to time out.
// Requests of existing sessions always pass (transactional rule). Pure: time and randomness injected.

export interface AdmissionParams {
  targetQueue: readonly number[];
  q0: number;
  q1: number;
  /** Weight of the newest period in the arrival prediction. */
  alpha: number;
  refuseAfterPeriods: number;
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

  /** The end of a period: the queue lengths now; returns how many reserved requests to admit per class. */
  period(queueLengths: readonly number[]): number[] {
    const { q0, q1, alpha, targetQueue } = this.params;
    return this.classes.map((c, i) => {
      const q = queueLengths[i]!;
      const e = targetQueue[i]! - q;
      const targetIn = Math.max(0, c.admitted + q0 * e + q1 * this.ePrev[i]!);
      const topUp = Math.max(0, Math.floor(targetIn - c.admitted));
      c.predicted = c.predicted === 0 ? c.in : alpha * c.in + (1 - alpha) * c.predicted;
      c.p = c.predicted > 0 ? Math.min(1, targetIn / c.predicted) : 1;
      c.targetIn = targetIn;
      c.e = e;
      c.q = q;
      this.ePrev[i] = e;
      c.in = 0;
      c.admitted = 0;
      return topUp;
    });
  }

  /** The reserve top-up counts as this period's admissions. */
  admittedFromReserve(cls: number, n: number): void {
    this.classes[cls]!.admitted += n;
  }
}
