// The board's cluster core: election, master duties and the state table, as a pure state machine
// (etcd raft style). Feed it time (`tick`) and messages (`receive`); it returns a Ready batch of
// packets to send and events for the adapters. No sockets, no timers, no Date.
import type { CoreConfig, Ready, Role } from './cluster-core-io.ts';
import type { LoadBody, Message, StateBody } from './protocol.ts';
import { ReportCadence } from './report-cadence.ts';
import { StateTable } from './state-table.ts';
import { nextTerm, ringDistance, support } from './terms.ts';

export type { CoreConfig, CoreEvent, Outgoing, Ready, Role } from './cluster-core-io.ts';
export { nextTerm, ringDistance, support } from './terms.ts';

const none = (): Ready => ({ send: [], events: [] });

/** How long a flood may hold a takeover back, in Tmax after the master was last heard. */
export const FLOOD_HOLD_TMAX = 10;

export class ClusterCore {
  readonly cfg: CoreConfig;
  readonly table: StateTable;
  private _role: Role = 'joining';
  private _term = 0;
  private _master = -1;
  private lastMasterHeardMs: number;
  /** A flood is being counted: no takeover on silence alone before this (see holdTakeover). */
  private holdUntilMs = -Infinity;
  private lastHeartbeatMs = -Infinity;
  private lastStateSentMs = -Infinity;
  private lastJoinSentMs = -Infinity;
  private readonly reports: ReportCadence;
  private dirty = false;
  private localLoad = 0;
  /** Last table heard from the master (what nodes display and inherit on takeover). */
  private heardTable: StateBody | undefined;
  /** A planned handover under way: the board asked to take over (-1: none), until when. */
  private handoverTo = -1;
  private handoverUntilMs = -Infinity;

  constructor(cfg: CoreConfig, nowMs: number) {
    if (cfg.self < 0 || cfg.self >= cfg.boards) throw new Error('self out of range');
    this.cfg = cfg;
    this.table = new StateTable(cfg.boards);
    this.reports = new ReportCadence(cfg.heartbeatMs, cfg.tmaxMs, cfg.tthresholdMs);
    this.lastMasterHeardMs = nowMs;
  }

  get role(): Role {
    return this._role;
  }
  get term(): number {
    return this._term;
  }
  /** Index of the board this one follows (itself when master), -1 while unknown. */
  get master(): number {
    return this._master;
  }
  get load(): number {
    return this.localLoad;
  }
  /** When this board last heard its master (a node's silence clock). */
  get masterHeardMs(): number {
    return this.lastMasterHeardMs;
  }

  /** The table as this board sees it: computed when master, last heard otherwise. */
  view(): StateBody | undefined {
    if (this._role === 'master') return this.table.snapshot(this.cfg.self);
    return this.heardTable;
  }

  /**
   * Boot: JOIN and listen. A running cluster's master answers within a heartbeat; a board that
   * hears none for Tmax (+ its stagger, so the first board wins a cold boot) takes over. Not the
   * paper's rule (the first board master at once): restarted, it was master for a round trip.
   */
  start(nowMs: number): Ready {
    const r = none();
    this.lastMasterHeardMs = nowMs;
    this.sendJoin(r, nowMs);
    this.flushInto(r, nowMs);
    return r;
  }

  /**
   * A flood of junk is being counted: a takeover on the master's silence alone waits until
   * `untilMs` (the junk may have kept its STATEs out), never past FLOOD_HOLD_TMAX × Tmax after
   * the master was last heard, so a master that really died is still replaced.
   */
  holdTakeover(untilMs: number): void {
    this.holdUntilMs = Math.max(this.holdUntilMs, untilMs);
  }

  /** When the master's silence makes this board take over. */
  private takeoverAt(): number {
    const { tmaxMs } = this.cfg;
    const at = this.lastMasterHeardMs + tmaxMs + this.staggerMs();
    return Math.max(at, Math.min(this.holdUntilMs, this.lastMasterHeardMs + FLOOD_HOLD_TMAX * tmaxMs + this.staggerMs()));
  }

  tick(nowMs: number): Ready {
    const r = none();
    const { heartbeatMs, tthresholdMs } = this.cfg;
    if (this._role === 'master') {
      for (const b of this.table.expire(nowMs, tthresholdMs, this.cfg.self)) {
        r.events.push({ kind: 'runstate', board: b, runstate: -1 });
        this.dirty = true;
      }
      if (nowMs - this.lastHeartbeatMs >= heartbeatMs) {
        if (this.handoverTo >= 0 && nowMs <= this.handoverUntilMs) this.sendHandover(r, nowMs);
        else this.sendState(r, nowMs);
      }
    } else {
      if (nowMs > this.takeoverAt()) {
        this.becomeMaster(r, nowMs);
      } else if (nowMs - this.lastHeartbeatMs >= heartbeatMs) {
        const since = this.lastHeartbeatMs;
        this.lastHeartbeatMs = nowMs;
        if (this._role === 'joining') this.sendJoin(r, nowMs);
        else if (this.reports.due(nowMs, since, this.localLoad)) this.report(r, nowMs);
      }
    }
    this.flushInto(r, nowMs);
    return r;
  }

  receive(msg: Message, nowMs: number): Ready {
    const r = none();
    if (msg.sender === this.cfg.self) return r; // our own broadcast
    switch (msg.type) {
      case 'STATE':
        this.onState(r, msg.sender, msg.term, msg.body, nowMs);
        break;
      case 'JOIN':
        if (this._role === 'master') {
          const was = this.table.runstate(msg.sender);
          this.table.join(msg.sender, nowMs);
          if (was !== 1) r.events.push({ kind: 'runstate', board: msg.sender, runstate: 1 });
          r.events.push({ kind: 'joined', board: msg.sender });
          this.dirty = true;
        }
        break;
      case 'ACK':
      case 'REPORT':
        if (this._role === 'master') this.onLoad(r, msg.sender, msg.body, nowMs);
        break;
      case 'HANDOVER':
        // Only our own master, in its own term, can hand the cluster to us.
        if (this._role === 'node' && msg.sender === this._master && msg.term === this._term && msg.body.to === this.cfg.self) this.becomeMaster(r, nowMs, true);
        break;
      case 'DEVICE':
      case 'IDEM':
      case 'REVOKE':
      case 'HEALTH':
      case 'LOG':
      case 'PROGRAMS':
        // Application data: proof of life for the master, nothing for the election.
        if (this._role === 'master' && this.table.runstate(msg.sender) !== -1) this.table.heardFrom(msg.sender, nowMs);
        break;
    }
    this.flushInto(r, nowMs);
    return r;
  }

  /**
   * Master: board i's own count of requests in execution, carried on a dispatch answer (the
   * paper's ACK/REPORT, at no extra packet). Recorded for the next heartbeat's STATE, not sent now.
   * `observedAtMs`: when the answer was read, which is when the board was last heard of (the
   * request thread passes its observations on later, and a stalled thread much later).
   */
  observeLoad(board: number, load: number, nowMs: number, observedAtMs = nowMs): Ready {
    const r = none();
    if (this._role !== 'master' || board === this.cfg.self) return r;
    if (observedAtMs > nowMs) throw new Error(`invariant: a load observed at ${observedAtMs}, after now ${nowMs}`);
    this.onLoad(r, board, { id: 0, load }, nowMs, observedAtMs);
    this.flushInto(r, nowMs);
    return r;
  }

  /** Master: hand mastership to board `to` now (planned): it takes over with this table, and this master follows it instead of outbidding it; repeated every heartbeat for Tmax. */
  handOver(to: number, nowMs: number): Ready {
    const r = none();
    if (this._role !== 'master' || to === this.cfg.self || to < 0 || to >= this.table.n || this.table.runstate(to) !== 1) return r;
    this.handoverTo = to;
    this.handoverUntilMs = nowMs + this.cfg.tmaxMs;
    this.sendHandover(r, nowMs);
    return r;
  }

  /** Master: an admin drains (true) or undrains board i: no new work until undrained; the flag rides in every STATE, so a new master keeps it. */
  setDrained(board: number, on: boolean, nowMs: number): Ready {
    const r = none();
    if (this._role !== 'master' || board < 0 || board >= this.table.n) return r;
    if (this.table.setDrained(board, on)) {
      this.dirty = true;
      r.events.push({ kind: 'drained', board, drained: on });
    }
    this.flushInto(r, nowMs);
    return r;
  }

  /** Node: its request thread answered a dispatch of its master, carrying its load (shared/report-cadence.ts). */
  answeredMaster(nowMs: number): void {
    if (this._role === 'node') this.reports.answered(nowMs);
  }

  /** This board's executing count (its request thread keeps it): its load, for the next REPORT. */
  setLocalLoad(load: number): void {
    if (!Number.isInteger(load) || load < 0) throw new Error(`invariant: executing count ${load}`);
    this.localLoad = load;
    if (this._role === 'master') this.table.reportSelf(this.cfg.self, this.localLoad);
  }
  /** Emit a coalesced STATE if the table changed and the minimum gap has passed. */
  flush(nowMs: number): Ready {
    const r = none();
    this.flushInto(r, nowMs);
    return r;
  }

  /** When the adapter should call tick() next. */
  nextWakeMs(): number {
    const { heartbeatMs, stateMinGapMs } = this.cfg;
    let t = this.lastHeartbeatMs + heartbeatMs;
    if (this._role === 'master') {
      if (this.dirty) t = Math.min(t, this.lastStateSentMs + stateMinGapMs);
    } else {
      if (this._role === 'node') t = this.reports.nextAt(t, this.localLoad);
      t = Math.min(t, this.takeoverAt() + 1);
    }
    return t;
  }

  private staggerMs(): number {
    const { self, boards, staggerMs } = this.cfg;
    // At boot nobody is known: board i waits i × max(stagger, Tmax), so the first board wins.
    if (this._master < 0) return self * Math.max(staggerMs, this.cfg.tmaxMs);
    const d = ringDistance(this._master, self, boards);
    return Math.max(0, d - 1) * staggerMs;
  }

  private onState(r: Ready, sender: number, term: number, body: StateBody, nowMs: number): void {
    const current = term === this._term && sender === this._master;
    const better = !current && (term > this._term || (term === this._term && (this._master < 0 || sender < this._master)));
    const successor = sender === this.handoverTo && nowMs <= this.handoverUntilMs;
    if (better && this._role === 'master' && term > this._term && !successor && support(body) < this.freshSupport(nowMs)) {
      // A higher term from a master that holds less of the cluster (a board back from a pulled
      // cable that elected itself): outbid it rather than hand the cluster to it. Terms stay
      // monotonic and unique, and "higher term wins" stays the only rule for following. Our own
      // support counts only boards heard within Tmax: a master back from its own pulled cable
      // still lists the others as running (Tthreshold may be longer), yet holds nobody.
      this._term = nextTerm(term, this.cfg.self, this.cfg.boards);
      this.table.heardFrom(sender, nowMs);
      r.events.push({ kind: 'stale-master', board: sender, term });
      r.events.push({ kind: 'role', role: 'master', term: this._term, master: this.cfg.self, previous: 'master' });
      this.dirty = true;
      this.lastStateSentMs = -Infinity;
      return;
    }
    if (better || current) {
      if (better || this._role !== 'node') {
        const previous = this._role;
        this.handoverTo = -1;
        this._term = term;
        this._master = sender;
        this._role = 'node';
        r.events.push({ kind: 'role', role: 'node', term, master: sender, previous });
        // Tell the new master at once that we are alive and how loaded we are.
        this.reports.newMaster();
        if (body.runstate[this.cfg.self] === 1 || previous !== 'joining') this.report(r, nowMs);
      }
      this.lastMasterHeardMs = nowMs;
      this.heardTable = body;
      // The master does not count us as running: ask to (re)join, at most once per heartbeat.
      if (body.runstate[this.cfg.self] !== 1 && nowMs - this.lastJoinSentMs >= this.cfg.heartbeatMs) this.sendJoin(r, nowMs);
      return;
    }
    if (this._role === 'master') {
      // An older or losing master is still talking: answer at once so it steps down.
      this.table.heardFrom(sender, nowMs);
      r.events.push({ kind: 'stale-master', board: sender, term });
      this.dirty = true;
      this.lastStateSentMs = -Infinity;
    }
  }

  /** This board and the running boards heard within Tmax. */
  private freshSupport(nowMs: number): number {
    let n = 0;
    for (let i = 0; i < this.table.n; i++) if (i === this.cfg.self || (this.table.runstate(i) === 1 && nowMs - this.table.lastHeard(i) <= this.cfg.tmaxMs)) n++;
    return n;
  }

  private onLoad(r: Ready, sender: number, body: LoadBody, nowMs: number, heardAtMs = nowMs): void {
    if (this.table.runstate(sender) === 0) {
      // A board we had not confirmed is alive and working under us: it counts as joined.
      this.table.join(sender, nowMs);
      r.events.push({ kind: 'runstate', board: sender, runstate: 1 });
      this.dirty = true;
    }
    // A changed load waits for the next heartbeat's STATE: no STATE per request or per REPORT.
    this.table.report(sender, body.load, heardAtMs);
  }

  /** `planned`: handed over by a live master, whose table (and the master itself) stays as it was. */
  private becomeMaster(r: Ready, nowMs: number, planned = false): void {
    const previous = this._role;
    const oldMaster = this._master;
    this._term = nextTerm(this._term, this.cfg.self, this.cfg.boards);
    this._master = this.cfg.self;
    this._role = 'master';
    this.handoverTo = -1;
    this.table.inherit(this.heardTable, this.cfg.self, oldMaster, nowMs, planned);
    this.table.report(this.cfg.self, this.localLoad, nowMs);
    r.events.push({ kind: 'role', role: 'master', term: this._term, master: this.cfg.self, previous });
    if (!planned && oldMaster >= 0 && oldMaster !== this.cfg.self) r.events.push({ kind: 'runstate', board: oldMaster, runstate: -1 });
    this.dirty = true;
    this.lastStateSentMs = -Infinity;
  }

  private sendState(r: Ready, nowMs: number): void {
    this.lastHeartbeatMs = nowMs;
    this.lastStateSentMs = nowMs;
    this.dirty = false;
    r.send.push({ to: 'all', msg: { type: 'STATE', sender: this.cfg.self, term: this._term, body: this.table.snapshot(this.cfg.self) } });
  }

  /** The table as it is now, then the request to take over (the successor inherits that table). */
  private sendHandover(r: Ready, nowMs: number): void {
    this.sendState(r, nowMs);
    r.send.push({ to: this.handoverTo, msg: { type: 'HANDOVER', sender: this.cfg.self, term: this._term, body: { to: this.handoverTo } } });
  }

  private report(r: Ready, nowMs: number): void {
    this.reports.sent(nowMs, this.localLoad);
    this.toMaster(r, { type: 'REPORT', sender: this.cfg.self, term: this._term, body: { id: 0, load: this.localLoad } });
  }

  private sendJoin(r: Ready, nowMs: number): void {
    this.lastJoinSentMs = nowMs;
    r.send.push({ to: 'all', msg: { type: 'JOIN', sender: this.cfg.self, term: this._term, body: {} } });
  }

  private toMaster(r: Ready, msg: Message): void {
    if (this._master >= 0 && this._master !== this.cfg.self) r.send.push({ to: this._master, msg });
  }

  private flushInto(r: Ready, nowMs: number): void {
    if (this._role === 'master' && this.dirty && nowMs - this.lastStateSentMs >= this.cfg.stateMinGapMs) this.sendState(r, nowMs);
  }
}
