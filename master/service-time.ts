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
  /** The average per class (0: none seen yet). */
  readonly meanMs: number[];
  /** The mean deviation from it per class (0 after the first sample). */
  readonly devMs: number[];

  constructor(classes: number) {
    this.meanMs = Array.from({ length: classes }, () => 0);
    this.devMs = Array.from({ length: classes }, () => 0);
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
