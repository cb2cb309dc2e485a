// Paper 000's reserve queue: arrivals admission control holds back wait here, per class, oldest
// first, bounded in total. Each period they top up the class queue before new arrivals, and those
// that waited too many periods are refused explicitly. Pure: periods are numbers.
export class ReserveQueue<J extends { readonly cls: number; reservedAt: number }> {
  private readonly q: J[][];
  private held = 0;

  constructor(
    classes: number,
    private readonly max: number,
  ) {
    this.q = Array.from({ length: classes }, () => []);
  }

  get size(): number {
    return this.held;
  }
  lengths(): number[] {
    return this.q.map((r) => r.length);
  }

  /** False when the reserve is full (the caller refuses the job). */
  add(job: J, period: number): boolean {
    if (this.held >= this.max) return false;
    job.reservedAt = period;
    this.q[job.cls]!.push(job);
    this.held++;
    return true;
  }

  remove(job: J): boolean {
    const r = this.q[job.cls]!;
    const i = r.indexOf(job);
    if (i < 0) return false;
    r.splice(i, 1);
    this.held--;
    return true;
  }

  /** Offers up to `n` of class `cls`, oldest first, to `admit`; stops at the first refused. Returns how many went. */
  release(cls: number, n: number, admit: (job: J) => boolean): number {
    const r = this.q[cls]!;
    let k = 0;
    while (k < n && r.length > 0 && admit(r[0]!)) {
      r.shift();
      this.held--;
      k++;
    }
    return k;
  }

  /** Removes and returns the jobs of class `cls` that have waited `after` periods or more. */
  stale(cls: number, period: number, after: number): J[] {
    const r = this.q[cls]!;
    const out: J[] = [];
    while (r.length > 0 && period - r[0]!.reservedAt >= after) out.push(r.shift()!);
    this.held -= out.length;
    return out;
  }

  drain(): J[] {
    const all = this.q.flatMap((r) => r.splice(0));
    this.held = 0;
    return all;
  }
}
