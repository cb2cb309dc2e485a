// When a node sends its master a REPORT (its load, and proof that it lives), pure. One per
// heartbeat, except after a heartbeat in which the node answered one of the master's dispatches:
// the answer carried its load, and the master took it as proof of life. A REPORT still goes at
// least every keepalive (4 within Tthreshold, 2 within Tmax, whose window the master's support
// counts), since a master whose request thread is stalled reads no answers and hears only REPORTs.
// Idle, nothing changes: a REPORT per heartbeat. Under load a master hears a REPORT from each node
// about once per keepalive instead of once per heartbeat.
export class ReportCadence {
  readonly keepaliveMs: number;
  private lastMs = -Infinity;
  private answeredMs = -Infinity;

  constructor(heartbeatMs: number, tmaxMs: number, tthresholdMs: number) {
    this.keepaliveMs = Math.max(heartbeatMs, Math.min(tthresholdMs / 4, tmaxMs / 2));
  }

  /** The node's request thread answered a dispatch of its master at about `nowMs`. */
  answered(nowMs: number): void {
    this.answeredMs = nowMs;
  }

  /** A new master: what the old one heard on answers counts for nothing. */
  newMaster(): void {
    this.answeredMs = -Infinity;
  }

  /** At a heartbeat, the previous one at `sinceMs`: whether a REPORT goes. */
  due(nowMs: number, sinceMs: number): boolean {
    return this.answeredMs < sinceMs || nowMs - this.lastMs >= this.keepaliveMs;
  }

  sent(nowMs: number): void {
    this.lastMs = nowMs;
  }
}
