// What a board does when the cluster changes: role changes (schedules, MQTT, handing the queue to
// a new master; the VIP follows the role in the cluster plane itself), boards going down, and the application data boards share (device
// readings, idempotency records, revoked sessions, health, the audit log); plus this board's own device readings
// going out, and the cluster view pushed to SSE clients and MQTT.
import type { Config } from '../../shared/config.ts';
import type { CoreEvent } from '../../shared/election.ts';
import { EwsError } from '../../shared/errors.ts';
import { parseIdem } from '../../shared/idempotency-store.ts';
import { ProgramBook } from '../../shared/program-book.ts';
import type { AppMessage } from '../../shared/protocol.ts';
import type { RevokedEntry } from '../auth/revoked-sessions.ts';
import type { ClusterMirror } from '../cluster-plane/mirror.ts';
import type { RunningConfig } from '../config/running-config.ts';
import type { DeviceDirectory } from '../devices/device-directory.ts';
import { parseSnapshot } from '../devices/device-directory.ts';
import type { DeviceManager, DeviceSnapshot } from '../devices/device-manager.ts';
import type { EventsHub } from '../http/events-hub.ts';
import { sendError } from '../http/http-io.ts';
import type { Intake } from '../http/intake.ts';
import type { MasterRelay } from '../http/master-relay.ts';
import type { IdempotentExecutor } from '../idempotency/idempotent-exec.ts';
import type { Logger } from '../log.ts';
import { fetchSync } from '../operator/gap-fill.ts';
import { OperatorState } from '../operator/operator-state.ts';
import type { ModbusGateway } from '../services/modbus-gateway.ts';
import type { MqttBridge } from '../services/mqtt-bridge.ts';
import type { Notifier } from '../services/notifier.ts';
import type { Schedules } from '../services/schedules.ts';
import type { BoardState } from '../state/board-state.ts';
import type { TlsMaterial } from '../tls-material.ts';
import { HealthBook } from './board-health.ts';
import type { ClusterView } from './cluster-view.ts';
import { broadcastList } from './list-broadcast.ts';

/** How often a board re-broadcasts its device readings (boards that join later learn them). */
const DEVICE_REFRESH_MS = 5000;
/** Readings of one device within this window go out in one packet. */
const DEVICE_COALESCE_MS = 100;
/** How often a board samples and broadcasts its health. */
const HEALTH_EVERY_MS = 5000;
/** How often SSE clients get the cluster view while any is connected. */
const VIEW_PUSH_MS = 250;

export interface ReactionDeps {
  cfg: Config;
  /** The config running now (a push changes its devices, alarms and version live). */
  running: RunningConfig;
  /** A board's HEALTH was heard (the master sends a board with an older config its own). */
  heard(board: number): void;
  self: number;
  log: Logger;
  mirror: ClusterMirror;
  /** This board's CGI programs. */
  owned: ReadonlyMap<string, { readonly name: string; readonly hash: string }>;
  intake: Intake;
  relay: MasterRelay;
  devices: DeviceManager;
  directory: DeviceDirectory;
  idem: IdempotentExecutor;
  /** What this board keeps in its stateDir (logged-out sessions, the operator's state). */
  state: BoardState;
  hub: EventsHub;
  mqtt: MqttBridge;
  schedules: Schedules;
  /** The Modbus TCP gateway, served while master. */
  gateway: ModbusGateway;
  view(): ClusterView;
  closing(): boolean;
  /** A short-lived service session's headers, for asking the master for a gap (/api/sync). */
  sync(): Record<string, string>;
  tls: TlsMaterial | undefined;
  /** Alarm notifications, sent while this board is master (with a notify section). */
  notifier: Notifier | undefined;
}

export class ClusterReactions {
  private readonly devicePending = new Map<string, NodeJS.Timeout>();
  private deviceRefresh: NodeJS.Timeout | undefined;
  private healthTimer: NodeJS.Timeout | undefined;
  private alarmTimer: NodeJS.Timeout | undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  /** What this board may have missed starts here: at boot its newest data on disk, then when it loses its master. None: nothing missed. */
  private gapFrom: number | undefined;
  private masterSince = 0;
  /** This board's devices' online flags as last reported (the log notes each change). */
  private readonly ownOnline = new Map<string, boolean>();
  private hubTimer: NodeJS.Timeout | undefined;
  private lastPublished = '';
  /** When each board last got the revoked sessions on joining. */
  private readonly revokedSentAt = new Map<number, number>();

  /** Every board's health: this one sampled, the others' from HEALTH packets. */
  readonly health: HealthBook;
  /** Which boards have which CGI programs (this board's own included). */
  readonly programs: ProgramBook;
  /** This boot's generation of this board's program list. */
  private readonly programsGen = Math.floor(Math.random() * 2 ** 31);

  /** Trends, alarms and the audit log. */
  readonly operator: OperatorState;

  constructor(private readonly d: ReactionDeps) {
    this.health = new HealthBook(d.cfg.boards.length, d.self, d.state.durable, d.running);
    this.programs = new ProgramBook(d.cfg.boards.length);
    this.programs.apply(d.self, { gen: this.programsGen, list: this.ownProgramList() });
    this.operator = new OperatorState({
      cfg: d.cfg,
      self: d.self,
      bootEpoch: d.mirror.bootEpoch,
      broadcast: (type, body) => d.mirror.broadcastApp(type, body),
      isMaster: () => d.mirror.role === 'master',
      devices: () => d.directory.list(),
      boards: () => d.view().boards,
      alarmsChanged: (list) => {
        d.hub.publish('alarms', list);
        d.mqtt.publishState();
      },
      logged: (e) => d.hub.publish('log', e),
      disk: d.state.disk,
    });
    const newest = this.operator.newestAt();
    this.gapFrom = Number.isFinite(newest) ? newest : 0;
  }

  /** Start re-broadcasting this board's readings. */
  start(): void {
    this.deviceRefresh = setInterval(() => {
      for (const snap of this.d.devices.snapshots()) this.d.mirror.broadcastApp('DEVICE', { ...snap });
    }, DEVICE_REFRESH_MS);
    this.deviceRefresh.unref();
    const health = () => {
      this.d.mirror.broadcastApp('HEALTH', { ...this.health.sample() });
      this.announcePrograms();
    };
    health();
    this.healthTimer = setInterval(health, HEALTH_EVERY_MS);
    this.healthTimer.unref();
    // Built-in alarms hold for a few seconds before they are raised: time alone can raise them.
    this.alarmTimer = setInterval(() => this.operator.evaluate(), 1000);
    this.alarmTimer.unref();
    if (this.d.state.disk) {
      this.flushTimer = setInterval(() => this.operator.flushHistory(), this.d.cfg.history.flushS * 1000);
      this.flushTimer.unref();
    }
  }

  /** Stops the timers; resolves once this board's state is on disk. */
  async close(): Promise<void> {
    if (this.hubTimer) clearInterval(this.hubTimer);
    if (this.deviceRefresh) clearInterval(this.deviceRefresh);
    if (this.healthTimer) clearInterval(this.healthTimer);
    if (this.alarmTimer) clearInterval(this.alarmTimer);
    if (this.flushTimer) clearInterval(this.flushTimer);
    for (const t of this.devicePending.values()) clearTimeout(t);
    this.d.notifier?.close();
    this.d.gateway.close();
    this.operator.flushHistory();
    await this.d.state.disk?.close();
    await this.d.state.revoked.drained();
  }

  /** A board that was away (booted, or lost its master) asks the master for what it missed: the log and the history since then. */
  private fillGap(master: number): void {
    const { d } = this;
    const since = this.gapFrom;
    if (since === undefined || master === d.self || master < 0) return;
    this.gapFrom = undefined;
    // Readings that arrive meanwhile are merged with what comes, in time order.
    void fetchSync(d.cfg.boards[master]!, d.tls, since, d.sync(), d.cfg.limits.requestTimeoutMs).then(
      (body) => {
        const got = this.operator.mergeSync(body);
        d.log.info({ master: d.cfg.boards[master]!.id, since, ...got }, 'filled the gap from the master');
      },
      (err: Error) => {
        this.gapFrom = Math.min(this.gapFrom ?? since, since);
        d.log.warn({ master: d.cfg.boards[master]!.id, err: err.message }, 'could not fill the gap from the master; will try at the next master');
      },
    );
  }

  onEvents(events: CoreEvent[]): void {
    const { d } = this;
    for (const e of events) {
      if (e.kind === 'role') {
        d.log.info({ role: e.role, term: e.term, master: d.cfg.boards[e.master]?.id, previous: e.previous }, 'role');
        d.mqtt.setMaster(e.role === 'master');
        if (!d.closing()) d.gateway.setMaster(e.role === 'master');
        d.notifier?.setMaster(e.role === 'master');
        if (e.role === 'master') {
          this.operator.record('master', { subject: d.cfg.boards[d.self]!.id, text: `${d.cfg.boards[d.self]!.id} became master (term ${e.term})` });
          d.mqtt.republish();
          if (!d.closing()) d.schedules.start();
          this.masterSince = Date.now();
        } else if (e.role === 'node') {
          // What it may have missed: while it was master (perhaps alone, in a partition), or while it had no master.
          const from = (e.previous === 'master' ? this.masterSince : Date.now()) - d.cfg.cluster.tmaxMs - 1000;
          this.gapFrom = Math.min(this.gapFrom ?? from, from);
          this.fillGap(e.master);
        } else this.gapFrom ??= Date.now() - d.cfg.cluster.tmaxMs - 1000;
        if (e.role !== 'master' && e.previous === 'master') {
          d.schedules.stop();
          // Step down: whatever is still queued here goes to the new master (none yet: 503, retry).
          for (const p of d.intake.drain()) {
            if (d.mirror.master >= 0 && d.mirror.master !== d.self) d.relay.relay(d.mirror.master, p.req, p.res, p.body);
            else sendError(p.res, new EwsError('NO_MASTER'));
          }
        }
      } else if (e.kind === 'runstate') {
        d.log.info({ peer: d.cfg.boards[e.board]?.id, runstate: e.runstate }, 'board runstate');
        if (e.runstate === -1) d.directory.boardDown(e.board);
        this.operator.evaluate();
      } else if (e.kind === 'joined') {
        // A board (re)joined: it gets every logout it may have missed while away (once per join, not per JOIN packet).
        const now = Date.now();
        if (now - (this.revokedSentAt.get(e.board) ?? -Infinity) >= d.cfg.cluster.tmaxMs) {
          this.revokedSentAt.set(e.board, now);
          this.sendRevoked(d.state.revoked.list(now));
          // And the recent log, with the alarm acknowledgements in it.
          this.operator.sendRecent();
        }
      } else if (e.kind === 'stale-master') {
        d.log.warn({ peer: d.cfg.boards[e.board]?.id, term: e.term }, 'another board still claims to be master');
        d.mqtt.republish();
      }
    }
    this.publishCluster();
  }

  /** DEVICE, IDEM, REVOKE, HEALTH and LOG packets from other boards. */
  onApp(msg: AppMessage): void {
    const { d } = this;
    if (msg.type === 'REVOKE') {
      const list = Array.isArray(msg.body.list) ? msg.body.list : [];
      this.endStreams(d.state.revoked.add(list, Date.now()));
      return;
    }
    if (msg.type === 'HEALTH') {
      if (this.health.apply(msg.sender, msg.body)) d.heard(msg.sender);
      return;
    }
    if (msg.type === 'PROGRAMS') {
      this.programs.apply(msg.sender, msg.body);
      return;
    }
    if (msg.type === 'LOG') {
      this.operator.onLog(msg.body);
      return;
    }
    if (msg.type === 'IDEM') {
      const rec = parseIdem(msg.body, d.cfg.boards.length);
      if (rec && rec.board === msg.sender) d.idem.store.put(rec, Date.now()); // past even a peer's room: dropped and counted
      return;
    }
    const snap = parseSnapshot(msg.body, d.running.cfg.devices);
    if (snap && d.directory.apply(snap, msg.sender)) {
      this.operator.reading(snap.id, snap.points, snap.updatedAt);
      this.operator.evaluate();
      d.hub.publish('device', snap);
      d.mqtt.publishState();
    }
  }

  private ownProgramList(): Array<[string, string]> {
    return [...this.d.owned.values()].map((p) => [p.name, p.hash]);
  }

  /** This board's programs to every board, as many per packet as fit, with the health beat (a board that was away learns them within one). */
  private announcePrograms(): void {
    const { d } = this;
    const list = this.ownProgramList();
    if (list.length === 0) return;
    broadcastList((body) => d.mirror.broadcastApp('PROGRAMS', { gen: this.programsGen, list: body.list }), list, d.cfg.limits.udpPacketBytesMax - 32, d.cfg.cluster.heartbeatMs);
  }

  /** A logout on this board: its streams end here, and every board hears of it. */
  loggedOut(entries: RevokedEntry[]): void {
    this.endStreams(entries);
    this.sendRevoked(entries);
  }

  private endStreams(entries: readonly RevokedEntry[]): void {
    for (const e of entries) {
      if (e[0] === '~') this.d.hub.endUser(e[1] as string);
      else this.d.hub.endSession(e[0]);
    }
  }

  /** Logged-out sessions to every board, as many per packet as fit; sent twice, as a packet may be lost. */
  sendRevoked(list: readonly RevokedEntry[]): void {
    const { d } = this;
    broadcastList((body) => d.mirror.broadcastApp('REVOKE', body), list, d.cfg.limits.udpPacketBytesMax, d.cfg.cluster.heartbeatMs);
  }

  /** A local device changed: record it, and tell the cluster (coalesced per device). */
  onSnapshot(snap: DeviceSnapshot): void {
    const { d } = this;
    d.directory.apply(snap, d.self);
    this.operator.reading(snap.id, snap.points, snap.updatedAt);
    // The device's own board notes it going offline and coming back.
    const was = this.ownOnline.get(snap.id);
    this.ownOnline.set(snap.id, snap.online);
    if (was !== undefined && was !== snap.online)
      this.operator.record('device', { subject: snap.id, text: snap.online ? `${snap.id} back online` : `${snap.id} offline: ${snap.error ?? 'no answer'}` });
    this.operator.evaluate();
    d.hub.publish('device', snap);
    d.mqtt.publishState();
    if (this.devicePending.has(snap.id)) return;
    this.devicePending.set(
      snap.id,
      setTimeout(() => {
        this.devicePending.delete(snap.id);
        const latest = d.devices.snapshots().find((s) => s.id === snap.id);
        if (latest && !d.mirror.broadcastApp('DEVICE', { ...latest })) d.log.warn({ device: snap.id }, 'device reading too large for one packet');
      }, DEVICE_COALESCE_MS),
    );
  }

  /** An SSE client connected: push the cluster view while any is listening. */
  watched(): void {
    if (this.hubTimer) return;
    this.hubTimer = setInterval(() => {
      if (this.d.hub.size === 0) {
        clearInterval(this.hubTimer);
        this.hubTimer = undefined;
        return;
      }
      this.publishCluster();
    }, VIEW_PUSH_MS);
    this.hubTimer.unref();
  }

  private publishCluster(): void {
    this.d.mqtt.publishState();
    if (this.d.hub.size === 0) return;
    const v = this.d.view();
    const s = JSON.stringify(v);
    if (s === this.lastPublished) return;
    this.lastPublished = s;
    this.d.hub.publish('cluster', v);
  }
}
