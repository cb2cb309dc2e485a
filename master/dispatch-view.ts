// The state table as dispatch sees it at `nowMs`: a board silent for Tthreshold is down even
// before the cluster core's next tick says so, and a drained board is up but takes no new work
// (to dispatch it is as good as joining, 0). Methods, not closures made per dispatch core: a
// takeover builds a new core, and the least-connected pick, the reserve and the reachability test
// then call the same functions as before (V8 keeps the code it compiled for them, on a node's
// rehearsal or on an earlier term as master). Pure: the table is read, never changed.
import type { StateTable } from '../shared/state-table.ts';
import type { BoardLoadView } from './least-connection.ts';
import type { BoardReach } from './unreachable.ts';

export class DispatchView implements BoardLoadView, BoardReach {
  readonly n: number;
  /** The time the view is read at (the core sets it on each event). */
  nowMs = 0;

  constructor(
    private readonly table: StateTable,
    /** This board (the master): it hears itself without packets. */
    private readonly self: number,
    /** cluster.tthresholdMs. */
    private readonly silentMs: number,
  ) {
    this.n = table.n;
  }

  linknum(i: number): number {
    return this.table.linknum(i);
  }

  runstate(i: number): number {
    return this.down(i) ? -1 : this.table.drained(i) ? 0 : this.table.runstate(i);
  }

  down(i: number): boolean {
    return i !== this.self && (this.nowMs - this.table.lastHeard(i) > this.silentMs || this.table.runstate(i) === -1);
  }

  drained(i: number): boolean {
    return this.table.drained(i);
  }
}
