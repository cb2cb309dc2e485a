// The cluster plane's beat before the request work: on Linux every thread has its own nice value
// (setpriority on a thread id), so the plane's thread keeps the board's default while every
// other thread of the process (the request thread, V8's and libuv's helpers, and what they start
// later: they inherit it) runs REQUEST_NICE_STEP levels nicer. The plane wants a few hundred µs
// per heartbeat; at the front of its CPU's queue it gets them as soon as the board's CPU allows
// (a cgroup quota spent, a saturated core), while the request work takes all the rest.
// Raising one's own nice needs no privilege; nothing here can lower one.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

export const REQUEST_NICE_STEP = 10;

/** The calling thread's OS id (Linux /proc/thread-self), or undefined elsewhere. */
export function ownThreadId(): number | undefined {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isInteger(tid) && tid > 0 ? tid : undefined;
  } catch {
    return undefined;
  }
}

/** Every thread of this process but `keep`, `step` nice levels nicer (at most 19). Returns how many were changed. */
export function favourThread(keep: number, step = REQUEST_NICE_STEP): number {
  let changed = 0;
  let tasks: string[];
  try {
    tasks = readdirSync('/proc/self/task');
  } catch {
    return 0;
  }
  for (const t of tasks) {
    const tid = Number(t);
    if (tid === keep) continue;
    try {
      setPriority(tid, Math.min(19, getPriority(tid) + step));
      changed++;
    } catch {
      // gone meanwhile, or not ours to change
    }
  }
  return changed;
}

/**
 * The CPU quota of the cgroup `cgroupText` (/proc/self/cgroup) names, in cores: v1's
 * cpu.cfs_quota_us / cpu.cfs_period_us or v2's cpu.max; undefined when unlimited or unknown.
 * `read` returns a file's text or undefined.
 */
export function quotaCores(cgroupText: string, read: (path: string) => string | undefined): number | undefined {
  for (const line of cgroupText.split('\n')) {
    const first = line.indexOf(':');
    const second = line.indexOf(':', first + 1);
    if (first < 0 || second < 0) continue;
    const controllers = line.slice(first + 1, second);
    const path = line.slice(second + 1);
    if (controllers === '') {
      const max = read(`/sys/fs/cgroup${path}/cpu.max`)?.trim().split(/\s+/);
      if (max && max[0] !== 'max' && Number(max[1]) > 0) return Number(max[0]) / Number(max[1]);
    } else if (controllers.split(',').includes('cpu')) {
      for (const root of ['/sys/fs/cgroup/cpu', '/sys/fs/cgroup/cpu,cpuacct']) {
        const quota = Number(read(`${root}${path}/cpu.cfs_quota_us`));
        const period = Number(read(`${root}${path}/cpu.cfs_period_us`));
        if (quota > 0 && period > 0) return quota / period;
      }
    }
  }
  return undefined;
}

const readText = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

/** This process's CPU quota in cores, or undefined (no quota, or no way to tell). */
export function ownQuotaCores(): number | undefined {
  const text = readText('/proc/self/cgroup');
  return text === undefined ? undefined : quotaCores(text, readText);
}

/**
 * Keep every thread of this process on the CPU it runs on now (util-linux `taskset`; threads
 * started later inherit it). Under a quota below one core spread over several CPUs, the kernel
 * hands the group's runtime to each CPU in slices, so the plane's CPU can go without any while
 * threads on another spend the quota: on one CPU, the plane's priority decides. Returns the CPU,
 * or undefined if it could not.
 */
export function keepOnOneCpu(): number | undefined {
  const stat = readText('/proc/self/stat');
  const cpu = stat === undefined ? Number.NaN : Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[36]);
  if (!Number.isInteger(cpu) || cpu < 0) return undefined;
  const r = spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(process.pid)], { stdio: 'ignore', timeout: 2000 });
  return r.status === 0 ? cpu : undefined;
}
