// A seeded, deterministic simulator of a whole EWS cluster over the pure cores
// (TigerBeetle VOPR style): virtual time, a lossy network, partitions, crashes, and a dispatch
// workload. Everything that decides is the runtime's own: the cluster core, the master's
// dispatch core, the UDP codec with its replay guard, and the dispatch-link frames with theirs.

import { DispatchCore, type Effect } from '../../master/dispatch-core.ts';
import { type Config, parseConfig } from '../../shared/config.ts';
import { FrameCodec } from '../../shared/dispatch-frame.ts';
import { DispatchReplayGuard } from '../../shared/dispatch-replay-guard.ts';
import { ClusterCore, type CoreConfig, type Ready } from '../../shared/election.ts';
import { type Codec, createCodec, type Message } from '../../shared/protocol.ts';
import { ReplayGuard } from '../../shared/replay-guard.ts';

const KEY = Buffer.from('dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4', 'hex');

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

interface Ev {
  at: number;
  seq: number;
  run: () => void;
}

class Heap {
  private a: Ev[] = [];
  get size(): number {
    return this.a.length;
  }
  peek(): Ev | undefined {
    return this.a[0];
  }
  push(e: Ev): void {
    const a = this.a;
    a.push(e);
    for (let i = a.length - 1; i > 0; ) {
      const p = (i - 1) >> 1;
      if (less(a[p]!, a[i]!)) break;
      [a[p], a[i]] = [a[i]!, a[p]!];
      i = p;
    }
  }
  pop(): Ev | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) {
      a[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1,
          r = l + 1;
        let m = i;
        if (l < a.length && less(a[l]!, a[m]!)) m = l;
        if (r < a.length && less(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i]!, a[m]!];
        i = m;
      }
    }
    return top;
  }
}
const less = (x: Ev, y: Ev) => x.at < y.at || (x.at === y.at && x.seq < y.seq);

export interface SimOptions {
  boards: number;
  loss: number; // probability a packet is lost
  dup: number; // probability a packet is delivered twice
  delayMaxMs: number; // uniform 0..delayMaxMs (reordering)
  timing: Omit<CoreConfig, 'self' | 'boards'>;
  capacity: number;
  /** The master's share of the work (cluster.masterWork); the runtime's default when absent. */
  masterWork?: 'forward' | 'spill' | 'share';
}

interface Board {
  core: ClusterCore | undefined;
  dispatch: DispatchCore<number> | undefined;
  incarnation: number;
  group: number;
  linkUp: boolean;
  tickAt: number;
  tickToken: number;
  udpGuard: ReplayGuard;
  linkGuard: DispatchReplayGuard;
  counter: number;
}

export class ClusterSim {
  now = 0;
  private seqNo = 0;
  private readonly events = new Heap();
  readonly boards: Board[];
  readonly violations: string[] = [];
  /** term -> boards that have been master in it */
  readonly termHolders = new Map<number, Set<number>>();
  private loss: number;
  private readonly udp: Codec;
  private readonly frames = new FrameCodec(KEY, 1 << 16);
  private readonly cfg: Config;
  /** Dispatch frames a board refused (replay, stale master): counted, never executed. */
  refusedFrames = 0;
  answered = 0;
  private dup: number;
  dispatchedTotal = 0;
  /** heardAt[m][t]: when board m last received a packet from t */
  private heardAt: number[][];

  constructor(
    readonly opts: SimOptions,
    readonly rand: () => number,
  ) {
    this.loss = opts.loss;
    this.dup = opts.dup;
    this.boards = Array.from({ length: opts.boards }, () => ({
      core: undefined,
      dispatch: undefined,
      incarnation: 0,
      group: 0,
      linkUp: true,
      tickAt: -1,
      tickToken: 0,
      udpGuard: new ReplayGuard(opts.boards),
      linkGuard: new DispatchReplayGuard(4096),
      counter: 0,
    }));
    this.heardAt = Array.from({ length: opts.boards }, () => new Array<number>(opts.boards).fill(0));
    this.udp = createCodec({ key: KEY, cluster: 'sim', boards: opts.boards, packetBytesMax: 1400 });
    this.cfg = parseConfig({
      cluster: { name: 'sim', key: KEY.toString('hex'), broadcast: 'peers', ...opts.timing, ...(opts.masterWork ? { masterWork: opts.masterWork } : {}) },
      boards: Array.from({ length: opts.boards }, (_, i) => ({ id: `b${i}`, address: '127.0.0.1', httpPort: 1000 + i, udpPort: 2000 + i })),
      limits: { inFlightPerBoardMax: opts.capacity, queueMax: 64, requestTimeoutMs: 5000 },
      classes: [{ name: 'control', priority: 0, deadlineMs: 3000, match: [{ pathPrefix: '/' }] }],
      auth: { disabled: true },
    });
  }

  private at(t: number, run: () => void): void {
    this.events.push({ at: t, seq: this.seqNo++, run });
  }

  start(i: number): void {
    const b = this.boards[i]!;
    if (b.core) return;
    b.incarnation++;
    b.counter = 0;
    b.udpGuard = new ReplayGuard(this.opts.boards);
    b.linkGuard = new DispatchReplayGuard(4096);
    b.core = new ClusterCore({ ...this.opts.timing, self: i, boards: this.opts.boards }, this.now);
    b.dispatch = new DispatchCore<number>(this.cfg, i, b.core.table, this.rand);
    this.heardAt[i]!.fill(this.now);
    this.apply(i, b.core.start(this.now));
    this.scheduleTick(i);
  }
  crash(i: number): void {
    this.boards[i]!.core = undefined;
    this.boards[i]!.dispatch = undefined;
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

  reachable(a: number, b: number): boolean {
    const x = this.boards[a]!,
      y = this.boards[b]!;
    return !!x.core && !!y.core && x.linkUp && y.linkUp && x.group === y.group;
  }

  /** One pending tick per board, at the time its core asks for (as the real adapter does). */
  private scheduleTick(i: number): void {
    const b = this.boards[i]!;
    const core = b.core;
    if (!core) return;
    const t = Math.max(this.now + 1, Math.ceil(core.nextWakeMs()));
    if (b.tickAt === t) return;
    b.tickAt = t;
    const token = ++b.tickToken;
    this.at(t, () => {
      if (b.core !== core || b.tickToken !== token) return;
      b.tickAt = -1;
      this.apply(i, core.tick(this.now));
      if (core.role === 'master') this.runEffects(i, b.dispatch!.tick(this.now));
      this.scheduleTick(i);
    });
  }

  private apply(from: number, r: Ready): void {
    for (const o of r.send) {
      const targets = o.to === 'all' ? this.boards.map((_, j) => j).filter((j) => j !== from) : [o.to];
      for (const to of targets) this.transmit(from, to, o.msg);
    }
    this.observe();
  }

  private transmit(from: number, to: number, msg: Message): void {
    if (!this.reachable(from, to)) return;
    if (this.rand() < this.loss) return;
    const sender = this.boards[from]!;
    const packet = this.udp.encode(msg, { epoch: sender.incarnation, counter: ++sender.counter });
    const copies = this.rand() < this.dup ? 2 : 1;
    for (let c = 0; c < copies; c++) {
      const t = this.now + Math.floor(this.rand() * (this.opts.delayMaxMs + 1));
      this.at(t, () => {
        if (!this.reachable(from, to)) return;
        const target = this.boards[to]!;
        const d = this.udp.decode(packet);
        if (!d.ok) return void this.violations.push(`t=${this.now} a packet the codec made did not decode: ${d.reason}`);
        if (!target.udpGuard.accept(d.msg.sender, d.env)) return; // a duplicate: the replay guard drops it
        this.heardAt[to]![from] = this.now;
        this.apply(to, target.core!.receive(d.msg, this.now));
        this.scheduleTick(to);
      });
    }
  }

  /** A client request arrives at whichever boards believe they are master: each one's dispatch core decides. */
  request(serviceMs: number): void {
    this.boards.forEach((b, m) => {
      if (b.core?.role !== 'master') return;
      this.runEffects(m, b.dispatch!.submit(serviceMs, { cls: 0, bytes: 0, candidates: undefined, safe: true, page: false, client: 'sim', session: false }, this.now).effects);
    });
  }

  private runEffects(m: number, effects: Effect<number>[]): void {
    const b = this.boards[m]!;
    const core = b.core!;
    const dispatch = b.dispatch!;
    const mInc = b.incarnation;
    const sameMaster = () => b.incarnation === mInc && b.dispatch === dispatch;
    for (const e of effects) {
      if (e.kind === 'refuse') continue;
      const t = e.board;
      // Invariant: traffic stops going to a board once it has been silent for Tthreshold (+ a heartbeat of slack).
      if (t !== m && this.now - this.heardAt[m]![t]! > this.opts.timing.tthresholdMs + this.opts.timing.heartbeatMs) {
        this.violations.push(
          `t=${this.now} master ${m} dispatched to board ${t}, silent for ${this.now - this.heardAt[m]![t]!} ms (its table heard it at ${core.table.lastHeard(t)}, runstate ${core.table.runstate(t)}, role ${core.role} term ${core.term})`,
        );
      }
      if (core.table.runstate(t) !== 1) this.violations.push(`t=${this.now} dispatch to runstate ${core.table.runstate(t)} board ${t}`);
      this.dispatchedTotal++;
      const frame = this.frames.request({
        id: e.id,
        master: m,
        term: core.term,
        target: t,
        epoch: this.boards[t]!.incarnation,
        cls: 0,
        tree: e.tree,
        origin: 'client',
        method: 'GET',
        url: '/cgi-bin/echo',
        headers: [],
        body: Buffer.alloc(0),
      });
      const target = this.boards[t]!;
      const tInc = target.incarnation;
      const tCore = target.core!;
      const delivered = t === m || this.reachable(m, t);
      let executed = false;
      if (delivered) {
        const f = this.frames.decode(frame);
        if (typeof f === 'string' || f.type !== 'request') {
          this.violations.push(`t=${this.now} a frame the codec made did not decode`);
        } else if (t !== m && (f.target !== t || !target.linkGuard.accept(f))) {
          this.refusedFrames++;
        } else {
          executed = true;
          tCore.accepted();
        }
      }
      this.at(this.now + e.job.payload, () => {
        const alive = target.incarnation === tInc && target.core === tCore;
        if (executed && alive) tCore.finished();
        if (!sameMaster()) return; // the master that sent it is gone: nobody waits for the answer
        // The answer comes back over the same connection, or the connection's loss is the failure.
        if (executed && alive && (t === m || this.reachable(m, t))) {
          this.answered++;
          this.heardAt[m]![t] = this.now; // an answer is word from the board too
          this.apply(m, core.observeLoad(t, tCore.load, this.now));
          this.runEffects(m, dispatch.finished(e.job, 0, this.now));
        } else {
          this.runEffects(m, dispatch.failed(e.job, delivered, this.now));
        }
        this.scheduleTick(m);
      });
    }
    this.observe();
  }

  private observe(): void {
    this.boards.forEach((b, i) => {
      const c = b.core;
      if (!c) return;
      try {
        c.table.check();
        b.dispatch?.check();
      } catch (e) {
        this.violations.push(`t=${this.now} board ${i}: ${(e as Error).message}`);
      }
      if (c.role === 'master') {
        let set = this.termHolders.get(c.term);
        if (!set) {
          set = new Set();
          this.termHolders.set(c.term, set);
        }
        set.add(i);
        if (set.size > 1) this.violations.push(`t=${this.now} term ${c.term} has masters ${[...set].join(',')}`);
      }
    });
  }

  runUntil(t: number, onStep?: () => void): void {
    while (this.events.size > 0 && this.events.peek()!.at <= t) {
      const e = this.events.pop()!;
      this.now = e.at;
      try {
        e.run();
      } catch (err) {
        this.violations.push(`t=${this.now} exception: ${(err as Error).message}`);
      }
      onStep?.();
    }
    this.now = t;
  }

  masters(): number[] {
    return this.boards.flatMap((b, i) => (b.core?.role === 'master' ? [i] : []));
  }
}
