// What a new config changes on a board, and how it is applied: the sections a running board
// takes live, and the ones it takes only by a restart (its sockets, the cluster's shape, the
// limits its buffers were sized by). Pure: the master plans a push with it, each board decides
// with it again.
import type { Config } from './config-types.ts';

/** Sections a running board swaps in place (see node/board.ts `reconfigure`). */
export const LIVE_SECTIONS = ['auth', 'classes', 'devices', 'alarms', 'schedules', 'notify', 'qos', 'upgrade'] as const;
/** Live sections the master's dispatch core was made from: it is made again when idle (a busy master hands the cluster on first). */
export const CORE_SECTIONS: readonly Section[] = ['classes', 'qos'];
/** Sections a board takes only when it starts: a push that changes one restarts the boards one at a time, the master last. */
export const RESTART_SECTIONS = ['cluster', 'boards', 'limits', 'history', 'cgi', 'mqtt', 'stateDir', 'tls', 'benchmarkHandlers', 'gateway'] as const;

export type Section = (typeof LIVE_SECTIONS)[number] | (typeof RESTART_SECTIONS)[number];

export interface ConfigPlan {
  /** Every section that differs. */
  changed: Section[];
  /** The changed sections (or parts of them) that need a restart; empty: the whole change is live. */
  restart: string[];
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** The plan from `prev` to `next` (both validated). */
export function configPlan(prev: Config, next: Config): ConfigPlan {
  const changed: Section[] = [];
  const restart: string[] = [];
  for (const s of [...LIVE_SECTIONS, ...RESTART_SECTIONS]) {
    if (same(prev[s], next[s])) continue;
    changed.push(s);
    if ((RESTART_SECTIONS as readonly string[]).includes(s)) restart.push(s);
  }
  // Within the live sections, what a running board still cannot change.
  if (prev.auth?.disabled !== next.auth?.disabled) restart.push('auth.disabled');
  if (
    !same(
      prev.classes.map((c) => c.name),
      next.classes.map((c) => c.name),
    )
  )
    restart.push('classes (the set of names: the queues are made per class)');
  if ((prev.notify === undefined) !== (next.notify === undefined)) restart.push('notify (turned on or off)');
  return { changed, restart };
}
