// The near match of a mistyped word among the ones accepted (a config key, a command): the
// closest by edit distance, when it is close enough to be what was meant. Pure.

/** Edit distance (a swap of two neighbours counts one), case-insensitive, stopping early past `max`. */
function distance(a: string, b: string, max: number): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  if (Math.abs(x.length - y.length) > max) return max + 1;
  let before: number[] = [];
  let prev = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const cur = [i];
    let best = i;
    for (let j = 1; j <= y.length; j++) {
      let v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && x[i - 1] === y[j - 2] && x[i - 2] === y[j - 1]) v = Math.min(v, before[j - 2]! + 1);
      cur.push(v);
      best = Math.min(best, v);
    }
    if (best > max) return max + 1;
    before = prev;
    prev = cur;
  }
  return prev[y.length]!;
}

/** The accepted word nearest `word`, if within a third of its length (at least 1, at most 3 edits). */
export function nearMatch(word: string, accepted: readonly string[]): string | undefined {
  const max = Math.min(3, Math.max(1, Math.floor(word.length / 3)));
  let best: string | undefined;
  let bestD = max + 1;
  for (const a of accepted) {
    const d = distance(word, a, max);
    if (d < bestD) {
      best = a;
      bestD = d;
    }
  }
  return best;
}
