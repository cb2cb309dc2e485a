// Scheduled device jobs (node-cron). They run on the master only and enter through the master's
// own HTTP port, so they take the same queue, dispatch and idempotency path as a client's
// request; when mastership moves, the new master's schedules take over.
import { createTask, type ScheduledTask } from 'node-cron';
import type { Config } from '../shared/config.ts';
import type { Counter, Registry } from '../shared/metrics.ts';
import type { Logger } from './log.ts';
import type { Loopback } from './loopback.ts';

export class Schedules {
  private tasks: ScheduledTask[] = [];
  private readonly runs: Counter;

  constructor(
    private readonly cfg: Config,
    private readonly log: Logger,
    metrics: Registry,
    private readonly credentials: () => Record<string, string>,
    private readonly loopback: Loopback,
  ) {
    this.runs = metrics.counter('ews_schedule_runs_total', 'Scheduled jobs run by this board as master, by schedule and answer status');
  }

  get running(): boolean {
    return this.tasks.length > 0;
  }

  start(): void {
    if (this.running) return;
    this.tasks = this.cfg.schedules.map((s, i) => {
      const t = createTask(s.cron, (ctx) => this.fire(i, ctx.date), { name: `ews-${i}`, noOverlap: true, unref: true });
      void t.start();
      return t;
    });
    if (this.tasks.length > 0) this.log.info({ schedules: this.tasks.length }, 'schedules started');
  }

  stop(): void {
    for (const t of this.tasks) void t.destroy();
    if (this.tasks.length > 0) this.log.info('schedules stopped');
    this.tasks = [];
  }

  private async fire(i: number, at: Date): Promise<void> {
    const s = this.cfg.schedules[i]!;
    const path = `/cgi-bin/devices/${encodeURIComponent(s.device)}/${encodeURIComponent(s.action)}`;
    const headers: Record<string, string> = { 'x-ews-origin': 'schedule', ...this.credentials() };
    // An action gets a key per tick: if two masters overlap for a moment after a partition heals,
    // the device still runs it once.
    if (s.action !== 'read') headers['idempotency-key'] = `schedule-${i}-${Math.floor(at.getTime() / 1000)}`;
    const r = await this.loopback.post(path, s.value === undefined ? '' : JSON.stringify({ value: s.value }), headers, this.cfg.limits.requestTimeoutMs);
    this.runs.inc({ schedule: i, status: r.status });
    if (r.status === 0 || r.status >= 400) this.log.warn({ schedule: i, device: s.device, action: s.action, status: r.status }, 'scheduled job failed');
  }

  close(): void {
    this.stop();
    this.loopback.close();
  }
}
