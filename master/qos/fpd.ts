// FPD merge scheduling (paper 000): keep the classes' relative quality proQoS in proportion to
// their configured shares. A free slot goes to the runnable class furthest below its target share
// (target_i − proQoS_i largest); ties by class priority, then arrival.
import { type ClassBounds, ClassQueues, type Outcome, type QueueItem, type RunTest, type SchedulerLimits } from '../scheduler.ts';
import { proportions, ResponseLog } from './response-log.ts';

export class FpdScheduler<T extends QueueItem> extends ClassQueues<T> {
  readonly name = 'fpd';
  readonly logs: ResponseLog[];
  readonly targets: number[];

  constructor(classes: readonly ClassBounds[], limits: SchedulerLimits, shares: readonly number[], k: number) {
    super(classes, limits);
    const total = shares.reduce((a, b) => a + b, 0);
    if (shares.length !== classes.length || !(total > 0)) throw new Error('fpd: one share per class');
    this.targets = shares.map((s) => s / total);
    this.logs = classes.map(() => new ResponseLog(k));
  }

  protected pick(test: RunTest<T>): T | undefined {
    const pro = proportions(this.logs);
    let best: { item: T; deficit: number; prio: number; seq: number } | undefined;
    for (const h of this.heads(test)) {
      const deficit = this.targets[h.cls]! - pro[h.cls]!;
      const prio = this.classes[h.cls]!.priority;
      if (!best || deficit > best.deficit + 1e-12 || (Math.abs(deficit - best.deficit) <= 1e-12 && (prio < best.prio || (prio === best.prio && h.seq < best.seq))))
        best = { item: h.item, deficit, prio, seq: h.seq };
    }
    return best?.item;
  }

  override completed(item: T, o: Outcome): void {
    this.logs[item.cls]!.push(ResponseLog.quality(o.level, o.levels));
  }

  override state(): Record<string, number[]> {
    return { absQoS: this.logs.map((l) => +l.absQoS.toFixed(3)), proQoS: proportions(this.logs).map((p) => +p.toFixed(3)), targets: this.targets.map((t) => +t.toFixed(3)) };
  }
}
