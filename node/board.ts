// A board: the composition root. It builds the adapters around the pure cores and wires them
// together; every decision is made in the cores, every piece of I/O in the adapters it builds.
import { existsSync } from 'node:fs';
import type { Socket } from 'node:net';
import { systemClock } from '../shared/clock.ts';
import type { BoardConfig, Config } from '../shared/config.ts';
import { FrameCodec } from '../shared/dispatch-frame.ts';
import { EwsError } from '../shared/errors.ts';
import { IdempotencyStore } from '../shared/idempotency-store.ts';
import { Registry } from '../shared/metrics.ts';
import { AuthGuard } from './auth/guard.ts';
import { SessionSigner } from './auth/session.ts';
import type { BoardOptions } from './board-options.ts';
import { boardMetrics } from './cluster/board-metrics.ts';
import { ClusterReactions } from './cluster/cluster-reactions.ts';
import { type ClusterView, clusterView } from './cluster/cluster-view.ts';
import { ClusterMirror } from './cluster-plane/mirror.ts';
import { systemTransport } from './cluster-plane/transport.ts';
import { ConfigApply } from './config/config-apply.ts';
import { ConfigPush } from './config/config-push.ts';
import { RunningConfig } from './config/running-config.ts';
import { DeviceDirectory } from './devices/device-directory.ts';
import { DeviceManager } from './devices/device-manager.ts';
import { openRealPort } from './devices/serial-line.ts';
import { Executor } from './exec/executor.ts';
import { Handlers } from './exec/handlers.ts';
import { DispatchClient, linkLimits, serveLink } from './http/dispatch-link.ts';
import { EventsHub } from './http/events-hub.ts';
import { FrontServer } from './http/front-server.ts';
import { Intake, type IntakeDeps } from './http/intake.ts';
import { MasterRelay } from './http/master-relay.ts';
import { Rehearsal } from './http/rehearsal.ts';
import { Router } from './http/router.ts';
import { SessionRoutes } from './http/sessions.ts';
import { idemBroadcast } from './idempotency/idem-broadcast.ts';
import { IdempotentExecutor } from './idempotency/idempotent-exec.ts';
import { createLogger, type Logger } from './log.ts';
import { Loopback } from './services/loopback.ts';
import { ModbusGateway } from './services/modbus-gateway.ts';
import { MqttBridge } from './services/mqtt-bridge.ts';
import { Notifier } from './services/notifier.ts';
import { Schedules } from './services/schedules.ts';
import { openBoardState } from './state/board-state.ts';
import { UpgradeBoard } from './upgrade/upgrade-board.ts';
import { UpgradeRollout } from './upgrade/upgrade-rollout.ts';

export class Board {
  /** The config it started with; `running` has the one it runs now (a push changes parts live). */
  readonly cfg: Config;
  readonly running: RunningConfig;
  readonly self: BoardConfig;
  readonly metrics = new Registry();
  /** Who may do what (its users are replaced on a SIGHUP reload). */
  readonly guard: AuthGuard;
  readonly log: Logger;
  readonly mirror: ClusterMirror;
  readonly intake: Intake;
  readonly devices: DeviceManager;
  readonly directory: DeviceDirectory;
  private readonly rollout: UpgradeRollout;
  readonly idem: IdempotentExecutor;
  private readonly schedules: Schedules;
  private readonly mqtt: MqttBridge;
  private readonly front: FrontServer;
  private readonly rehearsal: Rehearsal;
  private readonly relay: MasterRelay;
  private readonly reactions: ClusterReactions;
  private readonly hub: EventsHub;
  private readonly stopMetrics: () => void;
  private closing = false;

  private constructor(opts: BoardOptions) {
    const { cfg } = opts;
    this.cfg = cfg;
    const running = new RunningConfig(cfg, opts.raw);
    this.running = running;
    const self = cfg.boards.find((b) => b.id === opts.boardId);
    if (!self) throw new EwsError('BAD_REQUEST', `board "${opts.boardId}" is not in the config's boards`);
    this.self = self;
    const clock = opts.clock ?? systemClock;
    const log = opts.log ?? createLogger({ board: self.id });
    this.log = log;
    const metrics = this.metrics;
    const l = cfg.limits;

    const devices = new DeviceManager(cfg.devices, self.index, opts.openPort ?? openRealPort, log, { queueMax: l.serialQueueMax, backoffMaxMs: l.serialBackoffMaxMs });
    const directory = new DeviceDirectory(cfg.devices, (b) => this.mirror.table.drained(b));
    const state = openBoardState(opts.stateDir, cfg, self, log);
    const store = new IdempotencyStore(l.idempotencyKeysMax, l.idempotencyTtlMs);
    const announce = idemBroadcast(() => this.mirror, cfg);
    const idem = new IdempotentExecutor(store, self.index, Date.now, announce, state.intents);
    const handlers = new Handlers(running, self, devices, directory, idem, log);
    const guard = new AuthGuard(cfg, new SessionSigner(cfg.cluster.key, state.revoked, cfg.cluster.acceptKeys));
    const service = (name: string) => () => guard.serviceHeaders(name, Date.now());
    const [view, closing] = [() => this.view(), () => this.closing];
    const schedules = new Schedules(running, log, metrics, service('schedule'), new Loopback(self, opts.tls, 4));
    const sources = { cluster: view, devices: () => directory.list(), alarms: () => this.reactions.operator.alarms.list() };
    const mqtt = new MqttBridge(cfg, self, sources, log, metrics, service('mqtt'), new Loopback(self, opts.tls, 4));
    const gateway = new ModbusGateway(running, log, metrics, service('gateway'), new Loopback(self, opts.tls, 8));
    const hub = new EventsHub(l.sseClientsMax, l.sseClientsPerUserMax, l.sseBytesMax);
    const transport = opts.transport ?? systemTransport;
    // The cluster protocol (UDP, heartbeats, election, the VIP) on a thread of its own.
    const mirror = new ClusterMirror(cfg, self, state.bootEpoch, clock, log, metrics, opts.planeTransport);
    const frames = new FrameCodec(cfg.cluster.key, Math.max(l.bodyBytesMax, l.answerBytesMax) + l.headerBytesMax + 1024, cfg.cluster.acceptKeys);
    const linkDrops = metrics.counter('ews_link_dropped_total', 'Dispatch-link frames refused (the connection is closed), by reason');
    const executor = new Executor(cfg, self, mirror, handlers, metrics, mirror.bootEpoch);
    const limits = linkLimits(cfg, opts.tls !== undefined);
    const [boardsNow, devicesNow, dropLink] = [() => running.cfg.boards, () => running.cfg.devices, (reason: string) => linkDrops.inc({ reason })];
    const dispatch = new DispatchClient(boardsNow, frames, l.headersTimeoutMs, dropLink, limits.requestBytesMax, (b) => mirror.protocolOf(b), opts.tls);
    const [epochOf, executeLocal]: [IntakeDeps['epochOf'], IntakeDeps['executeLocal']] = [(board) => mirror.epochOf(board), (run, done) => executor.local(run, done)];
    const programBoards = (n: string): readonly number[] | undefined => reactions.programs.boardsWith(n);
    const intakeDeps = { cfg, self: self.index, clock, mirror, dispatchLink: dispatch, epochOf, executeLocal, metrics, log, idempotency: store, programBoards, devices: devicesNow };
    // Spread, as the rehearsal's stage spreads them: one shape for the live and the stage's (http/rehearsal.ts).
    const intake = new Intake({ ...intakeDeps });
    const [relay, sync, tls, owned] = [new MasterRelay(cfg, self, opts.tls), service('sync'), opts.tls, handlers.programs];
    const notifier = cfg.notify && new Notifier(cfg, cfg.notify, () => this.reactions.operator, log, metrics);
    const heard = (b: number) => push.converge(b);
    const parts = { running, self: self.index, log, mirror, intake, relay, devices, directory, idem, state, hub, mqtt, schedules, gateway, view, closing, sync, tls, notifier, owned, heard };
    const reactions = new ClusterReactions({ cfg, ...parts });
    const operator = () => reactions.operator;
    const [file, restart, portExists] = [opts.pushedConfigFile, opts.restart, opts.openPort ? () => true : existsSync];
    const apply = new ConfigApply({ running, started: cfg, self, log, file, restart, portExists, guard, intake, devices, directory, operator, notifier, schedules });
    const push = new ConfigPush({ running, self, mirror, health: () => reactions.health, operator, apply, intake, tls, log, restart });
    const upBoard = new UpgradeBoard({ running, self, log, exit: opts.exit });
    this.rollout = new UpgradeRollout({ running, self, mirror, health: () => reactions.health, operator, board: upBoard, intake, tls, log, exit: opts.exit });
    const upgrade = { board: upBoard, rollout: this.rollout };
    devices.on('snapshot', (snap) => reactions.onSnapshot(snap));
    mirror.onEvents = (ev) => reactions.onEvents(ev);
    mirror.afterApply = () => intake.pump();
    mirror.onApp = (msg) => reactions.onApp(msg);

    const sessions = new SessionRoutes(cfg, guard, state.revoked, (revoked) => reactions.loggedOut(revoked));
    const watched = () => reactions.watched();
    const routerDeps = { cfg, self, mirror, guard, sessions, intake, relay, hub, metrics, operator, view, watched, closing, running, push, apply, upgrade, tls };
    const router = new Router({ ...routerDeps });
    this.rehearsal = new Rehearsal({ router: routerDeps, intake: intakeDeps, frames, clock, log, tls });
    const known = (user: string) => guard.users.some((u) => u.name === user);
    sessions.onLogin = (user, ok, client) => reactions.operator.recordLogin(user, ok, client, known(user));
    const serveFrames = (sock: Socket, rest: Buffer, version: number) =>
      serveLink(sock, rest, version, frames, { onRequest: (f, answer) => executor.fromLink(f, answer), onDrop: dropLink }, 2 * l.inFlightPerBoardMax, limits);
    this.front = new FrontServer(l, { request: (req, res) => router.handle(req, res), link: serveFrames, accept: () => transport.accepting(), lean: router }, log, opts.tls);
    [this.devices, this.directory, this.idem, this.guard, this.schedules, this.mqtt] = [devices, directory, idem, guard, schedules, mqtt];
    [this.hub, this.mirror, this.intake, this.relay, this.reactions] = [hub, mirror, intake, relay, reactions];
    this.stopMetrics = boardMetrics(metrics, mirror, view, devices, idem, state, hub, handlers);
  }

  static async start(opts: BoardOptions): Promise<Board> {
    const b = new Board(opts);
    // With a floating address the board must accept connections to it too.
    const host = b.cfg.cluster.vip ? '0.0.0.0' : b.self.address;
    await b.front.listen(b.self.httpPort, host);
    // Load the large optional libraries before joining the cluster: compiling them stalls the event loop (hundreds of ms on a
    // small board), which after joining would look like a dead master and hand mastership on.
    if (b.cfg.mqtt) await import('mqtt');
    if (b.cfg.devices.some((d) => d.attach.some((a) => a.board === b.self.index && a.port !== ''))) await import('serialport');
    void b.mqtt.start();
    await b.mirror.start();
    b.idem.announceRecovered();
    b.devices.start();
    b.reactions.start();
    b.rehearsal.start();
    b.log.info({ http: `${host}:${b.self.httpPort}`, udp: b.self.udpPort, boards: b.cfg.boards.length }, 'board up');
    return b;
  }

  /** The state table as this board sees it (/api/cluster). */
  view(): ClusterView {
    return clusterView(this.cfg, this.mirror, this.reactions.health, this.rollout?.progress ?? null);
  }

  /** Drop every TCP connection, in and out (the network changed under the board). */
  dropConnections(): void {
    this.front.dropAll();
    this.relay.close();
    this.intake.dropConnections();
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    // The cluster address leaves first, then what it relays is answered (docs/operations.md, "Stopping a board").
    await this.mirror.addressReleased();
    await this.relay.settled(this.cfg.limits.requestTimeoutMs);
    await this.reactions.close();
    this.devices.stop();
    this.schedules.close();
    await this.mqtt.close();
    for (const part of [this.hub, this.intake, this.rehearsal]) part.close();
    this.stopMetrics();
    await this.mirror.close(); // a master lets the address go here
    await this.relay.settled(this.cfg.limits.requestTimeoutMs); // relayed late: taken on the address before it left
    await this.front.close();
    this.relay.close();
  }
}
