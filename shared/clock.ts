// Time is an input. Cores take `nowMs` arguments; adapters read it from a Clock.
export interface Clock {
  /** Monotonic milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => performance.now() };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private t = 0) {}
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    if (ms < 0) throw new Error('time moves forward only');
    this.t += ms;
  }
}

/** A timer as the adapters hold it: they may let it not keep the process alive. */
export interface Timer {
  unref(): unknown;
}

/**
 * Timers as an input, for the adapters that keep the cluster's time (the UDP link, the plane, the
 * mirror): the system's on a board, the simulator's virtual ones in the seeded simulator.
 */
export interface Timers {
  setTimeout(fn: () => void, ms: number): Timer;
  setInterval(fn: () => void, ms: number): Timer;
  clear(t: Timer | undefined): void;
  /** After the I/O of this turn of the event loop (Node's check phase). */
  setImmediate(fn: () => void): void;
}
