// Scheduled device jobs (node-cron). They run on the master only and enter through the master's
// own HTTP port, so they take the same queue, dispatch and idempotency path as a client's
// request; when mastership moves, the new master's schedules take over.
import http from 'node:http';
import { createTask, type ScheduledTask } from 'node-cron';
import type { BoardConfig, Config } from '../shared/config.ts';
import type { Logger } from '../shared/log.ts';
import type { Counter, Registry } from '../shared/metrics.ts';

export class Schedules {
  private tasks: ScheduledTask[] = [];
  private readonly runs: Counter;
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

  constructor(private readonly cfg: Config, private readonly self: BoardConfig, private readonly log: Logger, metrics: Registry) {
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

  private fire(i: number, at: Date): Promise<void> {
    const s = this.cfg.schedules[i]!;
    const path = `/cgi-bin/devices/${encodeURIComponent(s.device)}/${encodeURIComponent(s.action)}`;
    const body = s.value === undefined ? '' : JSON.stringify({ value: s.value });
    const headers: Record<string, string> = { 'x-ews-origin': 'schedule', 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
    // An action gets a key per tick: if two masters overlap for a moment after a partition heals,
    // the device still runs it once.
    if (s.action !== 'read') headers['idempotency-key'] = `schedule-${i}-${Math.floor(at.getTime() / 1000)}`;
    return new Promise((resolve) => {
      const req = http.request({ host: this.self.address, port: this.self.httpPort, method: 'POST', path, headers, agent: this.agent, timeout: this.cfg.limits.requestTimeoutMs }, (res) => {
        res.resume();
        res.on('end', () => {
          this.runs.inc({ schedule: i, status: res.statusCode ?? 0 });
          if ((res.statusCode ?? 500) >= 400) this.log.warn({ schedule: i, device: s.device, action: s.action, status: res.statusCode }, 'scheduled job failed');
          resolve();
        });
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (err) => {
        this.runs.inc({ schedule: i, status: 0 });
        this.log.warn({ schedule: i, err: err.message }, 'scheduled job failed');
        resolve();
      });
      req.end(body);
    });
  }

  close(): void {
    this.stop();
    this.agent.destroy();
  }
}
