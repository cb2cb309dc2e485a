// A seeded, deterministic simulator of a whole EWS cluster on the runtime's own adapters
// (TigerBeetle's VOPR runs the real replica): each board runs the real cluster plane (runPlane,
// with the real ClusterLink, its codec, replay guard and timers) on one virtual thread and the
// real ClusterMirror on another, the two talking in the plane's own messages; the master's real
// DispatchCore works on the mirror's table, with a HIGH (control) and a LOW (page) class. Only
// the network (loss, duplication, reordering, partitions, cables), the threads' time (stalls) and
// the client workload are the simulator's.
import { EventEmitter } from 'node:events';
import { DispatchCore, dispatchTickMs, type Effect, type Job } from '../../master/dispatch-core.ts';
import type { FromPlane, PlaneData, ToPlane } from '../../node/cluster-plane/messages.ts';
import { ClusterMirror } from '../../node/cluster-plane/mirror.ts';
import { runPlane } from '../../node/cluster-plane/plane.ts';
import type { PlaneHost } from '../../node/cluster-plane/plane-host.ts';
import type { Transport, UdpPort } from '../../node/cluster-plane/transport.ts';
import { silentLogger } from '../../node/log.ts';
import { type Config, parseConfig } from '../../shared/config.ts';
import { FrameCodec } from '../../shared/dispatch-frame.ts';
import { DispatchReplayGuard } from '../../shared/dispatch-replay-guard.ts';
import type { CoreConfig } from '../../shared/election.ts';
import { frameRefusal } from '../../shared/frame-acceptance.ts';
import { Registry } from '../../shared/metrics.ts';
import { VirtualLoop, World } from './virtual-loop.ts';

const KEY = Buffer.from('dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4', 'hex');
export const HIGH = 0;
export const LOW = 1;

export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface SimOptions {
  boards: number;
  loss: number; // probability a packet is lost
  dup: number; // probability a packet is delivered twice
  delayMaxMs: number; // uniform 0..delayMaxMs (reordering)
  timing: Omit<CoreConfig, 'self' | 'boards'>;
  capacity: number;
  /** The master's share of the work (cluster.masterWork); the runtime's default when absent. */
  masterWork?: 'forward' | 'spill' | 'share';
  /** setImmediate runs at once on every thread: a model of ticking before reading the socket (to show the simulator catches it). */
  tickBeforeRead?: boolean;
}

/** One board: its two threads and what runs on them, for one boot (a crash ends them). */
export interface SimBoard {
  incarnation: number;
  group: number;
  linkUp: boolean;
  plane: VirtualLoop | undefined;
  request: VirtualLoop | undefined;
  mirror: ClusterMirror | undefined;
  dispatch: DispatchCore<number> | undefined;
  /** The board's UDP socket, as the plane bound it. */
  onDatagram: ((buf: Buffer, size: number, from: string) => void) | undefined;
  linkGuard: DispatchReplayGuard;
  /** HIGH jobs submitted to this board as master, until they leave its queue. */
  high: Set<Job<number>>;
  /** Boards an admin drained through this board's mirror (it was master): no dispatch may go to them. */
  drained: Set<number>;
}

const address = (i: number) => `127.0.1.${i + 1}`;

export class ClusterSim {
  readonly world = new World();
  readonly boards: SimBoard[];
  readonly violations: string[] = [];
  /** term -> boards that have been master in it (as their request thread saw it). */
  readonly termHolders = new Map<number, Set<number>>();
  refusedFrames = 0;
  answered = 0;
  dispatchedTotal = 0;
  private loss: number;
  private dup: number;
  private readonly frames = new FrameCodec(KEY, 1 << 16);
  readonly cfg: Config;
  /** heardAt[m][t]: when board m's plane last read a datagram from t. */
  private readonly heardAt: number[][];
  /** A board started since the last drain: its start's promises (the plane binding its socket) run before the next event. */
  private drainPending = false;

  constructor(
    readonly opts: SimOptions,
    readonly rand: () => number,
  ) {
    this.loss = opts.loss;
    this.dup = opts.dup;
    this.boards = Array.from({ length: opts.boards }, () => ({
      incarnation: 0,
      group: 0,
      linkUp: true,
      plane: undefined,
      request: undefined,
      mirror: undefined,
      dispatch: undefined,
      onDatagram: undefined,
      linkGuard: new DispatchReplayGuard(4096),
      high: new Set<Job<number>>(),
      drained: new Set<number>(),
    }));
    this.heardAt = Array.from({ length: opts.boards }, () => new Array<number>(opts.boards).fill(0));
    this.cfg = parseConfig({
      cluster: { name: 'sim', key: KEY.toString('hex'), broadcast: 'peers', ...opts.timing, ...(opts.masterWork ? { masterWork: opts.masterWork } : {}) },
      boards: Array.from({ length: opts.boards }, (_, i) => ({ id: `b${i}`, address: address(i), httpPort: 1000 + i, udpPort: 2000 + i })),
      limits: { inFlightPerBoardMax: opts.capacity, queueMax: 64, requestTimeoutMs: 5000 },
      classes: [
        { name: 'control', priority: 0, deadlineMs: 3000, match: [{ pathPrefix: '/cgi-bin/' }] },
        { name: 'page', priority: 1, deadlineMs: 3000, match: [{ pathPrefix: '/' }] },
      ],
      auth: { disabled: true },
      stateDir: false,
    });
  }

  get now(): number {
    return this.world.now;
  }

  start(i: number): void {
    const b = this.boards[i]!;
    if (b.mirror) return;
    b.incarnation++;
    b.linkGuard = new DispatchReplayGuard(4096);
    b.high = new Set();
    const plane = new VirtualLoop(this.world, !this.opts.tickBeforeRead);
    const request = new VirtualLoop(this.world, !this.opts.tickBeforeRead);
    Object.assign(b, { plane, request });
    this.heardAt[i]!.fill(this.now);
    const host = (data: PlaneData): PlaneHost => this.planeHost(i, data, plane, request);
    const mirror = new ClusterMirror(this.cfg, this.cfg.boards[i]!, b.incarnation, this.world.clock, silentLogger, new Registry(), undefined, { timers: request, abs: this.world.clock, host });
    b.mirror = mirror;
    const dispatch = new DispatchCore<number>(this.cfg, i, mirror.table, this.rand);
    b.dispatch = dispatch;
    mirror.afterApply = () => {
      if (mirror.role === 'master') this.runEffects(i, dispatch.pump(this.now));
      this.observe();
    };
    request.setInterval(() => {
      if (b.mirror === mirror && mirror.role === 'master') this.runEffects(i, dispatch.tick(this.now));
    }, dispatchTickMs(this.cfg));
    this.drainPending = true;
    mirror.start().catch((err: unknown) => this.violations.push(`t=${this.now} board ${i} did not start: ${(err as Error).message}`));
  }

  /** The plane on its own virtual thread, over messages cloned as between threads. */
  private planeHost(i: number, data: PlaneData, plane: VirtualLoop, request: VirtualLoop): PlaneHost {
    const host = new EventEmitter() as PlaneHost;
    const port = new EventEmitter();
    host.postMessage = (m: ToPlane) => plane.deliver(() => port.emit('message', structuredClone(m)));
    host.terminate = async () => undefined;
    const planePort = {
      postMessage: (m: FromPlane) => request.deliver(() => host.emit('message', structuredClone(m))),
      on: (ev: 'message', fn: (m: ToPlane) => void) => port.on(ev, fn),
      close: () => undefined,
    };
    runPlane(structuredClone(data), planePort, { clock: this.world.clock, abs: this.world.clock, timers: plane, transport: this.transport(i), log: silentLogger }).catch((err: unknown) =>
      this.violations.push(`t=${this.now} board ${i}'s plane failed: ${(err as Error).message}`),
    );
    return host;
  }

  private transport(i: number): Transport {
    const b = this.boards[i]!;
    const inc = b.incarnation;
    const udp = (): UdpPort => ({
      bind: async () => undefined,
      setBroadcast: () => undefined,
      send: (buf, port, _address, done) => {
        this.transmit(i, port - 2000, Buffer.from(buf));
        done(null);
      },
      onMessage: (fn) => {
        b.onDatagram = (buf, size, from) => {
          if (b.incarnation === inc) fn(buf, size, from);
        };
      },
      onError: () => undefined,
      close: () => {
        if (b.incarnation === inc) b.onDatagram = undefined;
      },
    });
    return { udp, accepting: () => true };
  }

  crash(i: number): void {
    const b = this.boards[i]!;
    b.plane?.stop();
    b.request?.stop();
    Object.assign(b, { plane: undefined, request: undefined, mirror: undefined, dispatch: undefined, onDatagram: undefined });
  }
  setLink(i: number, up: boolean): void {
    this.boards[i]!.linkUp = up;
  }
  partition(groups: number[]): void {
    groups.forEach((g, i) => {
      this.boards[i]!.group = g;
    });
  }
  heal(): void {
    this.loss = 0;
    this.dup = 0;
    for (const b of this.boards) {
      b.group = 0;
      b.linkUp = true;
    }
  }
  /**
   * Hold a board's thread for `ms` (a CPU stall, or a cgroup's quota spent): from now, or in its
   * next turn with setImmediate callbacks queued, between its I/O and them (VirtualLoop.holdBeforeImmediates).
   */
  stall(i: number, thread: 'plane' | 'request', ms: number, when: 'now' | 'before-immediates' = 'now'): void {
    const loop = this.boards[i]![thread];
    if (when === 'now') loop?.hold(ms);
    else loop?.holdBeforeImmediates(ms);
  }

  /** An admin drains `board` at master `m` (its request thread, as the route does). */
  drain(m: number, board: number): void {
    const b = this.boards[m]!;
    b.mirror!.drain(board, true);
    b.drained.add(board);
  }

  reachable(a: number, b: number): boolean {
    const x = this.boards[a]!;
    const y = this.boards[b]!;
    return !!x.mirror && !!y.mirror && x.linkUp && y.linkUp && x.group === y.group;
  }

  private transmit(from: number, to: number, packet: Buffer): void {
    if (to < 0 || to >= this.boards.length || !this.reachable(from, to)) return;
    if (this.rand() < this.loss) return;
    const copies = this.rand() < this.dup ? 2 : 1;
    for (let c = 0; c < copies; c++) {
      this.world.at(this.now + Math.floor(this.rand() * (this.opts.delayMaxMs + 1)), () => {
        if (!this.reachable(from, to)) return;
        const target = this.boards[to]!;
        // In the socket: read when the plane's thread next runs.
        target.plane?.deliver(() => {
          this.heardAt[to]![from] = this.now;
          target.onDatagram?.(packet, packet.length, address(from));
        });
      });
    }
  }

  /** A client request arrives at whichever boards believe they are master. */
  request(serviceMs: number, cls = HIGH): void {
    this.boards.forEach((b, m) => {
      const { mirror, dispatch, request } = b;
      if (!mirror || !dispatch || !request || mirror.role !== 'master') return;
      request.deliver(() => {
        if (b.mirror !== mirror || mirror.role !== 'master') return;
        const info = { cls, bytes: 0, candidates: undefined, safe: true, page: cls === LOW, client: 'sim', session: false, group: undefined, groupMax: 0 };
        const { job, effects } = dispatch.submit(serviceMs, info, this.now);
        if (cls === HIGH) b.high.add(job);
        this.runEffects(m, effects);
      });
    });
  }

  private runEffects(m: number, effects: Effect<number>[]): void {
    const b = this.boards[m]!;
    const { mirror, dispatch, request } = b;
    if (!mirror || !dispatch || !request) return;
    const sameMaster = () => b.mirror === mirror;
    for (const e of effects) {
      if (e.kind === 'refuse') continue;
      const t = e.board;
      // Traffic stops going to a board once it has been silent for Tthreshold (+ the plane's
      // heard-only batching and a heartbeat of slack).
      const slack = this.opts.timing.tthresholdMs + 2 * this.opts.timing.heartbeatMs;
      if (t !== m && this.now - this.heardAt[m]![t]! > slack) this.violations.push(`t=${this.now} master ${m} dispatched to board ${t}, silent for ${this.now - this.heardAt[m]![t]!} ms`);
      if (mirror.table.runstate(t) !== 1) this.violations.push(`t=${this.now} dispatch to runstate ${mirror.table.runstate(t)} board ${t}`);
      if (b.drained.has(t)) this.violations.push(`t=${this.now} master ${m} dispatched to board ${t}, which it was asked to drain`);
      // HIGH before LOW: with the priority scheduler, a page never goes to a board a waiting control request could have taken.
      if (e.job.cls === LOW && this.cfg.qos.scheduler === 'priority') {
        for (const h of b.high) {
          if (h.state !== 'queued') b.high.delete(h);
          else if (!h.tried.includes(t)) this.violations.push(`t=${this.now} a LOW request went to board ${t} while a HIGH one (queued at ${h.enqueuedMs}) waited`);
        }
      }
      this.dispatchedTotal++;
      const target = this.boards[t]!;
      const tMirror = target.mirror;
      const frame = this.frames.request({
        id: e.id,
        master: m,
        term: mirror.term,
        target: t,
        epoch: target.incarnation,
        cls: e.job.cls,
        level: e.level,
        origin: 'client',
        method: 'GET',
        url: e.job.cls === LOW ? '/' : '/cgi-bin/echo',
        headers: [],
        body: Buffer.alloc(0),
      });
      // One outcome per dispatch: the answer, or the loss of the board or of the way to it.
      let settled = false;
      const outcome = (ok: boolean, delivered: boolean) => {
        if (settled) return;
        settled = true;
        request.deliver(() => {
          if (!sameMaster()) return; // the master that sent it is gone: nobody waits for the answer
          if (ok && (t === m || this.reachable(m, t))) {
            this.answered++;
            this.heardAt[m]![t] = this.now; // an answer is word from the board too
            mirror.observeLoad(t, tMirror!.load, this.now);
            this.runEffects(m, dispatch.finished(e.job, 0, this.now));
          } else this.runEffects(m, dispatch.failed(e.job, delivered, this.now));
        });
      };
      const gone = () => target.mirror !== tMirror || !tMirror;
      const delivered = t === m || this.reachable(m, t);
      let executed = false;
      const accept = () => {
        if (gone()) return;
        const f = this.frames.decode(frame);
        if (typeof f === 'string' || f.type !== 'request') return void this.violations.push(`t=${this.now} a frame the codec made did not decode`);
        const refused =
          t === m ? undefined : frameRefusal(f, { self: t, bootEpoch: target.incarnation, term: tMirror!.term, master: tMirror!.master, classes: this.cfg.classes.length }, target.linkGuard);
        if (refused) {
          this.refusedFrames++;
          return outcome(false, true);
        }
        executed = true;
        tMirror!.accepted();
        // The work takes its time on the board, then the answer goes back over the same connection.
        this.world.at(this.now + e.job.payload, () => {
          if (gone()) return outcome(false, true);
          target.request!.deliver(() => {
            tMirror!.finished();
            outcome(true, true);
          });
        });
      };
      if (t === m) accept();
      else if (delivered) target.request?.deliver(accept);
      else this.world.at(this.now + e.job.payload, () => outcome(false, false));
      // A board that dies before it reads the frame: the connection's loss is the failure.
      const watch = () => {
        if (settled || executed) return;
        if (gone()) return outcome(false, delivered);
        this.world.at(this.now + 50, watch);
      };
      if (delivered) this.world.at(this.now + e.job.payload, watch);
    }
  }

  private observe(): void {
    this.boards.forEach((b, i) => {
      const mirror = b.mirror;
      if (!mirror) return;
      try {
        mirror.table.check();
        b.dispatch?.check();
      } catch (e) {
        this.violations.push(`t=${this.now} board ${i}: ${(e as Error).message}`);
      }
      if (mirror.role !== 'master') return;
      let set = this.termHolders.get(mirror.term);
      if (!set) {
        set = new Set();
        this.termHolders.set(mirror.term, set);
      }
      set.add(i);
      if (set.size > 1) this.violations.push(`t=${this.now} term ${mirror.term} has masters ${[...set].join(',')}`);
    });
  }

  /** Runs virtual time to `t`; a board's start settles (its promises run) before the next event. */
  async runUntil(t: number, onStep?: () => void): Promise<void> {
    const onError = (err: unknown) => this.violations.push(`t=${this.now} exception: ${(err as Error).stack ?? err}`);
    for (;;) {
      if (this.drainPending) {
        this.drainPending = false;
        await new Promise<void>((r) => setImmediate(r));
      }
      if (this.world.runUntil(t, onError, () => this.drainPending, onStep)) return;
    }
  }

  masters(): number[] {
    return this.boards.flatMap((b, i) => (b.mirror?.role === 'master' ? [i] : []));
  }
}
