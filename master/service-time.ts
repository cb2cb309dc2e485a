// How long a job of each class takes on a board (dispatch to answer): an average and its mean
// deviation, as TCP keeps SRTT and RTTVAR for its retransmission timer (RFC 6298). The core starts
// a job only if it is likely to finish within its class deadline: waited + mean + 2 deviations.
// With the mean alone, under overload the oldest job that still fits lands at its deadline half
// the time, and its client has gone by then.
// Pure: samples in, estimates out.

/** Weight of the newest sample in the average. */
const MEAN_GAIN = 0.2;
/** Weight of the newest sample's distance from the average in the deviation. */
const DEV_GAIN = 0.25;

export class ServiceTimes {
  /** The average per class (0: none seen yet). Float64Arrays: a plain array of small integers changes its element kind at the first fraction, and code V8 compiled for one kind is dropped when a new master's estimates start as the other. */
  readonly meanMs: Float64Array;
  /** The mean deviation from it per class (0 after the first sample). */
  readonly devMs: Float64Array;

  constructor(classes: number) {
    this.meanMs = new Float64Array(classes);
    this.devMs = new Float64Array(classes);
  }

  /** A job of the class was answered `ms` after it was dispatched. */
  observe(cls: number, ms: number): void {
    const m = this.meanMs[cls]!;
    if (m === 0) {
      this.meanMs[cls] = ms;
      return;
    }
    this.devMs[cls] = (1 - DEV_GAIN) * this.devMs[cls]! + DEV_GAIN * Math.abs(ms - m);
    this.meanMs[cls] = (1 - MEAN_GAIN) * m + MEAN_GAIN * ms;
  }

  /** How long a job of the class will likely take (0 when none has been seen). */
  likelyMs(cls: number): number {
    return this.meanMs[cls]! + 2 * this.devMs[cls]!;
  }
}
