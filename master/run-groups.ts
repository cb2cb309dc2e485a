// Run groups: the jobs of one CGI program, at most `groupMax` of them running on a board at once
// (cgi.programs.NAME.concurrencyMax). The dispatch core asks which candidates have room, and
// says when a job of a group starts and ends on a board. Pure.

interface GroupJob {
  readonly group: string | undefined;
  readonly groupMax: number;
  readonly board: number;
}

export class RunGroups {
  /** Jobs of each group running on each board. */
  private readonly counts = new Map<string, number[]>();

  constructor(private readonly boards: number) {}

  /** The boards of `pool` running fewer than `max` of the group's jobs. */
  withRoom(group: string, max: number, pool: readonly number[]): readonly number[] {
    const c = this.counts.get(group);
    return c ? pool.filter((b) => c[b]! < max) : pool;
  }

  started(job: GroupJob): void {
    if (job.group !== undefined) this.of(job.group)[job.board]!++;
  }

  ended(job: GroupJob): void {
    if (job.group !== undefined) this.of(job.group)[job.board]!--;
  }

  /** Invariant: the counts are the running jobs', and none is over its bound. */
  check(running: Iterable<GroupJob>): void {
    const seen = new Map<string, number[]>();
    for (const j of running) {
      if (j.group === undefined) continue;
      const c = seen.get(j.group) ?? new Array<number>(this.boards).fill(0);
      seen.set(j.group, c);
      if (++c[j.board]! > j.groupMax) throw new Error(`invariant: run group ${j.group} has more than ${j.groupMax} running on board ${j.board}`);
    }
    for (const [g, c] of this.counts) if (c.some((n, b) => n !== (seen.get(g)?.[b] ?? 0))) throw new Error(`invariant: run group ${g} counts disagree with the running jobs`);
  }

  private of(group: string): number[] {
    const had = this.counts.get(group);
    if (had) return had;
    const c = new Array<number>(this.boards).fill(0);
    this.counts.set(group, c);
    return c;
  }
}
