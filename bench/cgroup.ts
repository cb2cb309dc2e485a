// Board-like CPUs for benchmarks: each process in its own cgroup (v1 `cpu` and `cpuacct`
// hierarchies) with a CFS quota, a fraction of one core. Root only; everything made is removed.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const CPU = '/sys/fs/cgroup/cpu';
const ACCT = '/sys/fs/cgroup/cpuacct';
/** The CFS period the groups use unless told otherwise. */
export const PERIOD_US = 100_000;

export interface CpuGroup {
  readonly name: string;
  readonly share: number;
  add(pid: number): void;
  /** CPU time used by everything in the group so far, in microseconds. */
  usageUs(): number;
  /** CFS periods so far in which the group used its whole quota and was stopped until the next. */
  throttledPeriods(): number;
  remove(): void;
}

export function cgroupsAvailable(): boolean {
  return existsSync(join(CPU, 'cpu.cfs_quota_us')) && existsSync(join(ACCT, 'cpuacct.usage'));
}

/** A group limited to `share` of one core (0.2 = 20 %), over CFS periods of `periodUs`. */
export function cpuGroup(name: string, share: number, periodUs = PERIOD_US): CpuGroup {
  const dirs = [join(CPU, 'ews-bench', name), join(ACCT, 'ews-bench', name)] as const;
  for (const d of dirs) mkdirSync(d, { recursive: true });
  writeFileSync(join(dirs[0], 'cpu.cfs_period_us'), String(periodUs));
  writeFileSync(join(dirs[0], 'cpu.cfs_quota_us'), String(Math.round(share * periodUs)));
  return {
    name,
    share,
    add(pid) {
      for (const d of dirs) writeFileSync(join(d, 'cgroup.procs'), String(pid));
    },
    usageUs() {
      return Number(readFileSync(join(dirs[1], 'cpuacct.usage'), 'utf8')) / 1000;
    },
    throttledPeriods() {
      const n = /^nr_throttled (\d+)$/m.exec(readFileSync(join(dirs[0], 'cpu.stat'), 'utf8'))?.[1];
      if (n === undefined) throw new Error(`${dirs[0]}/cpu.stat has no nr_throttled`);
      return Number(n);
    },
    remove() {
      for (const [root, d] of [
        [CPU, dirs[0]],
        [ACCT, dirs[1]],
      ] as const) {
        // Processes still inside go back to the root group first.
        for (const pid of readFileSync(join(d, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
          try {
            writeFileSync(join(root, 'cgroup.procs'), pid);
          } catch {
            /* it exited meanwhile */
          }
        }
        try {
          rmdirSync(d);
        } catch {
          /* still busy: left for the next run, which reuses it */
        }
      }
    },
  };
}
