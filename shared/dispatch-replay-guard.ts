// A board executes a dispatch frame only once: ids increase per master term, so a window of
// recent ids per (master, term) bounds what must be remembered.

export interface DispatchIdentity {
  readonly master: number;
  readonly term: number;
  readonly id: number;
}

/** Remembers recent dispatch ids per master term; ids are increasing, so a window bounds it. */
export class DispatchReplayGuard {
  private readonly seen = new Map<string, { maxId: number; ids: Set<number> }>();
  constructor(
    private readonly window: number,
    private readonly mastersMax = 16,
  ) {}

  accept(d: DispatchIdentity): boolean {
    const key = `${d.master}.${d.term}`;
    let s = this.seen.get(key);
    if (!s) {
      if (this.seen.size >= this.mastersMax) this.seen.delete(this.seen.keys().next().value!);
      s = { maxId: 0, ids: new Set() };
      this.seen.set(key, s);
    }
    if (d.id <= s.maxId - this.window || s.ids.has(d.id)) return false;
    s.ids.add(d.id);
    if (d.id > s.maxId) s.maxId = d.id;
    if (s.ids.size > 2 * this.window) for (const id of s.ids) if (id <= s.maxId - this.window) s.ids.delete(id);
    return true;
  }
}
