// The paper's state table (linknum[], runstate[]) as the master keeps it, plus what it needs to
// keep it honest: its own dispatch count per board, the load each board last reported, and when
// it last heard from each board. Pure and synchronous.
import type { RunState, StateBody } from './protocol.ts';

export class StateTable {
  readonly n: number;
  private readonly runstates: RunState[];
  /** Requests this board (as master) dispatched to board i and has not seen complete. */
  private readonly own: number[];
  /** Board i's own count of requests it is executing, from its last ACK/REPORT. */
  private readonly reported: number[];
  private readonly heard: number[];
  /** Boards an admin drained: no new work until undrained; kept across their restarts and handed on with the table. */
  private readonly drainedFlags: boolean[];

  constructor(n: number) {
    if (!Number.isInteger(n) || n < 1 || n > 255) throw new Error(`board count out of range: ${n}`);
    this.n = n;
    this.runstates = new Array<RunState>(n).fill(0);
    this.own = new Array<number>(n).fill(0);
    this.reported = new Array<number>(n).fill(0);
    this.heard = new Array<number>(n).fill(0);
    this.drainedFlags = new Array<boolean>(n).fill(false);
  }

  /**
   * linknum[i]: connections on board i. The master's own count is exact for what it dispatched;
   * a board's report also covers work it got from a previous master. The larger is the truth.
   */
  linknum(i: number): number {
    return Math.max(this.own[i]!, this.reported[i]!);
  }
  runstate(i: number): RunState {
    return this.runstates[i]!;
  }
  drained(i: number): boolean {
    return this.drainedFlags[i]!;
  }
  /** Drain (true) or undrain board i; whether that changed anything. */
  setDrained(i: number, on: boolean): boolean {
    if (i < 0 || i >= this.n) throw new Error(`invariant: no board ${i}`);
    const was = this.drainedFlags[i];
    this.drainedFlags[i] = on;
    return was !== on;
  }
  lastHeard(i: number): number {
    return this.heard[i]!;
  }
  ownCount(i: number): number {
    return this.own[i]!;
  }

  /** Boards counted as running. */
  support(): number {
    let n = 0;
    for (const rs of this.runstates) if (rs === 1) n++;
    return n;
  }

  dispatched(i: number): void {
    this.own[i]!++;
  }
  completed(i: number): void {
    if (this.own[i]! <= 0) throw new Error(`invariant: completion on board ${i} with no dispatch outstanding`);
    this.own[i]!--;
  }
  /** Returns true if the visible table changed. */
  report(i: number, load: number, nowMs: number): boolean {
    // Heard never moves back: a late-passed observation does not undo a packet read since.
    this.heard[i] = Math.max(this.heard[i]!, nowMs);
    if (this.runstates[i] === -1) return false; // a dead board must JOIN to come back
    const before = this.linknum(i);
    this.reported[i] = load;
    const wasJoining = this.runstates[i] === 0;
    return before !== this.linknum(i) || wasJoining;
  }
  /** The master's own executing count: it knows it without a packet. */
  reportSelf(i: number, load: number): void {
    this.reported[i] = load;
  }
  heardFrom(i: number, nowMs: number): void {
    this.heard[i] = nowMs;
  }
  /** JOIN: runstate 1, linknum 0 (the paper's rule 6). */
  join(i: number, nowMs: number): void {
    this.runstates[i] = 1;
    this.reported[i] = 0;
    this.heard[i] = nowMs;
  }
  setRunstate(i: number, rs: RunState): void {
    this.runstates[i] = rs;
    if (rs === -1) this.reported[i] = 0;
  }
  /** Boards silent longer than thresholdMs become -1. Returns the boards that just died. */
  expire(nowMs: number, thresholdMs: number, self: number): number[] {
    const died: number[] = [];
    for (let i = 0; i < this.n; i++) {
      if (i === self || this.runstates[i] === -1) continue;
      if (nowMs - this.heard[i]! > thresholdMs) {
        this.setRunstate(i, -1);
        died.push(i);
      }
    }
    return died;
  }

  /** The master's own dispatch counts (what the request thread tells the cluster plane). */
  ownCounts(): number[] {
    return [...this.own];
  }
  setOwnCounts(own: readonly number[]): void {
    for (let i = 0; i < this.n; i++) this.own[i] = Math.max(0, own[i] ?? 0);
  }
  /** The membership and reported load of another copy of the table (the cluster plane's); own counts stay. */
  adopt(runstates: readonly RunState[], reported: readonly number[], heard: readonly number[], drained: readonly boolean[] = []): void {
    for (let i = 0; i < this.n; i++) {
      this.runstates[i] = runstates[i] ?? 0;
      this.reported[i] = reported[i] ?? 0;
      this.heard[i] = heard[i] ?? 0;
      this.drainedFlags[i] = drained[i] ?? false;
    }
  }
  /** What adopt() takes. */
  membership(): { runstates: RunState[]; reported: number[]; heard: number[] } {
    return { runstates: [...this.runstates], reported: [...this.reported], heard: [...this.heard] };
  }

  /**
   * Take over a table heard from the previous master; its linknums become reported load.
   * `planned`: the previous master handed over and is alive: its running boards (itself too) stay running.
   */
  inherit(body: StateBody | undefined, self: number, oldMaster: number, nowMs: number, planned = false): void {
    for (let i = 0; i < this.n; i++) {
      this.heard[i] = nowMs; // everyone gets a full Tthreshold of grace from the takeover
      if (body) {
        // Trust only what we hear ourselves: a board the old master counted as running is
        // unconfirmed (0) until it reports to us; its linknum stays as an estimate of its load.
        this.runstates[i] = body.runstate[i] === -1 ? -1 : planned ? body.runstate[i]! : 0;
        this.reported[i] = body.runstate[i] === -1 ? 0 : body.linknum[i]!;
        // A drained board stays drained under the new master.
        this.drainedFlags[i] = body.drained?.[i] ?? false;
      } else if (this.runstates[i] === 1) {
        this.runstates[i] = 0;
      }
    }
    this.runstates[self] = 1;
    if (planned && oldMaster >= 0) this.runstates[oldMaster] = 1;
    else if (oldMaster >= 0 && oldMaster !== self) this.setRunstate(oldMaster, -1);
  }

  /** What a master broadcasts. */
  snapshot(master: number): StateBody {
    const linknum: number[] = [];
    for (let i = 0; i < this.n; i++) linknum.push(this.linknum(i));
    return { master, linknum, runstate: [...this.runstates], drained: [...this.drainedFlags] };
  }

  /** Invariants, checked by tests and the simulator. */
  check(): void {
    for (let i = 0; i < this.n; i++) {
      if (this.own[i]! < 0 || this.reported[i]! < 0) throw new Error(`invariant: negative linknum on board ${i}`);
    }
  }
}
