// Dynamic Weighted Fair Service (paper 004): weighted fair queueing that emulates processor
// sharing over the class queues. Virtual time R advances at C2 / ΣΦ(non-empty queues) (C2: the
// slots that serve at once); a request of queue a gets S = max(F_prev(a), R(arrival)) and
// F = S + C1·P/Φa, P its expected service time (learned per class); a free slot serves the
// smallest F. Every period each weight is recomputed from its initial weight and its queue
// length: Φa = Φa0 · (1 + β·qa), so a congested queue gets more service before it overflows.
import { type ClassBounds, ClassQueues, type QueueItem, type RunTest, type SchedulerLimits } from '../scheduler.ts';

export interface DwfsOptions {
  /** Initial weight per class (Φa0). */
  weights: readonly number[];
  /** Queue-length gain of the weight update. */
  beta: number;
  /** Weight recomputation period. */
  periodMs: number;
  C1?: number;
  /** Requests served at once (boards × in-flight per board): virtual time runs that much faster. */
  C2?: number;
  /** Expected service time before any is measured (ms). */
  initialServiceMs?: number;
}

export class DwfsScheduler<T extends QueueItem> extends ClassQueues<T> {
  readonly name = 'dwfs';
  readonly weights: number[];
  private readonly lastFinish: number[];
  private virtual = 0;
  private lastMs: number | undefined;
  private lastPeriodMs: number | undefined;
  private readonly C1: number;
  private readonly C2: number;
  /** Per class, the recent service time: P in the finish tag. */
  readonly serviceMs: number[];

  constructor(
    classes: readonly ClassBounds[],
    limits: SchedulerLimits,
    private readonly opts: DwfsOptions,
  ) {
    super(classes, limits);
    if (opts.weights.length !== classes.length || opts.weights.some((w) => !(w > 0))) throw new Error('dwfs: one positive weight per class');
    this.weights = [...opts.weights];
    this.lastFinish = classes.map(() => 0);
    this.C1 = opts.C1 ?? 1;
    this.C2 = opts.C2 ?? 1;
    this.serviceMs = classes.map(() => opts.initialServiceMs ?? 1);
  }

  /** Advance virtual time to `nowMs` at rate C2 / Σ weights of the non-empty queues. */
  advance(nowMs: number): void {
    if (this.lastMs !== undefined && nowMs > this.lastMs) {
      let active = 0;
      this.queues.forEach((q, i) => {
        if (q.size > 0) active += this.weights[i]!;
      });
      if (active > 0) this.virtual += ((nowMs - this.lastMs) * this.C2) / active;
    }
    this.lastMs = nowMs;
    if (this.lastPeriodMs === undefined) this.lastPeriodMs = nowMs;
    if (nowMs - this.lastPeriodMs >= this.opts.periodMs) {
      this.lastPeriodMs = nowMs;
      this.queues.forEach((q, i) => {
        this.weights[i] = this.opts.weights[i]! * (1 + this.opts.beta * q.size);
      });
    }
  }

  override readonly periodic = true;
  override tick(nowMs: number): void {
    this.advance(nowMs);
  }

  get virtualTime(): number {
    return this.virtual;
  }

  override enqueue(item: T): ReturnType<ClassQueues<T>['enqueue']> {
    this.advance(item.enqueuedMs);
    const r = super.enqueue(item);
    if (r === 'ok') {
      const start = Math.max(this.lastFinish[item.cls]!, this.virtual);
      const finish = start + (this.C1 * this.serviceMs[item.cls]!) / this.weights[item.cls]!;
      this.lastFinish[item.cls] = finish;
      this.entryNode(item)!.value.tag = finish;
    }
    return r;
  }

  override take(nowMs: number, test: RunTest<T>): T | undefined {
    this.advance(nowMs);
    return super.take(nowMs, test);
  }

  protected pick(test: RunTest<T>): T | undefined {
    let best: { item: T; f: number; seq: number } | undefined;
    for (const h of this.heads(test)) {
      const f = h.tag;
      if (!best || f < best.f || (f === best.f && h.seq < best.seq)) best = { item: h.item, f, seq: h.seq };
    }
    return best?.item;
  }

  override completed(item: T, o: import('../scheduler.ts').Outcome): void {
    if (o.serviceMs && o.serviceMs > 0) this.serviceMs[item.cls] = 0.8 * this.serviceMs[item.cls]! + 0.2 * o.serviceMs;
  }

  finishTag(item: T): number | undefined {
    return this.entryNode(item)?.value.tag;
  }

  override state(): Record<string, number | number[]> {
    return { virtualTime: +this.virtual.toFixed(3), weights: this.weights.map((w) => +w.toFixed(3)) };
  }
}
