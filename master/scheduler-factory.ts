// The scheduler a config asks for.
import type { Config } from '../shared/config.ts';
import { DwfsScheduler } from './qos/dwfs.ts';
import { FpdScheduler } from './qos/fpd.ts';
import { WeaklyHardScheduler } from './qos/weakly-hard.ts';
import { createScheduler, type QueueItem, type Scheduler, type SchedulerLimits } from './scheduler.ts';

export function schedulerFor<T extends QueueItem>(cfg: Config, limits: SchedulerLimits): Scheduler<T> {
  const cls = cfg.classes;
  switch (cfg.qos.scheduler) {
    case 'dwfs':
      return new DwfsScheduler<T>(cls, limits, {
        weights: cls.map((c) => c.weight),
        beta: cfg.qos.dwfsBeta,
        periodMs: cfg.qos.periodMs,
        C2: cfg.boards.length * cfg.limits.inFlightPerBoardMax,
        initialServiceMs: 100,
      });
    case 'fpd':
      return new FpdScheduler<T>(
        cls,
        limits,
        cls.map((c) => c.share),
        cfg.qos.historyK,
      );
    case 'weakly-hard':
      return new WeaklyHardScheduler<T>(
        cls,
        limits,
        cls.map((c) => c.mk ?? { m: 0, k: 1 }),
        cls.map((c) => c.share),
        cfg.qos.historyK,
        cls.map((c) => c.setQoS),
      );
    default:
      return createScheduler<T>(cfg.qos.scheduler, cls, limits);
  }
}
