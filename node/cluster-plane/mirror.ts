// The request thread's side of the cluster plane: it starts the plane (on a thread of its own, or
// on this thread when cluster.planeThread is false), keeps a copy of the state it reports (role,
// term, master, the table's membership and loads, the boards' boot epochs) and sends what only this
// thread knows. The dispatch core reads and counts its dispatches in this copy's table; the plane's
// own table gets the counts for its STATE packets.
import type { Clock, Timer, Timers } from '../../shared/clock.ts';
import type { BoardConfig, Config } from '../../shared/config.ts';
import type { CoreEvent, Role } from '../../shared/election.ts';
import type { Registry } from '../../shared/metrics.ts';
import type { AppMessage, StateBody } from '../../shared/protocol.ts';
import type { StateTable } from '../../shared/state-table.ts';
import type { Logger } from '../log.ts';
import { CountedTable } from './counted-table.ts';
import { absClock, aliveEveryMs, type FromPlane, type PlaneData, type PlaneState, type ToPlane } from './messages.ts';
import { InlinePlane, type PlaneHost, planeThread } from './plane-host.ts';
import { systemTimers } from './system-timers.ts';
import { favourThread, keepOnOneCpu, ownQuotaCores, REQUEST_NICE_STEP } from './thread-priority.ts';

/** What the mirror runs on besides its clock: the system's timers and threads on a board, the simulator's in the seeded simulator. */
export interface MirrorEnv {
  timers?: Timers;
  /** The clock shared with the plane (messages.ts). */
  abs?: Clock;
  /** Starts the plane; else a thread of its own, or this thread (cluster.planeThread). */
  host?: (data: PlaneData) => PlaneHost;
}

/**
 * A role as this thread's own string constant. One posted by the plane's thread arrives as a new
 * string, and optimized code that compared roles against the constant deoptimizes on it ("wrong
 * instance type"), as a node's rehearsed master path did at a takeover.
 */
const ownRole = (r: Role): Role => (r === 'master' ? 'master' : r === 'node' ? 'node' : 'joining');

export class ClusterMirror {
  readonly table: StateTable;
  role: Role = 'joining';
  term = 0;
  master = -1;
  /** This board's executing count (forwarded and local). */
  load = 0;
  /** The plane stepped this board down because this thread stalled. */
  resigned = false;
  private viewBody: StateBody | undefined;
  private epochs: number[];
  private protocols: number[] = [];
  private worker: PlaneHost | undefined;
  private metricsText = '';
  /** What waits for the plane's reply, by the reply's kind (concurrent scrapes share one). */
  private readonly waits = new Map<FromPlane['t'], { asked: Promise<void>; answered(): void }>();
  private loadSent = -1;
  /** A node answered a dispatch of its master since the last flush (its next REPORT can wait). */
  private answered = false;
  private ownSent = '';
  /** Loads heard on dispatch answers since the last flush, and when (this thread's clock). */
  private observed = new Map<number, [load: number, atMs: number]>();
  /** Drains asked of the plane that its table does not show yet. */
  private readonly drainAsked = new Map<number, boolean>();
  /** When this (master) thread last heard each board's load on a dispatch answer. */
  private readonly observedAt: number[] = [];
  private alive: Timer | undefined;
  private flushTimer: Timer | undefined;
  private flushEveryMs = 10;
  private readonly timers: Timers;
  private readonly abs: Clock;
  private closed: Promise<void> | undefined;
  /** Role, runstate, join and stale-master events, after the copy is updated. */
  onEvents: (events: CoreEvent[]) => void = () => {};
  /** Application packets from other boards: DEVICE, IDEM, REVOKE, HEALTH and LOG. */
  onApp: (msg: AppMessage) => void = () => {};
  /** After every update from the plane (the master's intake pumps its queue here). */
  afterApply: () => void = () => {};

  constructor(
    private readonly cfg: Config,
    private readonly self: BoardConfig,
    readonly bootEpoch: number,
    private readonly clock: Clock,
    private readonly log: Logger,
    metrics: Registry,
    private readonly transportModule?: string,
    private readonly env: MirrorEnv = {},
  ) {
    this.timers = env.timers ?? systemTimers;
    this.abs = env.abs ?? absClock;
    this.table = new CountedTable(cfg.boards.length, this);
    this.epochs = cfg.boards.map((_, i) => (i === self.index ? bootEpoch : 0));
    metrics.include(() => this.metricsText);
  }

  /** Start the plane; resolves once it has joined the network (its first state is in). */
  start(): Promise<void> {
    const c = this.cfg;
    const data: PlaneData = {
      cfg: { cluster: c.cluster, boards: c.boards, limits: c.limits },
      boardId: this.self.id,
      bootEpoch: this.bootEpoch,
      transportModule: this.transportModule,
      requestThreadDeadMs: c.cluster.requestThreadDeadMs,
    };
    const worker = this.env.host ? this.env.host(data) : c.cluster.planeThread ? planeThread(data) : new InlinePlane(data);
    this.worker = worker;
    const started = new Promise<void>((resolve, reject) => {
      worker.once('error', reject);
      worker.on('message', (m: FromPlane) => {
        if (m.t === 'started') {
          worker.off('error', reject);
          worker.on('error', (err) => this.log.fatal({ err }, 'cluster plane failed'));
          this.adopt(m.state);
          resolve();
        } else this.onMessage(m);
      });
    });
    worker.on('exit', (code) => {
      if (!this.closed) {
        this.log.fatal({ code }, 'cluster plane exited; the board stops');
        process.exit(1);
      }
    });
    // Proof of life for the plane's watchdog every aliveEveryMs. The counts for its next packets go
    // within half a heartbeat of a change (soon), each only when it changed: an idle board's
    // request thread wakes only for the proofs (it woke every half heartbeat: 100 times a second at 20 ms).
    this.flushEveryMs = Math.max(5, Math.floor(c.cluster.heartbeatMs / 2));
    this.alive = this.timers.setInterval(() => {
      this.post({ t: 'alive' });
      this.flush();
    }, aliveEveryMs(c.cluster.requestThreadDeadMs));
    this.alive.unref();
    return started;
  }

  view(): StateBody | undefined {
    return this.viewBody;
  }

  /** Board i's boot epoch as last heard (0 until it has sent a packet). */
  epochOf(board: number): number {
    return this.epochs[board] ?? 0;
  }

  /** The highest cluster protocol version board i has shown since its boot (0: not heard yet). */
  protocolOf(board: number): number {
    return this.protocols[board] ?? 0;
  }

  accepted(): void {
    this.load++;
    if (this.role === 'master') this.table.reportSelf(this.self.index, this.load);
    this.soon();
  }

  finished(): void {
    if (this.load <= 0) throw new Error('invariant: finished more work than accepted');
    this.load--;
    if (this.role === 'master') this.table.reportSelf(this.self.index, this.load);
    this.soon();
  }

  /** Node: an answer to a dispatch of its master went out, carrying this board's load. */
  answeredMaster(): void {
    if (this.role !== 'node') return;
    this.answered = true;
    this.soon();
  }

  /** Master: board i's executing count, carried on its dispatch answer. */
  observeLoad(board: number, load: number, nowMs: number): void {
    if (this.role !== 'master' || board === this.self.index) return;
    this.table.report(board, load, nowMs);
    this.observed.set(board, [load, nowMs]);
    this.observedAt[board] = nowMs;
    this.soon();
  }

  /** Master: drain (true) or undrain board i. Dispatch sees it at once; the plane puts it in the table it broadcasts. */
  drain(board: number, on: boolean): void {
    if (this.role !== 'master') return;
    this.table.setDrained(board, on);
    this.drainAsked.set(board, on);
    this.post({ t: 'drain', board, drained: on });
  }

  /** Master: hand mastership to board i now (a planned handover); this board follows it. */
  handOver(board: number): void {
    if (this.role === 'master') this.post({ t: 'handover', board });
  }

  /** Broadcast application data to every board. False if it does not fit in a packet. */
  broadcastApp(type: AppMessage['type'], body: Record<string, unknown>): boolean {
    if (Buffer.byteLength(JSON.stringify(body)) + 64 > this.cfg.limits.udpPacketBytesMax) return false;
    this.post({ t: 'app', type, body });
    return true;
  }

  /**
   * Fetch the plane's counters for a scrape, so /metrics shows them as they are now (a test or an
   * operator reads a delta across an event). A plane that does not answer within 250 ms leaves
   * the last text it sent.
   */
  refreshMetrics(): Promise<void> {
    return this.ask({ t: 'metrics' }, 'metrics', 250);
  }

  /**
   * A stopping board: once the cluster address is off it (a node that handed mastership on may
   * still be letting it go), at once on a master, which keeps it until it closes. At most 3 s.
   */
  addressReleased(): Promise<void> {
    return this.ask({ t: 'release' }, 'released', 3000);
  }

  /** Post `m` to the plane; resolves at its `reply`, or after `ms`. */
  private ask(m: ToPlane, reply: FromPlane['t'], ms: number): Promise<void> {
    const waiting = this.waits.get(reply);
    if (waiting) return waiting.asked;
    if (!this.worker || this.closed) return Promise.resolve();
    let answered = () => {};
    const asked = new Promise<void>((resolve) => {
      const timer = this.timers.setTimeout(() => answered(), ms);
      answered = () => {
        this.timers.clear(timer);
        this.waits.delete(reply);
        resolve();
      };
    });
    this.waits.set(reply, { asked, answered: () => answered() });
    this.post(m);
    return asked;
  }

  close(): Promise<void> {
    if (this.closed) return this.closed;
    this.timers.clear(this.alive);
    this.timers.clear(this.flushTimer);
    const w = this.worker;
    this.closed = !w
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          const done = () => void w.terminate().then(() => resolve());
          w.on('message', (m: FromPlane) => m.t === 'closed' && done());
          this.timers.setTimeout(done, 3000).unref();
          this.post({ t: 'close' });
        });
    return this.closed;
  }

  private onMessage(m: FromPlane): void {
    if (m.t === 'state') {
      this.adopt(m.state);
      if (m.events.length > 0) this.onEvents(m.events);
      this.afterApply();
    } else if (m.t === 'app') this.onApp(m.msg);
    else if (m.t === 'thread') {
      // The plane runs on a thread of its own: every other thread yields to it (thread-priority.ts).
      const n = favourThread(m.tid);
      this.log.debug({ planeThread: m.tid, niced: n, by: REQUEST_NICE_STEP }, 'the cluster plane goes first on the CPU');
      // Priority orders threads on one CPU only: under a quota below one core, keep them on one.
      const quota = ownQuotaCores();
      const cpu = quota !== undefined && quota < 1 ? keepOnOneCpu() : undefined;
      if (cpu !== undefined) this.log.info({ quotaCores: quota, cpu }, "under a CPU quota below one core: the board's threads stay on one CPU, so the cluster plane goes first");
    } else if (m.t === 'metrics') {
      this.metricsText = m.text;
      this.waits.get('metrics')?.answered();
    } else if (m.t === 'released') this.waits.get('released')?.answered();
  }

  private adopt(s: PlaneState): void {
    const now = this.clock.now();
    const toLocal = now - this.abs.now();
    const wasMaster = this.role === 'master';
    this.term = s.term;
    this.master = s.master;
    this.resigned = s.resigned;
    this.viewBody = s.view;
    this.epochs = s.epochs;
    this.protocols = s.protocols;
    this.role = ownRole(s.role);
    // A master hears each board's load on every dispatch answer, fresher than the plane's copy
    // (from REPORTs, posted here up to Tthreshold/8 later): a load it observed within a heartbeat stands.
    let reported = s.reported;
    if (wasMaster && s.role === 'master') {
      const mine = this.table.membership().reported;
      reported = s.reported.map((r, i) => (now - (this.observedAt[i] ?? -Infinity) < this.cfg.cluster.heartbeatMs ? mine[i]! : r));
    }
    // A drain asked here holds until the plane's table says so (a state posted before the plane read the request would undo it).
    const drained = s.view?.drained?.slice() ?? [];
    for (const [b, on] of this.drainAsked) {
      if (s.role !== 'master' || (drained[b] ?? false) === on) this.drainAsked.delete(b);
      else drained[b] = on;
    }
    this.table.adopt(
      s.runstates,
      reported,
      s.heard.map((h) => h + toLocal),
      drained,
    );
    if (this.role === 'master') this.table.reportSelf(this.self.index, this.load);
  }

  /** A dispatch or completion was counted in the table (CountedTable). */
  counted(): void {
    this.soon();
  }

  /** A count changed: the plane hears it within flushEveryMs (half a heartbeat). */
  private soon(): void {
    if (this.flushTimer === undefined && this.worker && !this.closed) this.flushTimer = this.timers.setTimeout(this.flushSoon, this.flushEveryMs);
  }
  private readonly flushSoon = (): void => {
    this.flushTimer = undefined;
    this.flush();
  };

  /**
   * What changed since the last flush, in at most three messages, at most once per half heartbeat
   * after a change (and with each proof of life): the plane needs these counts only for its next
   * packet, and a message per request would wake the plane thread, on this board's CPU, once per request.
   */
  private flush(): void {
    if (this.load !== this.loadSent || this.answered) {
      this.loadSent = this.load;
      this.post({ t: 'load', load: this.load, answered: this.answered });
      this.answered = false;
    }
    if (this.observed.size > 0) {
      const toAbs = this.abs.now() - this.clock.now();
      this.post({ t: 'observe', loads: [...this.observed].map(([board, [load, at]]) => [board, load, at + toAbs] as [number, number, number]) });
      this.observed.clear();
    }
    const own = this.table.ownCounts();
    const key = own.join(',');
    if (key !== this.ownSent) {
      this.ownSent = key;
      this.post({ t: 'own', own });
    }
  }

  private post(m: ToPlane): void {
    this.worker?.postMessage(m);
  }
}
