// The mirror's copy of the table: each dispatch and completion counted in it is told to the plane
// (soon). It calls a method of its listener (the mirror), not a closure made per mirror, so code V8
// optimized for one mirror's table (a node's rehearsal of the master's path) holds for another's
// (the live one).
import { StateTable } from '../../shared/state-table.ts';

/** Who hears of each count. */
export interface CountListener {
  counted(): void;
}

export class CountedTable extends StateTable {
  constructor(
    n: number,
    private readonly listener: CountListener,
  ) {
    super(n);
  }
  override dispatched(i: number): void {
    super.dispatched(i);
    this.listener.counted();
  }
  override completed(i: number): void {
    super.completed(i);
    this.listener.counted();
  }
}
