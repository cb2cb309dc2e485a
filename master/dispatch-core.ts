// The master's dispatch core: every decision between a client request arriving and its answer
// going out, as a pure, clock-driven state machine (etcd raft style: events and time in, effects
// out). Admission (000), the class queues and their scheduler (001/002/004), per-class quotas
// (003), the least-connected board, the content level (000/002), the deadline prediction, the
// retry decision and the completion accounting all live here. No sockets, no timers, no Date:
// the adapter (node/http/intake.ts) carries requests and answers, and calls `tick` and `period`.
import type { Config } from '../shared/config.ts';
import { CONTENT_LEVELS } from '../shared/content-levels.ts';
import type { ErrorCode } from '../shared/errors.ts';
import { classAtRank } from '../shared/qos-config.ts';
import type { StateTable } from '../shared/state-table.ts';
import { DispatchView } from './dispatch-view.ts';
import { HighReserve } from './high-reserve.ts';
import { type Effect, type Job, type JobInfo, newJob, OUTCOMES, type OutcomeName } from './job.ts';
import { MasterWork } from './least-connection.ts';
import { LinkedQueue } from './linked-queue.ts';
import { AdmissionController } from './qos/admission.ts';
import { DispatchLoops } from './qos/dispatch-loops.ts';
import { ReserveQueue } from './qos/reserve-queue.ts';
import { RunGroups } from './run-groups.ts';
import type { Outcome, RunTest, Scheduler } from './scheduler.ts';
import { schedulerFor } from './scheduler-factory.ts';
import { ServiceTimes } from './service-time.ts';
import { StandingQueues } from './standing-queue.ts';
import { unreachable } from './unreachable.ts';

export { type Effect, type Job, type JobInfo, type JobState, OUTCOMES, type OutcomeName } from './job.ts';

/** Queue entries a scheduler looks at per class before giving up on that class. */
const SCAN_MAX = 16;

/** How often the master sweeps its queue for expired jobs and timed-out dispatches: a quarter of the shortest deadline, within 10-250 ms. */
export function dispatchTickMs(cfg: Config): number {
  return Math.max(10, Math.min(250, Math.min(...cfg.classes.map((c) => c.deadlineMs)) / 4));
}

export class DispatchCore<P> implements RunTest<Job<P>> {
  readonly scheduler: Scheduler<Job<P>>;
  private readonly reserve: ReserveQueue<Job<P>>;
  private readonly admission: AdmissionController | undefined;
  /** Content adaptation (000) and quotas (003); in flight per class (quota control). */
  private readonly loops: DispatchLoops;
  readonly inflight: number[];
  /** Recent service time per class (dispatch to answer): predicts whether a queued job can still make its deadline. */
  readonly service: ServiceTimes;
  /** Jobs running on boards, oldest first: the dispatch timeout sweep. A list through the jobs themselves, not a Map by id (docs/design.md, "No Map entry per request"). */
  private readonly running = new LinkedQueue<Job<P>>();
  private readonly firstCls: number;
  /** qos.highReserve, qos.highWaitMs and qos.paceFill: slots the other classes leave free while the first is active, and how fast they fill idle ones (its wakeAtMs: when to pump again though nothing else happens). */
  readonly highReserve: HighReserve;
  /** classes[].standingWaitMs: a request that waited that long in a standing queue is refused rather than served stale. */
  private readonly standing: StandingQueues;
  /** A CGI program's concurrencyMax per board. */
  private readonly groups: RunGroups;
  private readonly counts: Record<OutcomeName, number[]>;
  private nextId = 1;
  private lastPick = -1;
  private periodN = 0;
  private readonly all: readonly number[];
  /** The table as dispatch sees it (at the time of the event being handled). */
  private readonly view: DispatchView;
  private readonly masterWork: MasterWork;
  private readonly ids: readonly string[];

  constructor(
    private readonly cfg: Config,
    /** This board (the master): it hears itself without packets. */
    self: number,
    /** The cluster core's state table: runstate and reported load are its; dispatch counts are ours. */
    private readonly table: StateTable,
    rand: () => number,
  ) {
    this.view = new DispatchView(table, self, cfg.cluster.tthresholdMs);
    this.ids = cfg.boards.map((b) => b.id);
    this.masterWork = new MasterWork(this.view, self, cfg.cluster.masterWork, cfg.boards.length);
    const q = cfg.qos;
    this.scheduler = schedulerFor<Job<P>>(cfg, { queueBytesMax: cfg.limits.queueBytesMax, scanMax: SCAN_MAX });
    this.reserve = new ReserveQueue(cfg.classes.length, q.admission?.reserveMax ?? 0);
    this.inflight = cfg.classes.map(() => 0);
    this.service = new ServiceTimes(cfg.classes.length);
    this.counts = Object.fromEntries(OUTCOMES.map((o) => [o, cfg.classes.map(() => 0)])) as Record<OutcomeName, number[]>;
    this.all = cfg.boards.map((b) => b.index);
    this.groups = new RunGroups(cfg.boards.length);
    this.firstCls = classAtRank(cfg.classes, 'first');
    this.standing = new StandingQueues(cfg.classes, q.standingMs);
    this.highReserve = new HighReserve(q.highReserve, q.paceFill, cfg.limits.inFlightPerBoardMax, this.view, this.masterWork, q.highWaitMs, this.running, this.service.meanMs);
    if (q.admission) this.admission = new AdmissionController(cfg.classes.length, { ...q.admission, targetQueue: cfg.classes.map(() => q.admission!.targetQueue) }, rand);
    this.loops = new DispatchLoops(cfg);
  }

  /** Whether `period` must be called every qos.periodMs. */
  get periodic(): boolean {
    return !!(this.admission || this.loops.active || this.scheduler.periodic);
  }

  count(outcome: OutcomeName, cls: number): number {
    return this.counts[outcome][cls]!;
  }

  /** A client request arrives. The effects include its own dispatch or refusal when immediate. */
  submit(payload: P, info: JobInfo, nowMs: number): { job: Job<P>; effects: Effect<P>[] } {
    const job = newJob(payload, info, nowMs);
    if (job.cls === this.firstCls) this.highReserve.firstArrived(nowMs);
    return { job, effects: this.admit(job, nowMs) };
  }

  private admit(job: Job<P>, nowMs: number): Effect<P>[] {
    const out: Effect<P>[] = [];
    // A device whose every board is down (silent past Tthreshold, or gone): answered at once, not queued to its deadline.
    this.view.nowMs = nowMs;
    const none = unreachable(job.candidates, this.view, this.ids);
    if (none) return this.refuse(out, job, 'refused', none.code, none.message, none.code === 'MAINTENANCE' ? 30 : 2, nowMs);
    // Admission control (000): verified sessions pass; others with probability p up to target_in; the rest wait in the reserve queue.
    if (this.admission && this.admission.arrive(job.cls, job.session) === 'reserve') {
      if (!this.reserve.add(job, this.periodN)) return this.refuse(out, job, 'shed', 'QUEUE_FULL', 'the reserve queue is full', 1, nowMs);
      job.state = 'reserved';
      return out;
    }
    const r = this.scheduler.enqueue(job);
    if (r !== 'ok') return this.refuse(out, job, 'shed', 'QUEUE_FULL', r === 'class-full' ? `queue for class ${this.cfg.classes[job.cls]!.name} is full` : 'queued bytes at the limit', 1, nowMs);
    return this.pumpInto(out, nowMs);
  }

  /** The board's answer is complete (relayed to the client, or the client left meanwhile). */
  finished(job: Job<P>, answerBytes: number, nowMs: number): Effect<P>[] {
    if (job.state !== 'running') return [];
    this.release(job);
    const responseMs = nowMs - job.enqueuedMs;
    const served = nowMs - job.dispatchedMs;
    this.service.observe(job.cls, served);
    this.highReserve.served(served);
    this.loops.answered(answerBytes);
    this.counts.served[job.cls]!++;
    this.scheduler.completed(job, { responseMs, serviceMs: served, level: job.level, levels: CONTENT_LEVELS, deadlineMet: responseMs <= this.cfg.classes[job.cls]!.targetMs }, nowMs);
    return this.pumpInto([], nowMs);
  }

  /** The dispatch failed before an answer began (`delivered`: the board may have started it; `why`: what the link saw); a safe request, or one that never left, goes to another candidate while attempts remain. */
  failed(job: Job<P>, delivered: boolean, nowMs: number, why = ''): Effect<P>[] {
    if (job.state !== 'running') return [];
    const board = job.board;
    this.release(job);
    const out: Effect<P>[] = [];
    const pool = job.candidates ?? this.all;
    const retry = job.attempts < this.cfg.limits.dispatchAttemptsMax && job.tried.length + 1 < pool.length && (job.safe || !delivered);
    job.tried = [...job.tried, board];
    if (retry) {
      job.state = 'queued';
      if (this.scheduler.enqueue(job) === 'ok') return this.pumpInto(out, nowMs);
    }
    // Never delivered (or refused unrun): the cluster's own trouble, retryable (503). Delivered and lost: it may have run (502; a keyed retry is answered from its record).
    if (delivered) this.refuse(out, job, 'failed', 'BOARD_FAILED', `board ${this.cfg.boards[board]!.id} failed before answering${why && ` (${why})`}`, 1, nowMs);
    else this.refuse(out, job, 'failed', 'NO_BOARD', `board ${this.cfg.boards[board]!.id} did not take the request and no other could; it did not run: retry`, 1, nowMs);
    return this.pumpInto(out, nowMs);
  }

  /** The client went away. Queued: it leaves. Running: the slot stays taken until the board answers. */
  cancel(job: Job<P>): boolean {
    if (job.state === 'queued' && this.scheduler.remove(job)) return this.gone(job);
    if (job.state === 'reserved' && this.reserve.remove(job)) return this.gone(job);
    return false;
  }

  /** Time passes: queued jobs past their deadline and dispatches past the request timeout end. */
  tick(nowMs: number): Effect<P>[] {
    const out: Effect<P>[] = [];
    for (const job of this.scheduler.expire(nowMs)) {
      job.state = 'done';
      this.counts.expired[job.cls]!++;
      this.scheduler.completed(job, this.dropped(nowMs - job.enqueuedMs), nowMs);
      out.push({ kind: 'refuse', job, code: 'QUEUE_TIMEOUT', message: undefined, retryAfterS: 1 });
    }
    const limit = this.cfg.limits.requestTimeoutMs;
    for (let n = this.running.first(); n; ) {
      const job = n.value;
      if (nowMs - job.dispatchedMs < limit) break; // insertion order = dispatch order
      n = n.next; // read before release unlinks it
      this.release(job); // done, its slot freed (job.board stays)
      this.counts.timeout[job.cls]!++;
      this.scheduler.completed(job, this.dropped(nowMs - job.enqueuedMs), nowMs);
      out.push({ kind: 'refuse', job, code: 'DISPATCH_TIMEOUT', message: `board ${this.cfg.boards[job.board]!.id} did not answer in ${limit} ms`, retryAfterS: 1 });
    }
    return this.pumpInto(out, nowMs);
  }

  /** One control period of every QoS loop (every qos.periodMs). */
  period(nowMs: number): Effect<P>[] {
    this.periodN++;
    const out: Effect<P>[] = [];
    const { cfg } = this;
    if (this.admission) {
      const release = this.admission.period(
        cfg.classes.map((_, i) => this.scheduler.size(i)),
        this.reserve.lengths(),
      );
      const after = cfg.qos.admission!.refuseAfterPeriods;
      for (let cls = 0; cls < cfg.classes.length; cls++) {
        // The new period's budget serves the reserve first, oldest first; then the stale are refused.
        const n = this.reserve.release(cls, release[cls]!, (job) => {
          job.state = 'queued';
          if (this.scheduler.enqueue(job) === 'ok') return true;
          job.state = 'reserved';
          return false;
        });
        this.admission.admittedFromReserve(cls, release[cls]!, n);
        for (const job of this.reserve.stale(cls, this.periodN, after)) this.refuse(out, job, 'refused', 'QUEUE_FULL', `refused after ${after} periods in the reserve queue`, 2, nowMs);
      }
    }
    const newest = cfg.classes.map((_, i) => this.scheduler.newest(i));
    this.loops.period({ newestWaitMs: newest.map((at) => (at === undefined ? undefined : nowMs - at)), queued: cfg.classes.map((_, i) => this.scheduler.size(i)), serviceMs: this.service.meanMs });
    this.scheduler.tick(nowMs);
    return this.pumpInto(out, nowMs);
  }

  /** Dispatch while there is work and a board with room for it. */
  pump(nowMs: number): Effect<P>[] {
    return this.pumpInto([], nowMs);
  }

  /** Step-down: everything still waiting, in arrival order per class (handed to the new master). */
  drain(): Job<P>[] {
    const all = [...this.scheduler.drain(), ...this.reserve.drain()];
    for (const j of all) j.state = 'done';
    return all;
  }

  queued(cls?: number): number {
    return this.scheduler.size(cls);
  }

  /** Every controller's state, for /metrics, /api/stats and the UI. */
  qosState(): Record<string, unknown> {
    return {
      scheduler: this.cfg.qos.scheduler,
      ...this.scheduler.state(),
      ...(this.admission ? { admission: this.admission.state(), reserve: this.reserve.lengths() } : {}),
      ...this.loops.state(),
      inflight: [...this.inflight],
      ...this.highReserve.metrics(this.view.nowMs),
    };
  }

  /** Invariants (tests and the simulator call this). */
  check(): void {
    if (this.inflight.some((n) => n < 0)) throw new Error('invariant: negative in-flight count');
    const running = this.inflight.reduce((a, n) => a + n, 0);
    if (running !== this.running.size) throw new Error(`invariant: ${running} in flight by class, ${this.running.size} running`);
    this.groups.check(this.running.values());
  }

  // ---- internals: in a pass of pumpInto, the board the scheduler's test chose, and the board for any job per room (null: not looked for).
  private passChosen = -1;
  private passOpen: number | undefined | null = null;
  /** The scheduler's test: whether job `j` can start now (a method, so every core's scheduler calls the same function). */
  canRun(j: Job<P>): boolean {
    if (!this.loops.canRun(j.cls, this.inflight[j.cls]!)) return false;
    if (j.cls !== this.firstCls && !this.highReserve.allows(this.view.nowMs)) return false;
    const tried = j.tried.length > 0 ? this.candidates(j) : j.candidates;
    const pool = j.group === undefined ? tried : this.groups.withRoom(j.group, j.groupMax, tried ?? this.all);
    const b = pool === undefined && this.passOpen !== null ? this.passOpen : this.masterWork.pick(pool, this.cfg.limits.inFlightPerBoardMax, this.lastPick);
    if (pool === undefined) this.passOpen = b;
    if (b !== undefined) this.passChosen = b;
    return b !== undefined;
  }

  /** A planned handover: nothing new is dispatched before this time (what waits goes to the next master). */
  pausedUntilMs = -Infinity;

  private pumpInto(out: Effect<P>[], nowMs: number): Effect<P>[] {
    this.view.nowMs = nowMs;
    this.highReserve.wakeAtMs = undefined;
    if (nowMs < this.pausedUntilMs) return out;
    for (;;) {
      this.passOpen = null;
      const job = this.scheduler.take(nowMs, this);
      const chosen = this.passChosen;
      if (!job) {
        this.standing.observe(this.scheduler, nowMs);
        return out;
      }
      const waited = nowMs - job.enqueuedMs;
      const stale = this.standing.refusal(job.cls, waited, nowMs);
      if (stale !== undefined) {
        this.refuse(out, job, 'shed', 'OVERLOADED', stale, 1, nowMs);
        continue;
      }
      // It would likely finish after its class deadline (waited + recent service time and its spread): answer now, not spend a board on an answer its client will not wait for.
      // Unless the estimate alone is past the deadline and no job of the class is in service to renew it: it would refuse the class for good, so this job goes and tests it.
      const likely = this.service.likelyMs(job.cls);
      if (waited + likely > this.cfg.classes[job.cls]!.deadlineMs && (likely <= this.cfg.classes[job.cls]!.deadlineMs || this.inflight[job.cls]! > 0)) {
        this.refuse(out, job, 'expired', 'QUEUE_TIMEOUT', 'it could not be served within its deadline', 1, nowMs);
        continue;
      }
      // The content level: pages adapt to load by client; device control never does.
      const level = this.scheduler.protect(job.cls) ? CONTENT_LEVELS : this.loops.level(job.page, job.client);
      if (level === 0) {
        this.refuse(out, job, 'shed', 'OVERLOADED', undefined, 2, nowMs);
        continue;
      }
      this.lastPick = chosen;
      job.state = 'running';
      job.board = chosen;
      job.level = level;
      job.attempts++;
      job.dispatchedMs = nowMs;
      job.id = this.nextId;
      this.nextId = this.nextId >= 0xffffffff ? 1 : this.nextId + 1;
      this.inflight[job.cls]!++;
      this.table.dispatched(chosen);
      job.runEntry = this.running.push(job);
      this.groups.started(job);
      this.highReserve.started(job.cls === this.firstCls ? waited : undefined, nowMs);
      out.push({ kind: 'dispatch', job, board: chosen, id: job.id, level });
    }
  }

  private release(job: Job<P>): void {
    job.state = 'done';
    this.highReserve.freed();
    this.inflight[job.cls]!--;
    this.groups.ended(job);
    this.table.completed(job.board);
    if (job.runEntry) this.running.remove(job.runEntry);
    job.runEntry = undefined;
  }

  private refuse(out: Effect<P>[], job: Job<P>, outcome: OutcomeName, code: ErrorCode, message: string | undefined, retryAfterS: number, nowMs: number): Effect<P>[] {
    job.state = 'done';
    this.counts[outcome][job.cls]!++;
    this.scheduler.completed(job, this.dropped(0), nowMs);
    out.push({ kind: 'refuse', job, code, message, retryAfterS });
    return out;
  }

  private gone(job: Job<P>): true {
    job.state = 'done';
    this.counts.gone[job.cls]!++;
    return true;
  }

  private dropped(responseMs: number): Outcome {
    return { responseMs, level: 0, levels: CONTENT_LEVELS, deadlineMet: false };
  }

  private candidates(job: Job<P>): number[] {
    return (job.candidates ?? this.all).filter((i) => !job.tried.includes(i));
  }
}
