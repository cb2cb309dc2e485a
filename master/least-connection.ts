// The paper's dispatch rule: the running board with the smallest linknum.
// Ties go to the first such board after the previous pick in ring order, so equal boards share
// work evenly and the choice is a pure function of (table, previous pick).

export interface BoardLoadView {
  readonly n: number;
  linknum(i: number): number;
  runstate(i: number): number;
}

/**
 * @param candidates boards allowed to serve (undefined = all)
 * @param capacity   a board with linknum >= capacity takes no more
 * @param after      the previous pick (-1 for none)
 */
export function leastConnection(view: BoardLoadView, capacity: number, after: number, candidates?: readonly number[]): number | undefined {
  let best: number | undefined;
  let bestLoad = Infinity;
  for (let k = 1; k <= view.n; k++) {
    const i = (((after + k) % view.n) + view.n) % view.n;
    if (view.runstate(i) !== 1) continue;
    if (candidates && !candidates.includes(i)) continue;
    const load = view.linknum(i);
    if (load < capacity && load < bestLoad) {
      best = i;
      bestLoad = load;
    }
  }
  return best;
}

/**
 * Where the master's own board fits in (cluster.masterWork): `share`, it is a board like the
 * others; `spill`, the other boards first and the master only when none of them has room;
 * `forward`, never while another board could serve. Pure: the view is read, never changed.
 */
export class MasterWork {
  private readonly spill: boolean;
  private readonly forwardOnly: boolean;
  private readonly others: readonly number[];

  constructor(
    private readonly view: BoardLoadView,
    private readonly self: number,
    mode: 'share' | 'spill' | 'forward',
    boards: number,
  ) {
    this.spill = mode !== 'share' && boards > 1;
    this.forwardOnly = mode === 'forward';
    this.others = Array.from({ length: boards }, (_, i) => i).filter((i) => i !== self);
  }

  /** The board for a job allowed on `pool` (undefined: any), at `cap` in flight per board, after the previous pick. */
  pick(pool: readonly number[] | undefined, cap: number, after: number): number | undefined {
    const b = this.spill ? leastConnection(this.view, cap, after, pool ? pool.filter((i) => i !== this.self) : this.others) : undefined;
    if (b !== undefined || (this.forwardOnly && this.othersCanServe(pool))) return b;
    return leastConnection(this.view, cap, after, pool);
  }

  /** Whether board i's slots count as the cluster's serving capacity: the master's do unless it only forwards while another board runs. */
  mayServe(i: number): boolean {
    return i !== this.self || !this.forwardOnly || !this.othersCanServe(undefined);
  }

  /** Whether a board other than the master is running and may serve (it may be full right now). */
  private othersCanServe(pool: readonly number[] | undefined): boolean {
    for (const i of pool ?? this.others) if (i !== this.self && this.view.runstate(i) === 1) return true;
    return false;
  }
}
