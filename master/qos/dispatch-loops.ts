// The two QoS feedback loops that act at dispatch time, each period: content adaptation (paper
// 000: the content level G from the measured utilization U) and per-class worker quotas (paper
// 003: slots from the mean response time per class). The dispatch core asks them, per job, which
// content level to serve and whether a class may take another slot.
import type { Config } from '../../shared/config.ts';
import { CONTENT_LEVELS } from '../../shared/content-levels.ts';
import { LoadMonitor, levelFor, UtilizationController } from './adaptation.ts';
import { QuotaController } from './quota.ts';

export class DispatchLoops {
  private readonly adapt: { monitor: LoadMonitor; ctl: UtilizationController; U: number } | undefined;
  private readonly quota: QuotaController | undefined;

  constructor(private readonly cfg: Config) {
    const q = cfg.qos;
    if (q.adaptation) this.adapt = { monitor: new LoadMonitor(), ctl: new UtilizationController(CONTENT_LEVELS, q.adaptation.targetUtilization, q.adaptation.k), U: 0 };
    // The slots to divide are the ones that run work: with masterWork 'forward' the master runs none.
    const workers = cfg.cluster.masterWork === 'forward' && cfg.boards.length > 1 ? cfg.boards.length - 1 : cfg.boards.length;
    if (q.quota)
      this.quota = new QuotaController(
        cfg.classes.map((c) => ({ targetMs: c.targetMs, priority: c.priority })),
        Math.max(cfg.classes.length, workers * cfg.limits.inFlightPerBoardMax),
        q.quota.gain,
      );
  }

  get active(): boolean {
    return !!(this.adapt || this.quota);
  }

  /** An answer went out: its size (utilization). */
  answered(answerBytes: number): void {
    this.adapt?.monitor.record(answerBytes);
  }

  /**
   * One control period of both loops. Per class: how long its newest queued job has waited, how
   * many wait, and the recent service time. The quota loop's wait per class is what its queue
   * says now: the wait its last job in line will have had when served (its age so far + queued ×
   * service / slots); nothing queued is no wait. (The paper averages the
   * response times of the period's completions: that lags a whole period, and a batch is over
   * before it tells; after a queue drains it still reports the old waits and takes slots again.)
   */
  period(queues: { newestWaitMs: ReadonlyArray<number | undefined>; queued: readonly number[]; serviceMs: ArrayLike<number> } = { newestWaitMs: [], queued: [], serviceMs: [] }): void {
    if (this.adapt) {
      const a = this.cfg.qos.adaptation!;
      this.adapt.U = this.adapt.monitor.take(this.cfg.qos.periodMs, a.a, a.b).U;
      this.adapt.ctl.step(this.adapt.U);
    }
    if (this.quota) {
      // The wait of the last job in line when it is served: its age so far (sunk) plus the queue
      // ahead of it at this class's slots (Little: for a steady queue the age is near 0).
      const quotas = this.quota.quotas;
      const sunk = this.cfg.classes.map((_, i) => ((queues.queued[i] ?? 0) === 0 ? 0 : (queues.newestWaitMs[i] ?? 0)));
      this.quota.period(
        this.cfg.classes.map((_, i) => ((queues.queued[i] ?? 0) === 0 ? 0 : sunk[i]! + (queues.queued[i]! * (queues.serviceMs[i] ?? 0)) / quotas[i]!)),
        sunk,
      );
    }
  }

  /** The content level for a job: pages adapt to load by client; device control never does. 0: shed. */
  level(page: boolean, client: string): number {
    return this.adapt && page ? levelFor(this.adapt.ctl.G, client, CONTENT_LEVELS) : CONTENT_LEVELS;
  }

  /** Whether class `cls`, with `inflight` running, may take another slot. */
  canRun(cls: number, inflight: number): boolean {
    return !this.quota || this.quota.canRun(cls, inflight);
  }

  state(): Record<string, unknown> {
    return { ...(this.adapt ? { G: +this.adapt.ctl.G.toFixed(3), U: +this.adapt.U.toFixed(3) } : {}), ...(this.quota ? { quotas: [...this.quota.quotas] } : {}) };
  }
}
