// The HIGH reserve (qos.highReserve), a trunk reservation as telephone exchanges keep circuits for
// priority calls: while the first class by priority has had an arrival within ACTIVE_MS, a job of
// any other class may take a slot only if more than the reserved share of the cluster's slots
// stays free after it. The first class may take every slot. Pure: the view is read, never changed.
import type { BoardLoadView, MasterWork } from './least-connection.ts';

/** The first class counts as active (its reserve holds) this long after its last arrival. */
export const ACTIVE_MS = 1000;

export class HighReserve {
  private lastFirstMs = -Infinity;

  constructor(
    /** qos.highReserve: the share of the slots kept free (0: off). */
    private readonly share: number,
    /** limits.inFlightPerBoardMax. */
    private readonly cap: number,
    private readonly view: BoardLoadView,
    private readonly work: MasterWork,
  ) {}

  /** A job of the first class arrived. */
  firstArrived(nowMs: number): void {
    this.lastFirstMs = nowMs;
  }

  /** Whether a job of a class after the first may take a slot now. */
  allows(nowMs: number): boolean {
    if (this.share === 0 || nowMs - this.lastFirstMs > ACTIVE_MS) return true;
    const r = this.state();
    return r.free > r.reserved;
  }

  /** The running boards' slots that work may use (the master's too unless it only forwards), how many are free, and how many of them are kept for the first class. */
  state(): { slots: number; free: number; reserved: number } {
    let slots = 0;
    let free = 0;
    for (let i = 0; i < this.view.n; i++) {
      if (this.view.runstate(i) !== 1 || !this.work.mayServe(i)) continue;
      slots += this.cap;
      free += Math.max(0, this.cap - this.view.linknum(i));
    }
    const reserved = this.share === 0 || slots === 0 ? 0 : Math.min(slots - 1, Math.max(1, Math.round(this.share * slots)));
    return { slots, free, reserved };
  }

  /** For /metrics: the free slots and how many of them are kept for the first class (none when the reserve is off). */
  metrics(): { freeSlots?: number; reservedSlots?: number } {
    if (this.share === 0) return {};
    const r = this.state();
    return { freeSlots: r.free, reservedSlots: r.reserved };
  }
}
