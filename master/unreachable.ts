// Whether a job bound to some boards (a device's, a program's) can reach none of them now: every
// one is down, or drained for maintenance by an admin. Answered at once, not queued to its
// deadline. Pure.
import type { ErrorCode } from '../shared/errors.ts';

/** What the test reads of each board. */
export interface BoardReach {
  down(board: number): boolean;
  drained(board: number): boolean;
}

/** `ids`: each board's id, by index (for the message). */
export function unreachable(candidates: readonly number[] | undefined, reach: BoardReach, ids: readonly string[]): { code: ErrorCode; message: string } | undefined {
  if (!candidates || candidates.length === 0 || !candidates.every((b) => reach.down(b) || reach.drained(b))) return undefined;
  const names = (bs: readonly number[]) => bs.map((b) => ids[b]).join(', ');
  const inMaintenance = candidates.filter((b) => reach.drained(b) && !reach.down(b));
  if (inMaintenance.length === 0) return { code: 'DEVICE_UNREACHABLE', message: `every board it is attached to is down (${names(candidates)})` };
  const gone = candidates.filter((b) => reach.down(b));
  return { code: 'MAINTENANCE', message: `every board it can run on is drained for maintenance (${names(inMaintenance)})${gone.length ? ` or down (${names(gone)})` : ''}` };
}
