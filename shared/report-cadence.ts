// When a node sends its master a REPORT (its load, and proof that it lives), pure. At least every
// keepalive: max(heartbeat, min(Tthreshold / 4, Tmax / 2)), so 4 fall within Tthreshold, after
// which the master marks a silent board -1, and 2 within Tmax, the window in which the master's
// support counts a board as heard. Between keepalives, at the next heartbeat after the load
// changed, unless the node answered one of the master's dispatches since the heartbeat before:
// each answer carries the load, and the master takes it as proof of life. A master whose request
// thread is stalled reads no answers, and hears only the keepalives.
// At the default timings (heartbeat 20 ms, Tmax 120, Tthreshold 500) an idle node sends a REPORT
// every 60 ms instead of every 20; a 3-board master reads 33 a second instead of 100.
export class ReportCadence {
  readonly keepaliveMs: number;
  private lastMs = -Infinity;
  private lastLoad = -1;
  private answeredMs = -Infinity;

  constructor(heartbeatMs: number, tmaxMs: number, tthresholdMs: number) {
    this.keepaliveMs = Math.max(heartbeatMs, Math.min(tthresholdMs / 4, tmaxMs / 2));
  }

  /** The node's request thread answered a dispatch of its master at about `nowMs`. */
  answered(nowMs: number): void {
    this.answeredMs = nowMs;
  }

  /** A new master: what the old one heard counts for nothing. */
  newMaster(): void {
    this.answeredMs = -Infinity;
    this.lastLoad = -1;
  }

  /** At a heartbeat (the one before at `sinceMs`), the load now: whether a REPORT goes. */
  due(nowMs: number, sinceMs: number, load: number): boolean {
    if (nowMs - this.lastMs >= this.keepaliveMs) return true;
    return load !== this.lastLoad && this.answeredMs < sinceMs;
  }

  /** When the next REPORT can be due, the next heartbeat at `beatAt`: a node has no other reason to wake before. */
  nextAt(beatAt: number, load: number): number {
    return load !== this.lastLoad ? beatAt : Math.max(beatAt, this.lastMs + this.keepaliveMs);
  }

  sent(nowMs: number, load: number): void {
    this.lastMs = nowMs;
    this.lastLoad = load;
  }
}
