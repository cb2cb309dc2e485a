// The HIGH reserve (qos.highReserve), a trunk reservation as telephone exchanges keep circuits for
// priority calls: while the first class by priority has had an arrival within ACTIVE_MS, a job of
// any other class may take a slot only if more than the reserved share of the cluster's slots
// stays free after it. The first class may take every slot.
// And the fill pace (qos.paceFill, with or without a reserve): slots taken together free together
// one service time later, so after a step in load (an idle cluster, then a flood of pages) a HIGH
// arrival beyond the reserve would wait a whole service time behind pages that all started at
// once. While HIGH is active, idle slots are filled no faster than slots empty: a start spends a
// token, a slot that frees gives one back (a replacement is never held), and idle slots earn
// tokens at the slots over the recent mean service time, at most FILL_BURST more than the jobs in
// service. HIGH never waits for a token but spends one, so pages fill what HIGH leaves. Under
// steady overload every start replaces an answer and the pace never binds; after a step it
// spreads the first starts over one service time, as they will free.
// And the wait budget (qos.highWaitMs): a reserved slot idles until HIGH comes, and when HIGH is
// most of the traffic that idle slot is a large part of what is left for pages. So the reserve is
// waived for a start of another class when jobs in service are due to answer (started + their
// class's mean service time) within the budget, one for each reserved slot the start would take:
// a HIGH that then arrives waits about the budget at most, for the slot that frees. Predictions
// miss, so the waiver also watches HIGH's recent longest wait for a slot (the longest, decaying by
// e every ACTIVE_MS): while it is over the budget nothing is waived. HIGH alone over capacity
// waits long anyway, so then nothing is waived either. A job past its due time by more than the
// budget is not counted (its class's mean does not fit it), nor one whose class has no mean yet.
// Pure: the view is read, never changed; the clock is the caller's.
import type { BoardLoadView, MasterWork } from './least-connection.ts';
import type { QueueNode } from './linked-queue.ts';

/** The first class counts as active (its reserve holds) this long after its last arrival. */
const ACTIVE_MS = 1000;
/** Starts the fill pace lets through at once. */
const FILL_BURST = 1;
/** Weight of the newest answer in the mean service time the fill pace runs on. */
const SERVICE_EWMA = 0.1;
/** Jobs in service the waiver looks at, oldest first (a bound on the work per look). */
const WAIVER_SCAN_MAX = 64;

/** A job in service, as the waiver reads it. */
export interface InService {
  readonly dispatchedMs: number;
  readonly cls: number;
}

export class HighReserve {
  private lastFirstMs = -Infinity;
  /** The first class's longest wait for a slot, as of firstWaitAtMs (the waiver's gauge). */
  private firstWaitMs = 0;
  private firstWaitAtMs = 0;
  /** Mean service time (dispatch to answer) of every class; 0: none seen, the pace is off. */
  private serviceMs = 0;
  private tokens = FILL_BURST;
  private tokensAtMs = 0;
  /** The slots at the last look (bounds a debt of tokens). */
  private slots = 0;
  /** When the pace will let the next start through, if it held one back at the last look. */
  wakeAtMs: number | undefined;

  constructor(
    /** qos.highReserve: the share of the slots kept free (0: none). */
    private readonly share: number,
    /** qos.paceFill. */
    private readonly pace: boolean,
    /** limits.inFlightPerBoardMax. */
    private readonly cap: number,
    private readonly view: BoardLoadView,
    private readonly work: MasterWork,
    /** qos.highWaitMs (0: the reserve is never waived). */
    private readonly waitBudgetMs: number,
    /** The jobs in service, in the order they started (read, never changed). */
    private readonly inService: { first(): QueueNode<InService> | undefined },
    /** The mean service time of each class (0: none seen yet; read, never changed). */
    private readonly classServiceMs: ArrayLike<number>,
  ) {}

  /** A job of the first class arrived. */
  firstArrived(nowMs: number): void {
    this.lastFirstMs = nowMs;
  }

  private active(nowMs: number): boolean {
    return nowMs - this.lastFirstMs <= ACTIVE_MS;
  }

  /** Whether a job of a class after the first may take a slot now. */
  allows(nowMs: number): boolean {
    if (!this.active(nowMs)) return true;
    const r = this.state();
    if (r.free <= r.reserved && !this.waived(nowMs, r.free, r.reserved - r.free + 1)) return false;
    if (!this.pace || this.serviceMs === 0) return true;
    const t = Math.min(FILL_BURST + r.slots - r.free, this.earn(nowMs, r.slots));
    this.tokens = t;
    if (t >= 1) return true;
    this.wakeAtMs = nowMs + Math.ceil(((1 - t) * this.serviceMs) / r.slots);
    return false;
  }

  /** Whether the reserve is waived for this start: HIGH's recent waits are under the budget and `needed` jobs in service are due within it. It is looked at when the core pumps (an arrival, an answer), never woken for. */
  private waived(nowMs: number, free: number, needed: number): boolean {
    const budget = this.waitBudgetMs;
    if (budget === 0 || free === 0 || this.recentWaitMs(nowMs) >= budget) return false;
    let due = 0;
    let looked = 0;
    for (let n = this.inService.first(); n; n = n.next) {
      const j = n.value;
      if (++looked > WAIVER_SCAN_MAX) break;
      const mean = this.classServiceMs[j.cls]!;
      if (mean === 0) continue;
      const at = j.dispatchedMs + mean;
      if (at < nowMs - budget) continue;
      if (at > nowMs + budget) break;
      if (++due >= needed) return true;
    }
    return false;
  }

  /** The first class's longest recent wait for a slot: the longest, decayed since. */
  private recentWaitMs(nowMs: number): number {
    return this.firstWaitMs === 0 ? 0 : this.firstWaitMs * Math.exp(-(nowMs - this.firstWaitAtMs) / ACTIVE_MS);
  }

  /** A job of any class started (`firstWaitedMs`: how long it waited, when of the first class). */
  started(firstWaitedMs: number | undefined, nowMs: number): void {
    if (firstWaitedMs !== undefined) {
      this.firstWaitMs = Math.max(firstWaitedMs, this.recentWaitMs(nowMs));
      this.firstWaitAtMs = nowMs;
    }
    this.tokens = Math.max(this.tokens - 1, -this.slots);
  }

  /** A job of any class left its slot (answered, failed or timed out). */
  freed(): void {
    this.tokens++;
  }

  /** A job of any class was answered after `servedMs` on its board. */
  served(servedMs: number): void {
    this.serviceMs = this.serviceMs === 0 ? servedMs : (1 - SERVICE_EWMA) * this.serviceMs + SERVICE_EWMA * servedMs;
  }

  /** The tokens idle slots have earned by `nowMs`. */
  private earn(nowMs: number, slots: number): number {
    this.slots = slots;
    const t = this.tokens + ((nowMs - this.tokensAtMs) * slots) / this.serviceMs;
    this.tokensAtMs = nowMs;
    return t;
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

  /** For /metrics: the free slots, how many of them are kept for the first class, and its recent longest wait (s, to the ms; none when the reserve is off). */
  metrics(nowMs: number): { freeSlots?: number; reservedSlots?: number; highWaitS?: number } {
    if (this.share === 0) return {};
    const r = this.state();
    return { freeSlots: r.free, reservedSlots: r.reserved, highWaitS: Math.round(this.recentWaitMs(nowMs)) / 1000 };
  }
}
