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
