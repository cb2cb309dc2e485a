// When the master's schedules are due. Pure: wall-clock time in, the schedules to run out; the
// adapter (node/services/schedules.ts) keeps the timer and runs them.
//
// Each tick looks at every whole second since the last tick, so a loop that woke late still runs
// what fell due meanwhile, once: a schedule that matched several of those seconds runs once, for
// the last of them. Only the last `catchUpS` seconds are looked at: after a longer stall or a
// forward clock step (a board's clock set by NTP after boot) the older ones are skipped, and the
// tick says how many. A clock stepped back starts over from the new time: nothing re-runs. A
// schedule whose previous run is still under way is not due again: that run is skipped, not
// stacked behind it.
import { type CronSpec, cronMatches, type LocalTime } from '../shared/cron.ts';

export interface Due {
  readonly schedule: number;
  /** The epoch second it is due for (its run's identity: the per-tick idempotency key). */
  readonly atS: number;
}

export interface TickResult {
  readonly due: readonly Due[];
  /** Schedules that matched but whose previous run is still under way: skipped. */
  readonly overlapped: readonly number[];
  /** Seconds passed but not looked at (those over `catchUpS`). */
  readonly skippedS: number;
  /** The clock went back since the last tick: the ticker starts over from now. */
  readonly steppedBack: boolean;
}

export class ScheduleTicker {
  private lastS: number;

  constructor(
    private readonly specs: readonly CronSpec[],
    nowMs: number,
    private readonly catchUpS: number,
    private readonly fields: (epochS: number) => LocalTime,
  ) {
    if (!Number.isInteger(catchUpS) || catchUpS < 1) throw new Error(`invariant: catchUpS ${catchUpS}`);
    // The second under way at start is not run: the first looked at is the next one.
    this.lastS = Math.floor(nowMs / 1000);
  }

  /** `running(i)`: schedule i's previous run is still under way. */
  tick(nowMs: number, running: (schedule: number) => boolean): TickResult {
    const nowS = Math.floor(nowMs / 1000);
    if (nowS < this.lastS) {
      this.lastS = nowS;
      return { due: [], overlapped: [], skippedS: 0, steppedBack: true };
    }
    const from = Math.max(this.lastS + 1, nowS - this.catchUpS + 1);
    const skippedS = from - (this.lastS + 1);
    const latest = new Array<number>(this.specs.length).fill(-1);
    for (let s = from; s <= nowS; s++) {
      const t = this.fields(s);
      for (let i = 0; i < this.specs.length; i++) if (cronMatches(this.specs[i]!, t)) latest[i] = s;
    }
    this.lastS = nowS;
    const due: Due[] = [];
    const overlapped: number[] = [];
    for (let i = 0; i < latest.length; i++) {
      if (latest[i]! < 0) continue;
      if (running(i)) overlapped.push(i);
      else due.push({ schedule: i, atS: latest[i]! });
    }
    return { due, overlapped, skippedS, steppedBack: false };
  }

  /** When to tick next: the start of the next second. */
  nextWakeMs(nowMs: number): number {
    return (Math.floor(nowMs / 1000) + 1) * 1000;
  }
}
