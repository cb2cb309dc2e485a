// What the dispatch link keeps by frame id while a request is out: a master's waiters for their
// answers, a board's running requests. An open-addressing table over two arrays made once, not a
// Map with an entry per request: a long-lived Map's hash table sits in V8's old space, its
// successors are made there too, and every table it outgrows keeps the entries it held until the
// next full collection, so the young requests they point to are promoted with everything they
// reach (docs/design.md, "No Map entry per request"). Here a freed slot is cleared at once, and the
// arrays are replaced only when the table grows, which a bounded link does a few times at most.
// Linear probing with backward-shift deletion (no tombstones). Ids are integers in [0, 2^32).

const EMPTY = -1;

export class IdTable<V> {
  private ids: Float64Array;
  private values: (V | undefined)[];
  private mask: number;
  private count = 0;

  /** `capacity`: slots to begin with (rounded up to a power of two); the table doubles when half full. */
  constructor(capacity = 32) {
    let n = 8;
    while (n < capacity) n *= 2;
    this.ids = new Float64Array(n).fill(EMPTY);
    this.values = new Array<V | undefined>(n).fill(undefined);
    this.mask = n - 1;
  }

  get size(): number {
    return this.count;
  }

  has(id: number): boolean {
    return this.slot(id) >= 0;
  }

  get(id: number): V | undefined {
    const i = this.slot(id);
    return i < 0 ? undefined : this.values[i];
  }

  /** Add or replace the value of `id`. */
  set(id: number, value: V): void {
    if (!(Number.isInteger(id) && id >= 0 && id <= 0xffffffff)) throw new RangeError(`id-table: ${id} is not an id`);
    let i = id & this.mask;
    for (; this.ids[i] !== EMPTY; i = (i + 1) & this.mask) {
      if (this.ids[i] === id) {
        this.values[i] = value;
        return;
      }
    }
    if (2 * (this.count + 1) > this.ids.length) {
      this.grow();
      this.set(id, value);
      return;
    }
    this.ids[i] = id;
    this.values[i] = value;
    this.count++;
  }

  /** Whether `id` was there; its slot is cleared, and the run after it closes up behind it. */
  delete(id: number): boolean {
    let i = this.slot(id);
    if (i < 0) return false;
    this.count--;
    for (let j = (i + 1) & this.mask; this.ids[j] !== EMPTY; j = (j + 1) & this.mask) {
      // The entry at j stays unless its home slot lies cyclically outside (i, j].
      const home = this.ids[j]! & this.mask;
      if (i <= j ? i < home && home <= j : i < home || home <= j) continue;
      this.ids[i] = this.ids[j]!;
      this.values[i] = this.values[j];
      i = j;
    }
    this.ids[i] = EMPTY;
    this.values[i] = undefined;
    return true;
  }

  /** The values held, in no particular order (a copy). */
  all(): V[] {
    const out: V[] = [];
    for (let i = 0; i < this.ids.length; i++) if (this.ids[i] !== EMPTY) out.push(this.values[i] as V);
    return out;
  }

  clear(): void {
    this.ids.fill(EMPTY);
    this.values.fill(undefined);
    this.count = 0;
  }

  private slot(id: number): number {
    for (let i = id & this.mask; this.ids[i] !== EMPTY; i = (i + 1) & this.mask) if (this.ids[i] === id) return i;
    return -1;
  }

  private grow(): void {
    const ids = this.ids;
    const values = this.values;
    this.ids = new Float64Array(ids.length * 2).fill(EMPTY);
    this.values = new Array<V | undefined>(ids.length * 2).fill(undefined);
    this.mask = ids.length * 2 - 1;
    this.count = 0;
    for (let i = 0; i < ids.length; i++) if (ids[i] !== EMPTY) this.set(ids[i]!, values[i] as V);
  }
}
