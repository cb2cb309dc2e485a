// The cluster plane: the UDP socket, the heartbeat and STATE timers, the election and the VIP,
// on a worker thread of their own. A request thread busy with load, or stuck in a long
// synchronous task, delays none of it. The request thread keeps a copy of the state (mirror.ts)
// and sends what only it knows: its executing count, the master's dispatch counts, loads heard on
// dispatch answers, the application packets to broadcast, and that it is alive. If it stays
// silent past requestThreadDeadMs, a master steps down on purpose (nothing would serve behind
// it), and the board rejoins as a node once the thread answers again.
import { type Clock, systemClock, type Timers } from '../../shared/clock.ts';
import type { CoreEvent } from '../../shared/election.ts';
import { Registry } from '../../shared/metrics.ts';
import { vipStep } from '../../shared/vip-plan.ts';
import { createLogger, type Logger } from '../log.ts';
import { ClusterLink } from './cluster-link.ts';
import { absClock, aliveEveryMs, type FromPlane, type PlaneData, type PlanePort, type PlaneState, type ToPlane } from './messages.ts';
import { systemTimers } from './system-timers.ts';
import { systemTransport, type Transport } from './transport.ts';
import { VipManager } from './vip.ts';

/** What the plane runs on: the system's clocks, timers and network on a board; the simulator's in the seeded simulator. */
export interface PlaneEnv {
  clock: Clock;
  /** A clock the plane and the request thread share (see messages.ts). */
  abs: Clock;
  timers: Timers;
  /** Else data.transportModule's, else the system's network. */
  transport?: Transport;
  log?: Logger;
}
const SYSTEM: PlaneEnv = { clock: systemClock, abs: absClock, timers: systemTimers };

export async function runPlane(data: PlaneData, port: PlanePort, env: PlaneEnv = SYSTEM): Promise<void> {
  const { cfg } = data;
  const { clock, timers } = env;
  const absNow = () => env.abs.now();
  const self = cfg.boards.find((b) => b.id === data.boardId)!;
  // The key crossed the thread boundary as a Uint8Array.
  const cluster = { ...cfg.cluster, key: Buffer.from(cfg.cluster.key), acceptKeys: cfg.cluster.acceptKeys.map((k) => Buffer.from(k)) };
  const log = env.log ?? createLogger({ board: self.id, thread: 'cluster' });
  const metrics = new Registry({ part: true });
  const transport: Transport = env.transport ?? (data.transportModule ? ((await import(data.transportModule)) as { planeTransport: Transport }).planeTransport : systemTransport);
  const vip = cluster.vip ? new VipManager(cluster.vip, log, metrics) : undefined;
  const post = (m: FromPlane) => port.postMessage(m);
  let pending: CoreEvent[] = [];
  const link = new ClusterLink({ cluster, boards: cfg.boards, limits: cfg.limits }, self, clock, data.bootEpoch, metrics, log, (ev) => pending.push(...ev), transport, timers);
  const resignations = metrics.counter('ews_request_thread_stalls_total', 'Times this board stepped down because its request thread stopped answering');
  resignations.inc({}, 0);
  const statesPosted = metrics.counter('ews_plane_states_posted_total', 'States the cluster plane sent to the request thread');

  const state = (): PlaneState => {
    const core = link.core;
    const m = core.table.membership();
    const toAbs = absNow() - clock.now();
    // Stepped down: this board is no master while it stays silent, whatever its core last was.
    const away = link.isSuspended;
    return {
      role: away ? 'joining' : core.role,
      term: core.term,
      master: away ? -1 : core.master,
      view: core.view(),
      runstates: m.runstates,
      reported: m.reported,
      heard: m.heard.map((h) => h + toAbs),
      epochs: link.epochs(),
      protocols: link.versions(),
      resigned: link.isSuspended,
    };
  };
  // One state to the request thread after each batch of changes: at once when who leads, runs, is
  // drained or speaks which version changed. A state whose only news is loads (every REPORT, and
  // the loads the request thread itself observed on its answers) or when boards were last heard
  // (every packet) waits up to heardEveryMs: each post wakes the request thread (at a 20 ms heartbeat
  // they were a third of an idle board's request-thread CPU; under load, loads changed with every
  // REPORT, about 100 posts a second). A master's request thread hears each board's load on every
  // answer, fresher than a REPORT. Its own silence check may see a board silent that much early.
  const heardEveryMs = Math.max(1, Math.floor(cluster.tthresholdMs / 8));
  let quiet = false;
  let sentKey = '';
  let sentAt = -Infinity;
  link.afterApply = () => {
    if (quiet) return;
    const events = pending;
    const s = state();
    pending = [];
    const key = JSON.stringify([s.role, s.term, s.master, s.resigned, s.view?.master, s.view?.runstate, s.view?.drained, s.runstates, s.epochs, s.protocols]);
    const now = absNow();
    if (events.length === 0 && key === sentKey && now - sentAt < heardEveryMs) return;
    sentKey = key;
    sentAt = now;
    // The address follows the role (shared/vip-plan.ts): a board that sees a newer term lets it go at once.
    for (const e of events) {
      const step = vipStep(e);
      if (step === 'claim') void vip?.claim();
      else if (step === 'release') void vip?.release();
      else if (step === 'announce') void vip?.announce();
    }
    statesPosted.inc();
    post({ t: 'state', state: s, events });
  };
  link.onApp = (msg) => post({ t: 'app', msg });

  // The request thread proves it runs every aliveEvery ms, so its silence here is its stall plus up
  // to aliveEvery: a stall shorter than requestThreadDeadMs never ends mastership, and a longer one
  // ends it at most 2 × aliveEvery late (the watchdog looks every aliveEvery).
  const aliveEvery = aliveEveryMs(data.requestThreadDeadMs);
  let lastAlive = absNow();
  const watchdog = timers.setInterval(() => {
    const silent = absNow() - lastAlive;
    if (!link.isSuspended && silent > data.requestThreadDeadMs + aliveEvery && link.core.role === 'master') {
      log.error({ silentMs: Math.round(silent) }, 'request thread stalled: stepping down');
      resignations.inc();
      link.suspend();
      void vip?.release();
      // The request thread hears it stepped down (schedules and the MQTT bridge stop) once it runs again.
      post({ t: 'state', state: state(), events: [{ kind: 'role', role: 'joining', term: link.core.term, master: -1, previous: 'master' }] });
    }
  }, aliveEvery);
  const heardAlive = () => {
    lastAlive = absNow();
    if (!link.isSuspended) return;
    log.warn('request thread answers again: rejoining as a node');
    link.resume();
  };

  port.on('message', (m: ToPlane) => {
    const now = clock.now();
    switch (m.t) {
      case 'alive':
        heardAlive();
        break;
      case 'load':
        heardAlive();
        // This board's executing count, for its next REPORT (and the master's own table row).
        link.loadChanged(m.load, m.answered);
        break;
      case 'own':
        link.core.table.setOwnCounts(m.own);
        break;
      case 'observe':
        // One state for the request thread after all of them.
        quiet = true;
        // Heard when the request thread read the answer, not when it got round to saying so.
        for (const [board, load, atAbs] of m.loads) link.apply(link.core.observeLoad(board, load, now, Math.min(now, atAbs - absNow() + now)));
        quiet = false;
        link.afterApply();
        break;
      case 'app':
        link.broadcastApp(m.type, m.body);
        break;
      case 'drain':
        link.apply(link.core.setDrained(m.board, m.drained, now));
        break;
      case 'handover':
        link.apply(link.core.handOver(m.board, now));
        break;
      case 'metrics':
        post({ t: 'metrics', text: metrics.render() });
        break;
      case 'release':
        // A board that handed mastership on may still be running its `ip addr del`.
        void (link.core.role === 'master' ? Promise.resolve() : (vip?.release() ?? Promise.resolve())).then(() => post({ t: 'released' }));
        break;
      case 'close':
        timers.clear(watchdog);
        link.close();
        void (vip?.release() ?? Promise.resolve()).then(() => {
          post({ t: 'closed' });
          port.close();
        });
        break;
    }
  });

  await vip?.releaseStale();
  await link.start();
  post({ t: 'started', state: state() });
}
