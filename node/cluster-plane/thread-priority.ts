// The cluster plane's beat before the request work: on Linux every thread has its own nice value
// (setpriority on a thread id), so the plane's thread keeps the board's default while every
// other thread of the process (the request thread, V8's and libuv's helpers, and what they start
// later: they inherit it) runs REQUEST_NICE_STEP levels nicer. The plane wants a few hundred µs
// per heartbeat; at the front of its CPU's queue it gets them as soon as the board's CPU allows
// (a cgroup quota spent, a saturated core), while the request work takes all the rest.
// Raising one's own nice needs no privilege; nothing here can lower one.
import { readdirSync, readlinkSync } from 'node:fs';
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
