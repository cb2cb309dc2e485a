// Scheduled device jobs. They run on the master only and enter through the master's own HTTP
// port, so they take the same queue, dispatch and idempotency path as a client's request; when
// mastership moves, the new master's schedules take over. When they are due is the pure ticker's
// call (master/schedule-ticker.ts); this adapter keeps its one timer and runs what it returns.
import { ScheduleTicker } from '../../master/schedule-ticker.ts';
import type { Config } from '../../shared/config.ts';
import { localTime } from '../../shared/cron.ts';
import type { Counter, Registry } from '../../shared/metrics.ts';
import type { Logger } from '../log.ts';
import type { Loopback } from './loopback.ts';

/** A loop that wakes this late still runs what fell due meanwhile (once); older seconds are skipped. */
const CATCH_UP_S = 10;

export class Schedules {
  private ticker: ScheduleTicker | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** A schedule's run still under way (the ticker skips it rather than stack another). */
  private readonly inFlight: boolean[];
  private readonly runs: Counter;
  private readonly skipped: Counter;

  constructor(
    private readonly cfg: Config,
    private readonly log: Logger,
    metrics: Registry,
    private readonly credentials: () => Record<string, string>,
    private readonly loopback: Loopback,
  ) {
    this.inFlight = cfg.schedules.map(() => false);
    this.runs = metrics.counter('ews_schedule_runs_total', 'Scheduled jobs run by this board as master, by schedule and answer status');
    this.skipped = metrics.counter(
      'ews_schedule_skipped_total',
      'Scheduled runs not made: the previous run still under way (overlap), or the loop or clock late past the catch-up window (late, per second)',
    );
  }

  get running(): boolean {
    return this.ticker !== undefined;
  }

  start(): void {
    if (this.running || this.cfg.schedules.length === 0) return;
    this.ticker = new ScheduleTicker(
      this.cfg.schedules.map((s) => s.when),
      Date.now(),
      CATCH_UP_S,
      localTime,
    );
    this.arm();
    this.log.info({ schedules: this.cfg.schedules.length }, 'schedules started');
  }

  stop(): void {
    if (!this.running) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.ticker = undefined;
    this.log.info('schedules stopped');
  }

  private arm(): void {
    const now = Date.now();
    // Timers run on the monotonic clock and may wake a little early against Date: the tick then
    // finds the same second, nothing due, and arms again for the rest.
    this.timer = setTimeout(this.onTimer, Math.max(1, this.ticker!.nextWakeMs(now) - now)).unref();
  }

  private readonly isRunning = (schedule: number): boolean => this.inFlight[schedule]!;

  private readonly onTimer = (): void => {
    const ticker = this.ticker;
    if (!ticker) return;
    const r = ticker.tick(Date.now(), this.isRunning);
    if (r.skippedS > 0) {
      this.skipped.inc({ reason: 'late' }, r.skippedS);
      this.log.warn({ skippedS: r.skippedS }, 'schedules: the clock moved ahead or the loop stalled; the seconds before the catch-up window were not run');
    }
    if (r.steppedBack) this.log.warn('schedules: the clock went back; going on from the new time');
    for (const i of r.overlapped) this.skipped.inc({ schedule: i, reason: 'overlap' });
    for (const d of r.due) {
      this.inFlight[d.schedule] = true;
      void this.fire(d.schedule, d.atS).finally(() => {
        this.inFlight[d.schedule] = false;
      });
    }
    this.arm();
  };

  private async fire(i: number, atS: number): Promise<void> {
    const s = this.cfg.schedules[i]!;
    const path = `/cgi-bin/devices/${encodeURIComponent(s.device)}/${encodeURIComponent(s.action)}`;
    const headers: Record<string, string> = { 'x-ews-origin': 'schedule', ...this.credentials() };
    // An action gets a key per tick: if two masters overlap for a moment after a partition heals,
    // the device still runs it once.
    if (s.action !== 'read') headers['idempotency-key'] = `schedule-${i}-${atS}`;
    const r = await this.loopback.post(path, s.value === undefined ? '' : JSON.stringify({ value: s.value }), headers, this.cfg.limits.requestTimeoutMs);
    this.runs.inc({ schedule: i, status: r.status });
    if (r.status === 0 || r.status >= 400) this.log.warn({ schedule: i, device: s.device, action: s.action, status: r.status }, 'scheduled job failed');
  }

  close(): void {
    this.stop();
    this.loopback.close();
  }
}
