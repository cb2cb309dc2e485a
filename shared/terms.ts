// Terms and the ring of boards: which terms a board may claim, how far apart two boards are,
// and how much of the cluster a master's table holds. Pure.
import type { StateBody } from './protocol.ts';

/** Boards a master's table counts as running: how much of the cluster it holds. */
export const support = (body: StateBody): number => body.runstate.reduce<number>((n, rs) => n + (rs === 1 ? 1 : 0), 0);

/** The smallest term above `current` that belongs to board `self`: no two boards ever claim the same term. */
export function nextTerm(current: number, self: number, boards: number): number {
  const t = current + 1;
  return t + ((((self - t) % boards) + boards) % boards);
}

/** Steps from a's position to b's going round the ring of board indices. */
export function ringDistance(from: number, to: number, boards: number): number {
  return (((to - from) % boards) + boards) % boards;
}
