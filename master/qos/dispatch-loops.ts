// The two QoS feedback loops that act at dispatch time, each period: content adaptation (paper
// 000: the content level G from the measured utilization U) and per-class worker quotas (paper
// 003: slots from the mean response time per class). The dispatch core asks them, per job, which
// content tree to serve and whether a class may take another slot.
import type { Config } from '../../shared/config.ts';
import { TREES } from '../../shared/content-levels.ts';
import { LoadMonitor, treeFor, UtilizationController } from './adaptation.ts';
import { QuotaController } from './quota.ts';

export class DispatchLoops {
  private readonly adapt: { monitor: LoadMonitor; ctl: UtilizationController; U: number } | undefined;
  private readonly quota: QuotaController | undefined;
  private readonly respSum: number[];
  private readonly respCount: number[];

  constructor(private readonly cfg: Config) {
    const q = cfg.qos;
    this.respSum = cfg.classes.map(() => 0);
    this.respCount = cfg.classes.map(() => 0);
    if (q.adaptation) this.adapt = { monitor: new LoadMonitor(), ctl: new UtilizationController(TREES, q.adaptation.targetUtilization, q.adaptation.k), U: 0 };
    if (q.quota)
      this.quota = new QuotaController(
        cfg.classes.map((c) => ({ targetMs: c.targetMs, priority: c.priority })),
        cfg.boards.length * cfg.limits.inFlightPerBoardMax,
        q.quota.gain,
      );
  }

  get active(): boolean {
    return !!(this.adapt || this.quota);
  }

  /** An answer went out: its size (utilization) and its response time (quotas). */
  record(cls: number, responseMs: number, answerBytes: number): void {
    this.respSum[cls]! += responseMs;
    this.respCount[cls]!++;
    this.adapt?.monitor.record(answerBytes);
  }

  /** One control period of both loops. */
  period(): void {
    if (this.adapt) {
      const a = this.cfg.qos.adaptation!;
      this.adapt.U = this.adapt.monitor.take(this.cfg.qos.periodMs, a.a, a.b).U;
      this.adapt.ctl.step(this.adapt.U);
    }
    if (this.quota) {
      this.quota.period(this.respCount.map((n, i) => (n > 0 ? this.respSum[i]! / n : undefined)));
      this.respSum.fill(0);
      this.respCount.fill(0);
    }
  }

  /** The content tree for a job: pages adapt to load by client; device control never does. 0: shed. */
  tree(page: boolean, client: string): number {
    return this.adapt && page ? treeFor(this.adapt.ctl.G, client, TREES) : TREES;
  }

  /** Whether class `cls`, with `inflight` running, may take another slot. */
  canRun(cls: number, inflight: number): boolean {
    return !this.quota || this.quota.canRun(cls, inflight);
  }

  state(): Record<string, unknown> {
    return { ...(this.adapt ? { G: +this.adapt.ctl.G.toFixed(3), U: +this.adapt.U.toFixed(3) } : {}), ...(this.quota ? { quotas: [...this.quota.quotas] } : {}) };
  }
}
