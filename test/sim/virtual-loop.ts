// Virtual time for the seeded simulator: one event heap, and an event loop per thread that keeps
// Node's order within a turn: due timers first, then the I/O that arrived (datagrams, messages
// from the other thread), then setImmediate callbacks. A thread can be held (a CPU stall or a
// throttled cgroup): what arrives meanwhile waits in its queue, as in a socket, and its due timers
// wait too; when it runs again, its timers run before it reads. That order is where the last
// false takeover lived (a follower judging its master silent with the master's STATE unread).
import type { Timer, Timers } from '../../shared/clock.ts';

interface Ev {
  at: number;
  seq: number;
  run: () => void;
}

class Heap {
  private readonly a: Ev[] = [];
  get size(): number {
    return this.a.length;
  }
  peek(): Ev | undefined {
    return this.a[0];
  }
  push(e: Ev): void {
    const a = this.a;
    a.push(e);
    for (let i = a.length - 1; i > 0; ) {
      const p = (i - 1) >> 1;
      if (less(a[p]!, a[i]!)) break;
      [a[p], a[i]] = [a[i]!, a[p]!];
      i = p;
    }
  }
  pop(): Ev | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) {
      a[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && less(a[l]!, a[m]!)) m = l;
        if (r < a.length && less(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i]!, a[m]!];
        i = m;
      }
    }
    return top;
  }
}
const less = (x: Ev, y: Ev) => x.at < y.at || (x.at === y.at && x.seq < y.seq);

/** Virtual time and the events in it. */
export class World {
  now = 0;
  private seq = 0;
  private readonly events = new Heap();
  readonly clock = { now: () => this.now };

  at(t: number, run: () => void): void {
    this.events.push({ at: Math.max(t, this.now), seq: this.seq++, run });
  }

  /**
   * Runs every event due by `t`, in order; `onError` hears what an event threw. Returns false
   * early when `pause()` says so (a board is starting: its promises must settle first).
   */
  runUntil(t: number, onError: (err: unknown) => void, pause: () => boolean, onStep?: () => void): boolean {
    while (this.events.size > 0 && this.events.peek()!.at <= t) {
      if (pause()) return false;
      const e = this.events.pop()!;
      this.now = e.at;
      try {
        e.run();
      } catch (err) {
        onError(err);
      }
      onStep?.();
    }
    this.now = Math.max(this.now, t);
    return true;
  }
}

interface VTimer extends Timer {
  at: number;
  seq: number;
  fn: () => void;
  every: number;
  cleared: boolean;
}

/** One thread's event loop. `stopped`: the thread is gone (its board crashed); nothing runs again. */
export class VirtualLoop implements Timers {
  private timers: VTimer[] = [];
  private io: Array<() => void> = [];
  private immediates: Array<() => void> = [];
  private seq = 0;
  /** The thread does not run before this (a stall). */
  heldUntil = 0;
  stopped = false;
  private wakeAt = Infinity;
  /** A stall waiting for the next turn with setImmediate callbacks queued (see holdBeforeImmediates). */
  private heldBeforeImmediatesMs = 0;

  /** `deferImmediates` false: a loop whose setImmediate runs at once (a model of ticking before reading, to show what it breaks). */
  constructor(
    private readonly world: World,
    private readonly deferImmediates = true,
  ) {}

  setTimeout(fn: () => void, ms: number): Timer {
    return this.add(fn, ms, 0);
  }
  setInterval(fn: () => void, ms: number): Timer {
    return this.add(fn, ms, Math.max(1, ms));
  }
  clear(t: Timer | undefined): void {
    if (t) (t as VTimer).cleared = true;
  }
  setImmediate(fn: () => void): void {
    if (!this.deferImmediates) return void fn();
    this.immediates.push(fn);
    this.wake(this.world.now);
  }
  /** I/O arriving: read in the next turn's poll phase. */
  deliver(fn: () => void): void {
    if (this.stopped) return;
    this.io.push(fn);
    this.wake(this.world.now);
  }
  /** Hold the thread for `ms` from now. */
  hold(ms: number): void {
    this.heldUntil = Math.max(this.heldUntil, this.world.now + ms);
  }
  /**
   * Hold the thread for `ms` in its next turn that has setImmediate callbacks queued, after its
   * I/O and before them: a long task run by an I/O callback, or a cgroup's quota spent just then.
   * What arrives meanwhile is read in the turn after, so the callbacks run before it.
   */
  holdBeforeImmediates(ms: number): void {
    this.heldBeforeImmediatesMs = ms;
  }
  stop(): void {
    this.stopped = true;
    this.timers = [];
    this.io = [];
    this.immediates = [];
  }

  private add(fn: () => void, ms: number, every: number): VTimer {
    // Node's timers wait at least 1 ms.
    const t: VTimer = { at: this.world.now + Math.max(1, Math.ceil(ms)), seq: this.seq++, fn, every, cleared: false, unref: () => t };
    this.timers.push(t);
    this.wake(t.at);
    return t;
  }

  private wake(t: number): void {
    if (this.stopped) return;
    const at = Math.max(t, this.heldUntil, this.world.now);
    if (at >= this.wakeAt) return;
    this.wakeAt = at;
    this.world.at(at, () => {
      if (this.wakeAt !== at) return;
      this.wakeAt = Infinity;
      this.turn();
    });
  }

  /** One turn: timers due, then the I/O that arrived, then the immediates queued before it. */
  private turn(): void {
    if (this.stopped) return;
    const now = this.world.now;
    if (now < this.heldUntil) return void this.wake(this.heldUntil);
    this.timers = this.timers.filter((t) => !t.cleared);
    const due = this.timers.filter((t) => t.at <= now).sort((a, b) => a.at - b.at || a.seq - b.seq);
    for (const t of due) {
      if (t.cleared || this.stopped) continue;
      if (t.every > 0) t.at = now + t.every;
      else t.cleared = true;
      t.fn();
    }
    const io = this.io;
    this.io = [];
    for (const fn of io) if (!this.stopped) fn();
    const held = this.heldBeforeImmediatesMs;
    if (held > 0 && this.immediates.length > 0) {
      this.heldBeforeImmediatesMs = 0;
      this.hold(held);
      return void this.world.at(this.heldUntil, () => this.check());
    }
    this.check();
  }

  /** The end of a turn: the immediates queued before it, then the next wake. */
  private check(): void {
    if (this.stopped) return;
    const now = this.world.now;
    const imm = this.immediates;
    this.immediates = [];
    for (const fn of imm) if (!this.stopped) fn();
    this.timers = this.timers.filter((t) => !t.cleared);
    if (this.stopped) return;
    if (this.io.length > 0 || this.immediates.length > 0) this.wake(now);
    const next = Math.min(...this.timers.map((t) => t.at));
    if (next < Infinity) this.wake(next);
  }
}
