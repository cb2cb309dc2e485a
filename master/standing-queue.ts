// A standing queue (CoDel's term): a class's queue that has not once been empty for
// qos.standingMs is not absorbing a burst, it is overloaded, and a request that waited in it
// longer than its class's standingWaitMs would be served stale. Such a request is refused at
// once (503, Retry-After), so the ones that are served stay fresh and a client hears "busy" in
// that time instead of at its deadline (the controlled-delay queue of Maurer, "Fail at Scale",
// ACM Queue 2015). A queue that empties now and then is a burst: nothing is refused early. Pure.

export class StandingQueues {
  /** Since when each class's queue has been seen non-empty at every look (undefined: it was empty at the last look). */
  private readonly since: (number | undefined)[];
  private readonly any: boolean;

  private readonly waitMs: readonly (number | undefined)[];

  constructor(
    private readonly classes: readonly { readonly name: string; readonly standingWaitMs: number | undefined }[],
    /** qos.standingMs. */
    private readonly intervalMs: number,
  ) {
    this.waitMs = classes.map((c) => c.standingWaitMs);
    this.since = classes.map(() => undefined);
    this.any = this.waitMs.some((w) => w !== undefined);
  }

  /** A look at the queues after the dispatch core acted: `queues.size(cls)` waiting in each class. */
  observe(queues: { size(cls: number): number }, nowMs: number): void {
    if (!this.any) return;
    for (let c = 0; c < this.since.length; c++) {
      if (this.waitMs[c] === undefined) continue;
      if (queues.size(c) === 0) this.since[c] = undefined;
      else this.since[c] ??= nowMs;
    }
  }

  /** How long the class's queue has stood, if it counts as standing now (else undefined). */
  stood(cls: number, nowMs: number): number | undefined {
    const s = this.since[cls];
    return s !== undefined && nowMs - s >= this.intervalMs ? nowMs - s : undefined;
  }

  /** Why a job of the class that has waited `waitedMs` is refused rather than served (undefined: it is served). */
  refusal(cls: number, waitedMs: number, nowMs: number): string | undefined {
    const w = this.waitMs[cls];
    const stood = w !== undefined && waitedMs > w ? this.stood(cls, nowMs) : undefined;
    if (stood === undefined) return undefined;
    return `the ${this.classes[cls]!.name} queue has been overloaded for ${Math.round(stood)} ms; this request waited ${Math.round(waitedMs)} ms`;
  }
}
