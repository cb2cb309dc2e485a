// Scheduled device jobs. They run on the master only and enter through the master's own HTTP
// port, so they take the same queue, dispatch and idempotency path as a client's request; when
// mastership moves, the new master's schedules take over. node-cron runs them: one task per
// schedule, `noOverlap` (a run still under way makes the next one skip, not stack), and a
// tolerance for a late wake (a slot up to `lateToleranceMs` late still runs, once; an older one is
// missed). A clock stepped ahead (NTP after boot) misses what it jumped over; stepped back, nothing
// runs until the clock reaches the slot it was waiting for, so nothing runs twice. Skips of both
// kinds are counted. node-cron is loaded when a board first becomes master with schedules, so a
// board without any never pays its memory (bench/results/memory.md).
import type { ScheduledTask, TaskContext } from 'node-cron';
import type { Config } from '../../shared/config.ts';
import type { Counter, Registry } from '../../shared/metrics.ts';
import type { Logger } from '../log.ts';
import type { Loopback } from './loopback.ts';

/** A loop that wakes this late still runs what fell due meanwhile (once); older slots are missed. */
export const LATE_TOLERANCE_MS = 10_000;

export class Schedules {
  private tasks: ScheduledTask[] | undefined;
  /** Bumped by start() and stop(): a start whose import finishes after a stop does nothing. */
  private generation = 0;
  private readonly runs: Counter;
  private readonly skipped: Counter;
  /** Missed slots since the last warning: one log line per wake, not one per slot. */
  private missedSinceWarn = 0;

  constructor(
    /** The running config (a push changes the schedules: stop, then start). */
    private readonly config: { readonly cfg: Config },
    private readonly log: Logger,
    metrics: Registry,
    private readonly credentials: () => Record<string, string>,
    private readonly loopback: Loopback,
    private readonly lateToleranceMs = LATE_TOLERANCE_MS,
  ) {
    this.runs = metrics.counter('ews_schedule_runs_total', 'Scheduled jobs run by this board as master, by schedule and answer status');
    this.skipped = metrics.counter(
      'ews_schedule_skipped_total',
      'Scheduled runs not made: the previous run still under way (overlap), or the loop or clock late past the tolerance (missed, per slot)',
    );
  }

  get running(): boolean {
    return this.generation % 2 === 1;
  }

  start(): void {
    if (this.running || this.config.cfg.schedules.length === 0) return;
    const gen = ++this.generation;
    void import('node-cron').then(
      (cron) => {
        if (gen !== this.generation) return;
        const logger = { info: () => {}, debug: () => {}, warn: (m: string) => this.log.debug(m), error: (m: string | Error) => this.log.warn({ err: m }, 'node-cron') };
        this.tasks = this.config.cfg.schedules.map((s, i) => {
          const task = cron.createTask(s.cron, (ctx) => this.fire(i, ctx), { name: `schedule-${i}`, noOverlap: true, missedExecutionTolerance: this.lateToleranceMs, unref: true, logger });
          task.on('execution:overlap', () => this.skipped.inc({ schedule: i, reason: 'overlap' }));
          task.on('execution:missed', () => this.onMissed(i));
          void task.start();
          return task;
        });
        this.log.info({ schedules: this.tasks.length }, 'schedules started');
      },
      (err: unknown) => this.log.error({ err }, 'schedules: node-cron could not be loaded'),
    );
  }

  stop(): void {
    if (!this.running) return;
    this.generation++;
    for (const t of this.tasks ?? []) void t.destroy();
    this.tasks = undefined;
    this.log.info('schedules stopped');
  }

  private onMissed(schedule: number): void {
    this.skipped.inc({ schedule, reason: 'missed' });
    if (this.missedSinceWarn++ > 0) return;
    setImmediate(() => {
      this.log.warn({ missed: this.missedSinceWarn }, 'schedules: the clock moved ahead or the loop stalled; slots older than the tolerance were not run');
      this.missedSinceWarn = 0;
    });
  }

  private async fire(i: number, ctx: TaskContext): Promise<void> {
    const s = this.config.cfg.schedules[i]!;
    const atS = Math.floor(ctx.date.getTime() / 1000);
    const path = `/cgi-bin/devices/${encodeURIComponent(s.device)}/${encodeURIComponent(s.action)}`;
    const headers: Record<string, string> = { 'x-ews-origin': 'schedule', ...this.credentials() };
    // An action gets a key per slot: if two masters overlap for a moment after a partition heals,
    // the device still runs it once.
    if (s.action !== 'read') headers['idempotency-key'] = `schedule-${i}-${atS}`;
    const r = await this.loopback.post(path, s.value === undefined ? '' : JSON.stringify({ value: s.value }), headers, this.config.cfg.limits.requestTimeoutMs);
    this.runs.inc({ schedule: i, status: r.status });
    if (r.status === 0 || r.status >= 400) this.log.warn({ schedule: i, device: s.device, action: s.action, status: r.status }, 'scheduled job failed');
  }

  close(): void {
    this.stop();
    this.loopback.close();
  }
}
