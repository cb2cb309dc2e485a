// Whether a board runs a request frame the dispatch link brought, decided from the frame and what
// the board knows: it is addressed to this board and this boot, comes from the master this board
// follows (or a newer one), is not a replay, names a class the config has, and a canonical path.
// Pure, apart from the replay guard's memory of ids it is given.
import type { RequestFrame } from './dispatch-frame.ts';
import type { DispatchReplayGuard } from './dispatch-replay-guard.ts';
import { nonCanonical } from './request-target.ts';

export const FRAME_REFUSALS = ['target', 'old-boot', 'self', 'stale', 'replay', 'class', 'target-path'] as const;
export type FrameRefusal = (typeof FRAME_REFUSALS)[number];

export interface BoardView {
  readonly self: number;
  readonly bootEpoch: number;
  /** The term and master this board follows. */
  readonly term: number;
  readonly master: number;
  readonly classes: number;
}

/** Why the frame is refused, or undefined to run it. A frame that passes is remembered by the guard. */
export function frameRefusal(f: RequestFrame, b: BoardView, replay: DispatchReplayGuard): FrameRefusal | undefined {
  if (f.target !== b.self) return 'target';
  if (f.epoch < b.bootEpoch) return 'old-boot';
  if (f.master === b.self) return 'self';
  if (!(f.term > b.term || (f.term === b.term && f.master === b.master))) return 'stale';
  if (!replay.accept(f)) return 'replay';
  if (!Number.isInteger(f.cls) || f.cls < 0 || f.cls >= b.classes) return 'class';
  if (nonCanonical(f.url)) return 'target-path';
  return undefined;
}
