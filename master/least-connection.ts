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
