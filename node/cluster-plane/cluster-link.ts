// The only place the cluster core meets sockets and timers: a UDP socket, one timer at the time
// the core asks for, and the codec with its drop counters. Everything it decides comes from
// ClusterCore; this file only carries packets and time. It runs in the cluster plane, a worker
// thread of its own (node/cluster-plane/), so request load cannot delay a heartbeat.

import type { Clock, Timer, Timers } from '../../shared/clock.ts';
import type { BoardConfig, Config } from '../../shared/config.ts';
import { ClusterCore, type CoreEvent, type Ready } from '../../shared/election.ts';
import type { Counter, Registry } from '../../shared/metrics.ts';
import { type AppMessage, type Codec, createCodec, DROP_REASONS, type DropReason, type Message, PROTOCOL_OLDEST, PROTOCOL_VERSION } from '../../shared/protocol.ts';
import { ProtocolPeers } from '../../shared/protocol-peers.ts';
import { ReplayGuard } from '../../shared/replay-guard.ts';
import type { Logger } from '../log.ts';
import { systemTimers } from './system-timers.ts';
import { systemTransport, type Transport, type UdpPort } from './transport.ts';

const EPOCH_MAX = 2 ** 48 - 1;
/** Dropped packets within one Tmax that make it a flood: legitimate traffic is a few per heartbeat. */
const FLOOD_DROPS_PER_TMAX = 200;

type LinkConfig = Pick<Config, 'cluster' | 'boards' | 'limits'>;

export class ClusterLink {
  core: ClusterCore;
  /** Stepped down on purpose: no packets in or out, no timer, until resume(). */
  private suspended = false;
  private readonly codec: Codec;
  private readonly guard: ReplayGuard;
  private socket: UdpPort | undefined;
  private timer: Timer | undefined;
  private timerAt = Infinity;
  private tickDue = 0;
  private tickQueuedAt = 0;
  private readsSinceTimer = 0;
  private epoch: number;
  /** This board's epoch at boot: dispatch frames for an earlier boot are refused. */
  readonly bootEpoch: number;
  /** The latest epoch heard from each board (their boot epochs, as far as this board knows). */
  private readonly peerEpochs: number[];
  private counter = 0;
  private readonly dropped: Counter;
  private readonly received: Counter;
  private readonly sent: Counter;
  private readonly sendErrors: Counter;
  /** The last STATE heard from the master: when, from whom, in which term. Gaps between two (liveness under load) are measured within one master's term: the longest, and how many were late. */
  private lastStateAt = -1;
  private lastStateFrom = -1;
  private lastStateTerm = -1;
  stateGapMaxMs = 0;
  /** As master: the longest time between two of its own STATE sends in one term (its beat, before the network and the readers). */
  sendGapMaxMs = 0;
  private lastSentAt = -1;
  private lastSentTerm = -1;
  private lateGaps: Counter;
  /** The boards' addresses: a datagram from anywhere else is dropped before its tag is computed. */
  private readonly sources: ReadonlySet<string>;
  private junkWindowAt = 0;
  private junkInWindow = 0;
  private flooding = false;
  private readonly floodHolds: Counter;
  /** The protocol version each board speaks, and so the one this board writes. */
  private readonly protocols: ProtocolPeers;
  private writing = PROTOCOL_VERSION;
  /** Protocol versions already said to be out of reach (one log line each). */
  private readonly unspoken = new Set<number>();
  /** Called after every decision batch (the master's intake pumps its queue here). */
  afterApply: () => void = () => {};
  /** Application packets from other boards: DEVICE, IDEM, REVOKE, HEALTH and LOG. */
  onApp: (msg: AppMessage) => void = () => {};

  constructor(
    private readonly cfg: LinkConfig,
    private readonly self: BoardConfig,
    private readonly clock: Clock,
    bootEpoch: number,
    metrics: Registry,
    private readonly log: Logger,
    private readonly onEvents: (events: CoreEvent[]) => void,
    private readonly transport: Transport = systemTransport,
    private readonly timers: Timers = systemTimers,
  ) {
    const c = cfg.cluster;
    this.core = this.newCore();
    this.codec = createCodec({ key: c.key, acceptKeys: c.acceptKeys, cluster: c.name, boards: cfg.boards.length, packetBytesMax: cfg.limits.udpPacketBytesMax });
    this.guard = new ReplayGuard(cfg.boards.length);
    this.epoch = Math.min(bootEpoch, EPOCH_MAX);
    this.bootEpoch = this.epoch;
    this.peerEpochs = cfg.boards.map(() => 0);
    this.dropped = metrics.counter('ews_udp_dropped_total', 'UDP packets dropped, by reason');
    for (const r of DROP_REASONS) this.dropped.inc({ reason: r }, 0);
    this.received = metrics.counter('ews_udp_received_total', 'UDP packets accepted, by type');
    this.sent = metrics.counter('ews_udp_sent_total', 'UDP packets sent, by type');
    this.sendErrors = metrics.counter('ews_udp_send_errors_total', 'UDP sends that failed');
    metrics.gauge('ews_state_gap_max_seconds', 'Longest gap between STATE packets from the master, seen by this board', () => [[{}, this.stateGapMaxMs / 1000]]);
    metrics.gauge('ews_state_send_gap_max_seconds', 'As master, the longest gap between two of its own STATE sends in one term', () => [[{}, this.sendGapMaxMs / 1000]]);
    this.lateGaps = metrics.counter('ews_state_gaps_late_total', "STATE gaps from the master longer than 2 heartbeats, or than Tmax; tmax_sending: the master's own sends further apart than Tmax");
    this.lateGaps.inc({ over: '2x_heartbeat' }, 0);
    this.lateGaps.inc({ over: 'tmax' }, 0);
    this.lateGaps.inc({ over: 'tmax_sending' }, 0);
    this.sources = new Set(cfg.boards.map((b) => b.address));
    this.floodHolds = metrics.counter('ews_udp_floods_total', 'Floods of dropped packets counted (each held a takeover on silence alone back)');
    this.protocols = new ProtocolPeers(cfg.boards.length, self.index, cfg.cluster.tthresholdMs);
    metrics.gauge('ews_protocol_writing', 'The cluster protocol version this board writes (the lowest its live peers speak)', () => [[{}, this.writing]]);
  }

  async start(): Promise<void> {
    const broadcastMode = this.cfg.cluster.broadcast !== 'peers';
    const sock = this.transport.udp(broadcastMode);
    this.socket = sock;
    sock.onMessage((buf, size, from) => this.onPacket(buf, size, from));
    // Broadcasts arrive on 0.0.0.0 only; in peers mode bind the board's own address and port.
    await sock.bind(this.self.udpPort, broadcastMode ? '0.0.0.0' : this.self.address);
    sock.onError((err) => this.log.error({ err }, 'udp socket error'));
    if (broadcastMode) sock.setBroadcast(true);
    this.apply(this.core.start(this.clock.now()));
  }

  private newCore(): ClusterCore {
    const c = this.cfg.cluster;
    return new ClusterCore(
      { self: this.self.index, boards: this.cfg.boards.length, heartbeatMs: c.heartbeatMs, tmaxMs: c.tmaxMs, tthresholdMs: c.tthresholdMs, staggerMs: c.staggerMs, stateMinGapMs: c.stateMinGapMs },
      this.clock.now(),
    );
  }

  /** Step down on purpose: silent, deaf and timerless (the others elect a master without us). */
  suspend(): void {
    this.suspended = true;
    this.timers.clear(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  /** Back after suspend(): a fresh core that joins whatever master the others chose. */
  resume(): void {
    if (!this.suspended) return;
    this.suspended = false;
    this.core = this.newCore();
    this.apply(this.core.start(this.clock.now()));
  }

  /** This board's executing count; `answered`: an answer to the master carried it since the last. Its next REPORT may be due sooner. */
  loadChanged(load: number, answered: boolean): void {
    this.core.setLocalLoad(load);
    if (answered) this.core.answeredMaster(this.clock.now());
    this.schedule();
  }

  get isSuspended(): boolean {
    return this.suspended;
  }

  /** The highest protocol version each board has shown since its boot (0: not heard), this board's own included. */
  versions(): number[] {
    return this.protocols.versions();
  }

  /** The latest epoch heard from each board, this board's own included. */
  epochs(): number[] {
    return this.peerEpochs.map((e, i) => (i === this.self.index ? this.epoch : e));
  }

  close(): void {
    this.timers.clear(this.timer);
    this.timer = undefined;
    this.socket?.close();
    this.socket = undefined;
  }

  /** Feed a core decision batch out to the network and the adapters. */
  apply(r: Ready): void {
    for (const o of r.send) this.send(o.to, o.msg);
    if (r.events.length > 0) this.onEvents(r.events);
    this.schedule();
    this.afterApply();
  }

  private schedule(): void {
    if (!this.socket || this.suspended) return;
    const at = this.core.nextWakeMs();
    if (this.timer && at >= this.timerAt) return;
    this.timers.clear(this.timer);
    this.timerAt = at;
    this.timer = this.timers.setTimeout(
      () => {
        this.timer = undefined;
        this.tickDue = this.timerAt;
        this.readsSinceTimer = 0;
        this.timerAt = Infinity;
        // A node ticks after this turn's I/O: a loop woken late (a throttled or busy CPU) runs
        // timers before it reads, and judged its master silent with the STATE unread (150 false
        // takeovers in 40 s, bench/results/memory.md). A master ticks at once: its limit is
        // Tthreshold, and after a long stall of its own the REPORTs waiting are stale; read
        // first, they would count as fresh support against the master elected meanwhile.
        if (this.core.role === 'master') this.tickNow();
        else this.queueTick();
      },
      Math.max(0, at - this.clock.now()),
    );
  }

  /** A node's tick, after this turn's reads; a thread stalled past a heartbeat before it ran (a long task in this turn, a spent quota) has read nothing since: it waits for the next turn's. */
  private queueTick(): void {
    this.tickQueuedAt = this.clock.now();
    this.timers.setImmediate(() => (this.clock.now() - this.tickQueuedAt > this.cfg.cluster.heartbeatMs ? this.queueTick() : this.tickNow()));
  }

  private readonly tickNow = (): void => {
    if (!this.socket || this.suspended) return;
    const now = this.clock.now();
    const was = this.core.role;
    const heard = this.core.masterHeardMs;
    const due = this.tickDue;
    const r = this.core.tick(now);
    if (was === 'node' && this.core.role === 'master')
      this.log.warn({ silentMs: Math.round(now - heard), tickLateMs: Math.round(now - due), readsSince: this.readsSinceTimer }, 'took over: the master was silent past Tmax');
    this.apply(r);
  };

  private onPacket(buf: Buffer, size: number, from: string): void {
    if (this.suspended) return;
    this.readsSinceTimer++;
    if (!this.sources.has(from)) return void this.drop('source');
    const d = this.codec.decode(buf.length === size ? buf : buf.subarray(0, size));
    if (!d.ok) {
      if (d.reason === 'version') this.unspokenVersion(buf[2]!, from);
      return void this.drop(d.reason);
    }
    const msg = d.msg;
    if (msg.sender === this.self.index) return; // our own broadcast coming back
    if (this.cfg.boards[msg.sender]!.address !== from) return void this.drop('source');
    if (!this.guard.accept(msg.sender, d.env)) return void this.drop('replay');
    this.received.inc({ type: msg.type });
    if (d.env.epoch > this.peerEpochs[msg.sender]!) {
      // A board whose boot epoch grew restarted, JOIN or not (a quick restart may miss no heartbeat).
      if (this.peerEpochs[msg.sender]! > 0 && this.core.role === 'master') this.onEvents([{ kind: 'joined', board: msg.sender }]);
      this.peerEpochs[msg.sender] = d.env.epoch;
    }
    const now = this.clock.now();
    this.protocols.heard(msg.sender, d.env.epoch, d.env.version, msg.type === 'HEALTH' && typeof msg.body.protocol === 'number' ? msg.body.protocol : undefined, now);
    if (msg.type === 'STATE' && msg.sender === this.core.master) {
      // A new master (or term) starts a new series: the time without one is a failover, not a gap.
      if (this.lastStateAt >= 0 && msg.sender === this.lastStateFrom && msg.term === this.lastStateTerm) {
        const gap = now - this.lastStateAt;
        this.stateGapMaxMs = Math.max(this.stateGapMaxMs, gap);
        if (gap > 2 * this.cfg.cluster.heartbeatMs) this.lateGaps.inc({ over: '2x_heartbeat' });
        if (gap > this.cfg.cluster.tmaxMs) this.lateGaps.inc({ over: 'tmax' });
      }
      this.lastStateAt = now;
      this.lastStateFrom = msg.sender;
      this.lastStateTerm = msg.term;
    }
    this.apply(this.core.receive(msg, now));
    if (msg.type === 'DEVICE' || msg.type === 'IDEM' || msg.type === 'REVOKE' || msg.type === 'HEALTH' || msg.type === 'LOG' || msg.type === 'PROGRAMS') this.onApp(msg);
  }

  /**
   * A dropped packet. Many within one Tmax are a flood: the junk may be what keeps the master's
   * STATEs from arriving, so this board does not take over on the master's silence alone while it
   * lasts (the core bounds how long), and says so once per flood.
   */
  private drop(reason: DropReason): void {
    this.dropped.inc({ reason });
    const now = this.clock.now();
    const tmax = this.cfg.cluster.tmaxMs;
    if (now - this.junkWindowAt > tmax) {
      if (this.flooding && this.junkInWindow < FLOOD_DROPS_PER_TMAX) {
        this.flooding = false;
        this.log.warn({ dropped: this.junkInWindow }, 'UDP flood over');
      }
      this.junkWindowAt = now;
      this.junkInWindow = 0;
    }
    if (++this.junkInWindow < FLOOD_DROPS_PER_TMAX) return;
    if (!this.flooding) {
      this.flooding = true;
      this.floodHolds.inc();
      this.log.warn({ reason, perTmax: this.junkInWindow }, "UDP flood: dropping junk; no takeover on the master's silence alone while it lasts");
    }
    if (this.core.role !== 'master') {
      this.core.holdTakeover(now + tmax);
      this.schedule();
    }
  }

  /** A packet of a protocol this release does not read (two versions apart, or newer): said once per version. */
  private unspokenVersion(version: number, from: string): void {
    if (this.unspoken.has(version) || this.unspoken.size >= 8) return;
    this.unspoken.add(version);
    this.log.error(
      { version, from, reads: [PROTOCOL_OLDEST, PROTOCOL_VERSION] },
      'cluster packets of a protocol version this release does not speak are dropped: upgrade boards one release at a time',
    );
  }

  /** Board i's epoch as last heard (0 until it has sent a packet). */
  epochOf(board: number): number {
    return board === this.self.index ? this.epoch : this.peerEpochs[board]!;
  }

  /** Broadcast application data to every board. Returns false if it does not fit in a packet. */
  broadcastApp(type: AppMessage['type'], body: Record<string, unknown>): boolean {
    if (Buffer.byteLength(JSON.stringify(body)) + 64 > this.cfg.limits.udpPacketBytesMax) return false;
    this.send('all', { type, sender: this.self.index, term: this.core.term, body });
    return true;
  }

  private send(to: 'all' | number, msg: Message): void {
    const sock = this.socket;
    if (!sock || this.suspended) return;
    if (++this.counter > 0xffffffff) {
      this.counter = 1;
      this.epoch++;
    }
    if (msg.type === 'STATE' && to === 'all') {
      const now = this.clock.now();
      if (this.lastSentTerm === msg.term) {
        const gap = now - this.lastSentAt;
        this.sendGapMaxMs = Math.max(this.sendGapMaxMs, gap);
        if (gap > this.cfg.cluster.tmaxMs) this.lateGaps.inc({ over: 'tmax_sending' });
      }
      this.lastSentAt = now;
      this.lastSentTerm = msg.term;
    }
    const writing = this.protocols.writing(this.clock.now());
    if (writing !== this.writing) {
      this.log.warn({ from: this.writing, to: writing, boards: this.protocols.versions() }, 'cluster protocol version written changes');
      this.writing = writing;
    }
    const buf = this.codec.encode(msg, { epoch: this.epoch, counter: this.counter }, writing);
    this.sent.inc({ type: msg.type });
    const c = this.cfg.cluster;
    const dests: Array<[string, number]> = [];
    if (to !== 'all') {
      const b = this.cfg.boards[to]!;
      dests.push([b.address, b.udpPort]);
    } else if (c.broadcast !== 'peers') {
      dests.push([c.broadcast, c.udpPort]);
    } else {
      for (const b of this.cfg.boards) if (b.index !== this.self.index) dests.push([b.address, b.udpPort]);
    }
    for (const [addr, port] of dests) {
      sock.send(buf, port, addr, (err) => {
        if (err) this.sendErrors.inc();
      });
    }
  }
}
