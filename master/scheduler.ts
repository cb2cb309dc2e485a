// The seam between intake and dispatch. A scheduler holds queued requests per class and decides
// which goes next; the QoS pipeline adds more implementations behind this interface.
// Pure: time is an argument, no timers.
import { LinkedQueue, type QueueNode } from './linked-queue.ts';

export interface QueueItem {
  /** Class index (into config.classes). */
  readonly cls: number;
  /** Body bytes held while queued (counted against queueBytesMax). */
  readonly bytes: number;
  readonly enqueuedMs: number;
  /**
   * The scheduler's own: where the item sits while queued (set and cleared by the scheduler, read
   * by nobody else). On the item, not in a Map beside the queues: see docs/design.md, "No Map
   * entry per request".
   */
  queueEntry?: QueueNode<QueueEntry<QueueItem>> | undefined;
}

/** An item in its class's FIFO: its arrival sequence, and a tag a scheduler may order by (DWFS's finish tag). */
export interface QueueEntry<T> {
  readonly item: T;
  readonly seq: number;
  tag: number;
}

export interface ClassBounds {
  readonly priority: number;
  readonly queueMax: number;
  readonly deadlineMs: number;
}

/** How a request ended, fed back to schedulers that learn from it (QoS). */
export interface Outcome {
  readonly responseMs: number;
  /** Dispatch to answer (0 when never dispatched). */
  readonly serviceMs?: number;
  /** Content level served, 0 when refused or dropped, M for the full level. */
  readonly level: number;
  readonly levels: number;
  readonly deadlineMet: boolean;
}

/** Whether a queued item can start now (the dispatch core's test: an object, so a new core's scheduler calls the same method). */
export interface RunTest<T> {
  canRun(item: T): boolean;
}

export type EnqueueResult = 'ok' | 'class-full' | 'bytes-full';

export interface Scheduler<T extends QueueItem> {
  readonly name: string;
  enqueue(item: T): EnqueueResult;
  /** The next item to dispatch; only items `test` accepts are taken (FIFO within a class, scanning at most scanMax per class). */
  take(nowMs: number, test: RunTest<T>): T | undefined;
  remove(item: T): boolean;
  /** Remove and return every item queued past its class deadline. */
  expire(nowMs: number): T[];
  size(cls?: number): number;
  /** When the newest item of a class still waiting arrived (undefined: none waits). */
  newest(cls: number): number | undefined;
  bytes(): number;
  /** Everything still queued, in arrival order per class (for handing over on step-down). */
  drain(): T[];
  /** Whether a class must be served at the full content level now (002: panic or critical). */
  protect(cls: number): boolean;
  /** Schedulers with their own period (DWFS's weights) want `tick` every qos.periodMs. */
  readonly periodic: boolean;
  tick(nowMs: number): void;
  /** A dispatched item finished (or was refused): schedulers that adapt learn from it. */
  completed(item: T, outcome: Outcome, nowMs: number): void;
  /** Controller state for /metrics and the UI. */
  state(): Record<string, number | string | number[] | string[]>;
}

export interface SchedulerLimits {
  readonly queueBytesMax: number;
  readonly scanMax: number;
}

/** Per-class FIFOs with bounds; subclasses choose which class goes next. */
abstract class ClassQueues<T extends QueueItem> implements Scheduler<T> {
  abstract readonly name: string;
  protected readonly queues: LinkedQueue<QueueEntry<T>>[];
  private seq = 0;
  private queued = 0;
  private heldBytes = 0;

  constructor(
    protected readonly classes: readonly ClassBounds[],
    protected readonly limits: SchedulerLimits,
  ) {
    this.queues = classes.map(() => new LinkedQueue());
  }

  enqueue(item: T): EnqueueResult {
    const q = this.queues[item.cls];
    if (!q) throw new Error(`invariant: unknown class ${item.cls}`);
    if (q.size >= this.classes[item.cls]!.queueMax) return 'class-full';
    if (this.heldBytes + item.bytes > this.limits.queueBytesMax) return 'bytes-full';
    item.queueEntry = q.push({ item, seq: this.seq++, tag: 0 });
    this.queued++;
    this.heldBytes += item.bytes;
    return 'ok';
  }

  remove(item: T): boolean {
    const node = this.entryNode(item);
    if (!node?.queued) return false;
    this.queues[item.cls]!.remove(node);
    item.queueEntry = undefined;
    this.queued--;
    this.heldBytes -= item.bytes;
    return true;
  }

  expire(nowMs: number): T[] {
    const out: T[] = [];
    this.queues.forEach((q, cls) => {
      const deadline = this.classes[cls]!.deadlineMs;
      for (let n = q.first(); n && nowMs - n.value.item.enqueuedMs >= deadline; n = q.first()) {
        out.push(n.value.item);
        this.remove(n.value.item);
      }
    });
    return out;
  }

  size(cls?: number): number {
    if (cls !== undefined) return this.queues[cls]?.size ?? 0;
    return this.queued;
  }
  newest(cls: number): number | undefined {
    return this.queues[cls]?.last()?.value.item.enqueuedMs;
  }
  protect(_cls: number): boolean {
    return false;
  }
  bytes(): number {
    return this.heldBytes;
  }

  drain(): T[] {
    // In arrival order across the classes (each entry's sequence number).
    const entries: QueueEntry<T>[] = [];
    for (const q of this.queues) for (let n = q.first(); n; n = n.next) entries.push(n.value);
    const all = entries.sort((a, b) => a.seq - b.seq).map((e) => e.item);
    for (const it of all) this.remove(it);
    return all;
  }

  /** The queue entry of an item while it waits (undefined once it left). */
  protected entryNode(item: T): QueueNode<QueueEntry<T>> | undefined {
    return item.queueEntry as QueueNode<QueueEntry<T>> | undefined;
  }

  /** First runnable entry of class `cls`, looking at no more than scanMax entries. */
  protected firstRunnable(cls: number, test: RunTest<T>): QueueEntry<T> | undefined {
    // A plain walk (no iterator or closure per call: this runs for every class on every dispatch).
    let n = this.queues[cls]!.first();
    for (let i = 0; n && i < this.limits.scanMax; i++, n = n.next) if (test.canRun(n.value.item)) return n.value;
    return undefined;
  }

  take(_nowMs: number, test: RunTest<T>): T | undefined {
    const picked = this.pick(test);
    if (picked) this.remove(picked);
    return picked;
  }

  protected abstract pick(test: RunTest<T>): T | undefined;

  readonly periodic: boolean = false;
  tick(_nowMs: number): void {}
  completed(_item: T, _outcome: Outcome, _nowMs: number): void {}
  state(): Record<string, number | string | number[] | string[]> {
    return {};
  }
  /** Queue heads that may run, one per class (scanning at most scanMax), with their arrival sequence. */
  protected heads(test: RunTest<T>): Array<{ cls: number; item: T; seq: number; tag: number }> {
    const out: Array<{ cls: number; item: T; seq: number; tag: number }> = [];
    for (let cls = 0; cls < this.queues.length; cls++) {
      const e = this.firstRunnable(cls, test);
      if (e) out.push({ cls, item: e.item, seq: e.seq, tag: e.tag });
    }
    return out;
  }
}

export { ClassQueues };

/** Paper 001: HIGH before LOW, arrival order within a class. */
export class PriorityScheduler<T extends QueueItem> extends ClassQueues<T> {
  readonly name = 'priority';
  private readonly order: number[];
  constructor(classes: readonly ClassBounds[], limits: SchedulerLimits) {
    super(classes, limits);
    this.order = classes.map((_, i) => i).sort((a, b) => classes[a]!.priority - classes[b]!.priority || a - b);
  }
  protected pick(test: RunTest<T>): T | undefined {
    for (const cls of this.order) {
      const e = this.firstRunnable(cls, test);
      if (e) return e.item;
    }
    return undefined;
  }
}

/** The paper's baseline: plain arrival order, classes ignored (still bounded per class). */
export class FifoScheduler<T extends QueueItem> extends ClassQueues<T> {
  readonly name = 'fifo';
  protected pick(test: RunTest<T>): T | undefined {
    let best: QueueEntry<T> | undefined;
    for (let cls = 0; cls < this.queues.length; cls++) {
      const e = this.firstRunnable(cls, test);
      if (e && (!best || e.seq < best.seq)) best = e;
    }
    return best?.item;
  }
}

export function createScheduler<T extends QueueItem>(name: 'priority' | 'fifo', classes: readonly ClassBounds[], limits: SchedulerLimits): Scheduler<T> {
  return name === 'fifo' ? new FifoScheduler<T>(classes, limits) : new PriorityScheduler<T>(classes, limits);
}
