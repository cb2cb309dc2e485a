// The master's own jobs, paced. When the master runs work itself (masterWork 'spill' or 'share')
// while other boards wait on it for their requests and answers, a CPU-bound handler started
// synchronously holds up all forwarding until it returns: a batch of 16 jobs of 2 ms is 32 ms of
// CPU, 160 ms of wall time at a 20 % quota, and the other boards run dry meanwhile
// (bench/results/dispatch-path.md, "Wave 2, third pass"). So the master spends at most `budgetMs`
// of synchronous start time per event-loop turn; the rest wait for a later turn, in order.
// A job whose client left, or that the core timed out, while it waited does not start: `dropped`
// is called instead.
// Pure apart from what it is given: the clock and "run this on a later turn" are the caller's.
export interface PacerIo<T> {
  /** Milliseconds, monotonic (performance.now() in the runtime). */
  now(): number;
  /** Run `fn` on a later event-loop turn (setImmediate in the runtime). */
  later(fn: () => void): void;
  /** Start the job (synchronous part of it). */
  start(item: T): void;
  /** Its client has left, or it already ended (timed out while it waited): starting it would be wasted work. */
  gone(item: T): boolean;
  /** A waiting job found gone (its client left, or the core timed it out): the caller counts it ended, once. */
  dropped(item: T): void;
}

export class LocalPacer<T> {
  /** Start time spent since the budget was last reset (a turn, or a few cheap starts). */
  private spentMs = 0;
  private readonly waiting: T[] = [];
  private turnPending = false;

  /**
   * @param budgetMs synchronous start time allowed per turn
   * @param waitingMax bound on waiting jobs: each counts in the master's linknum, so the core never
   *   hands out more than the master's slots (limits.inFlightPerBoardMax)
   */
  constructor(
    private readonly budgetMs: number,
    private readonly waitingMax: number,
    private readonly io: PacerIo<T>,
  ) {}

  get waitingCount(): number {
    return this.waiting.length;
  }

  submit(item: T): void {
    if (this.waiting.length > 0 || this.spentMs >= this.budgetMs) {
      if (this.waiting.length >= this.waitingMax) this.dropGone();
      if (this.waiting.length >= this.waitingMax) throw new Error(`local pacer: more than ${this.waitingMax} jobs waiting (the core handed out more than the master's slots)`);
      this.waiting.push(item);
      this.schedule();
      return;
    }
    this.timedStart(item);
    if (this.spentMs >= this.budgetMs) this.schedule();
  }

  private schedule(): void {
    if (this.turnPending) return;
    this.turnPending = true;
    this.io.later(this.turn);
  }

  /** A new turn: start what waited, within the turn's budget; the rest a turn later. */
  private readonly turn = (): void => {
    this.turnPending = false;
    this.spentMs = 0;
    while (this.waiting.length > 0 && this.spentMs < this.budgetMs) {
      const item = this.waiting.shift() as T;
      if (this.io.gone(item)) this.io.dropped(item);
      else this.timedStart(item);
    }
    if (this.waiting.length > 0 || this.spentMs >= this.budgetMs) this.schedule();
  };

  /**
   * Jobs that ended while they waited (the client left, or the core timed them out) free their
   * place. `dropped` is called after the list is compacted: it may free a slot in the core, which
   * may hand this pacer a new job at once.
   */
  private dropGone(): void {
    const gone: T[] = [];
    let kept = 0;
    for (let i = 0; i < this.waiting.length; i++) {
      const item = this.waiting[i] as T;
      if (this.io.gone(item)) gone.push(item);
      else this.waiting[kept++] = item;
    }
    this.waiting.length = kept;
    for (const item of gone) this.io.dropped(item);
  }

  // A start that ends at once and hands the pacer its next job starts that one inside this one,
  // and its time is counted twice: the budget runs out early, never late.
  private timedStart(item: T): void {
    const t0 = this.io.now();
    this.io.start(item);
    this.spentMs += this.io.now() - t0;
  }
}
