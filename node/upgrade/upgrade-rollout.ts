// POST /api/upgrade (admin, answered by the master): a rolling upgrade of the cluster to a signed
// bundle. The master opens the bundle first (a tampered or wrongly signed one is refused before
// any board is touched), then takes the nodes one at a time: drained, sent the bundle, counted
// upgraded only when its HEALTH shows the new version with runstate 1 and its /healthz answers within upgrade.healthS
// (a board that went back to its old release by itself stops the rollout, and the answer says
// why), undrained. The master goes last: it answers, hands the cluster to an upgraded board and
// exits into the new release. One rollout at a time; every step is in the audit log.
import { readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUNDLE_BYTES_MAX, openBundle, parsePublicKey } from '../../shared/bundle.ts';
import type { BoardConfig } from '../../shared/config.ts';
import { EwsError } from '../../shared/errors.ts';
import { PROTOCOL_VERSION } from '../../shared/protocol.ts';
import type { HealthBook } from '../cluster/board-health.ts';
import { requestBoard } from '../cluster/board-request.ts';
import { drainBoard, handOverTo } from '../cluster/maintenance-routes.ts';
import type { ClusterMirror } from '../cluster-plane/mirror.ts';
import { configMac } from '../config/config-apply.ts';
import type { RunningConfig } from '../config/running-config.ts';
import { readBody, receiveFile, sendJson, whenDelivered } from '../http/http-io.ts';
import type { Intake } from '../http/intake.ts';
import type { Logger } from '../log.ts';
import type { OperatorState } from '../operator/operator-state.ts';
import type { TlsMaterial } from '../tls-material.ts';
import { VERSION } from '../version.ts';
import { BUNDLE_MAC_HEADER, releasePrefix, type UpgradeBoard } from './upgrade-board.ts';

const POLL_MS = 50;

export interface RolloutDeps {
  running: RunningConfig;
  self: BoardConfig;
  mirror: ClusterMirror;
  health(): HealthBook;
  operator(): OperatorState;
  board: UpgradeBoard;
  intake: Intake;
  tls: TlsMaterial | undefined;
  log: Logger;
  /** Stop and exit into the new release. */
  exit: (() => void) | undefined;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Where a board is in a rollout, and how far along as a share of its steps (the UI's progress bar). */
export type RolloutStep = 'waiting' | 'draining' | 'sending' | 'restarting' | 'done' | 'failed' | 'skipped';
const STEP_PCT: Record<RolloutStep, number> = { waiting: 0, draining: 10, sending: 30, restarting: 60, done: 100, failed: 100, skipped: 0 };

/** The rollout under way or the last one (GET /api/cluster's `upgrade` on the master). */
export interface RolloutProgress {
  kind: 'upgrade' | 'rollback';
  from: string;
  to: string;
  startedAt: number;
  /** null while it runs. */
  finishedAt: number | null;
  stopped: string | null;
  boards: Array<{ id: string; step: RolloutStep; detail: string }>;
}

/** The rollout as /api/cluster shows it: each board's share of its steps done beside its step (the UI's bar). */
export const progressView = (p: RolloutProgress | null) => (p ? { ...p, boards: p.boards.map((b) => ({ ...b, pct: STEP_PCT[b.step] })) } : null);

export class UpgradeRollout {
  private busy = false;
  /** The rollout under way, or the last one this board ran as master. */
  progress: RolloutProgress | null = null;
  constructor(private readonly d: RolloutDeps) {}

  /** POST /api/upgrade (a bundle), or POST /api/upgrade/rollback (every board back to its previous release). */
  async route(req: IncomingMessage, res: ServerResponse, user: string | null, kind: 'upgrade' | 'rollback'): Promise<void> {
    if (this.busy) throw new EwsError('PUSH_IN_PROGRESS', 'another upgrade (or config push) is under way');
    this.busy = true;
    let exitSelf = false;
    try {
      const body = kind === 'upgrade' ? await this.receive(req) : await readBody(req, 1024);
      const report = await this.roll(kind === 'upgrade' ? body : undefined, user);
      exitSelf = report.master === 'restarting into the new release';
      sendJson(res, 200, report);
    } finally {
      if (!exitSelf) this.busy = false;
    }
    if (exitSelf)
      whenDelivered(res, () => {
        void handOverTo({ cfg: this.d.running.cfg, mirror: this.d.mirror, operator: this.d.operator, pause: (ms) => this.d.intake.pauseDispatch(ms) }, null, user)
          .catch((e: unknown) => this.d.log.warn({ err: (e as Error).message }, 'no board took the cluster before the upgrade: a failover follows'))
          .then(() => this.d.exit?.());
      });
  }

  /**
   * The uploaded bundle: streamed to a file beside the releases (the system's temp directory when
   * the board runs from no releases layout) under BUNDLE_BYTES_MAX, never held by the request,
   * then read once to be checked and sent to each board; the file goes at once.
   */
  private async receive(req: IncomingMessage): Promise<Buffer> {
    const file = join(releasePrefix(this.d.running.cfg) ?? tmpdir(), `upload-${process.pid}.ewsb`);
    await receiveFile(req, file, BUNDLE_BYTES_MAX);
    try {
      return readFileSync(file);
    } finally {
      rmSync(file, { force: true });
    }
  }

  /** `body`: the bundle; none: a rollback (each board to its own previous release). */
  private async roll(body: Buffer | undefined, user: string | null) {
    const { d } = this;
    const cfg = d.running.cfg;
    let to = 'each board’s previous release';
    if (body) {
      const key = parsePublicKey(cfg.upgrade.publicKey);
      if (typeof key === 'string') throw new EwsError('UPGRADE_NOT_POSSIBLE', `upgrade.publicKey ${cfg.upgrade.publicKey === undefined ? 'is not set' : key}`);
      let m: ReturnType<typeof openBundle>['manifest'];
      try {
        // Every check but the architecture: each board checks its own.
        m = openBundle(body, key, undefined).manifest;
      } catch (e) {
        throw new EwsError('BAD_BUNDLE', `${(e as Error).message}; no board was touched`);
      }
      // Its boards and the ones not yet upgraded must understand each other: one protocol version apart at most.
      if (Math.abs(m.protocol - PROTOCOL_VERSION) > 1)
        throw new EwsError('BAD_BUNDLE', `the bundle speaks cluster protocol ${m.protocol}, this cluster ${PROTOCOL_VERSION}: upgrade through a release in between; no board was touched`);
      to = m.version;
    }
    const record = (text: string, status = 200) => d.operator().record('command', { user, subject: 'upgrade', status, text: text.slice(0, 200) });
    record(`${body ? 'upgrade' : 'rollback'} from ${VERSION} to ${to} started`);
    // The nodes in order, the master last: the order the rollout takes them.
    const order = [...cfg.boards.filter((b) => b.index !== d.self.index), d.self];
    const p: RolloutProgress = {
      kind: body ? 'upgrade' : 'rollback',
      from: VERSION,
      to,
      startedAt: Date.now(),
      finishedAt: null,
      stopped: null,
      boards: order.map((b) => ({ id: b.id, step: 'waiting', detail: '' })),
    };
    this.progress = p;
    const step = (b: BoardConfig, s: RolloutStep, detail = '') => {
      const row = p.boards.find((r) => r.id === b.id)!;
      Object.assign(row, { step: s, detail });
    };
    const boards: Record<string, string> = {};
    const t = d.mirror.table;
    const deps = { cfg, mirror: d.mirror, operator: d.operator };
    let stopped: string | undefined;
    for (const b of cfg.boards) {
      if (b.index === d.self.index) continue;
      if (stopped) {
        boards[b.id] = 'not reached: the rollout stopped';
        step(b, 'skipped', boards[b.id]);
        continue;
      }
      if (t.runstate(b.index) === -1) {
        boards[b.id] = 'down: upgrade it when it is back (the rollout goes on)';
        step(b, 'skipped', boards[b.id]);
        continue;
      }
      const started = Date.now();
      step(b, 'draining');
      await drainBoard(deps, b.index, true, user);
      step(b, 'sending');
      const [epoch, sentAt] = [d.mirror.epochOf(b.index), Date.now()];
      const sent = body ? await this.send(b, '/api/cluster/upgrade', body) : await this.send(b, '/api/cluster/rollback', Buffer.from(JSON.stringify({ at: Date.now() })));
      let outcome = sent;
      if (sent.startsWith('restart ')) {
        const version = sent.slice('restart '.length);
        step(b, 'restarting', `to ${version}; waiting for its health`);
        const h = await this.back(b, version, started, epoch, sentAt);
        outcome = h === true ? `${body ? 'upgraded' : 'rolled back'} to ${version} in ${Date.now() - started} ms` : h;
      }
      await drainBoard(deps, b.index, false, user);
      boards[b.id] = outcome;
      const ok = /^(upgraded|rolled back|already)/.test(outcome);
      step(b, ok ? 'done' : 'failed', outcome);
      record(`${b.id}: ${outcome}`, ok ? 200 : 500);
      if (!ok) stopped = `${b.id}: ${outcome}`;
    }
    let master = 'kept its release: the rollout stopped';
    if (!stopped) {
      try {
        const here = body ? await d.board.take(body) : d.board.rollBackHere();
        master = here.applied === 'restart' ? 'restarting into the new release' : 'already on it';
      } catch (e) {
        master = `refused: ${(e as Error).message}`;
        stopped = `${d.self.id}: ${master}`;
      }
    }
    boards[d.self.id] = master;
    step(d.self, stopped ? (master.startsWith('refused') ? 'failed' : 'skipped') : master === 'already on it' ? 'done' : 'restarting', master);
    Object.assign(p, { finishedAt: Date.now(), stopped: stopped ?? null });
    if (stopped) record(`upgrade to ${to} stopped at ${stopped}`, 500);
    return { from: VERSION, to, stopped: stopped ?? null, master, boards };
  }

  /**
   * Until the board's HEALTH shows `to` with runstate 1 (true), or why not. A board that restarted
   * (a boot epoch above `epoch`, its epoch when it was sent the release) and whose HEALTH, sampled
   * by a process started since then (its uptime says so, to the second), shows another version
   * went back by itself: said at once, not at the end of the wait.
   */
  private async back(b: BoardConfig, to: string, since: number, epoch: number, sentAt: number): Promise<true | string> {
    const { d } = this;
    const end = since + d.running.cfg.upgrade.healthS * 1000 + 10_000;
    let seen: string | undefined;
    while (Date.now() < end && d.mirror.role === 'master') {
      const h = d.health().get(b.index);
      if (h && h.at > since && d.mirror.table.runstate(b.index) === 1) {
        // The new version in its HEALTH, running in the table, and its own /healthz answering.
        if (h.version === to && (await this.healthz(b))) return true;
        seen = h.version;
        if (d.mirror.epochOf(b.index) > epoch && Date.now() - h.uptimeS * 1000 >= sentAt - 1500) break;
      }
      await sleep(POLL_MS);
    }
    return seen ? `came back on ${seen}: its new release did not prove healthy and it went back by itself; the rollout stopped` : `not back within upgrade.healthS + 10 s; the rollout stopped`;
  }

  /** The board's /healthz answers 200. */
  private async healthz(b: BoardConfig): Promise<boolean> {
    try {
      return (await requestBoard(b, this.d.tls, { method: 'GET', path: '/healthz', headers: {}, body: Buffer.alloc(0), timeoutMs: 2000, answerBytesMax: 4096 })).status === 200;
    } catch {
      return false;
    }
  }

  /** One board's answer: `restart <version>`, or why not. */
  private async send(b: BoardConfig, path: string, body: Buffer): Promise<string> {
    const { d } = this;
    try {
      const r = await requestBoard(b, d.tls, {
        method: 'POST',
        path,
        headers: { 'content-type': 'application/octet-stream', [BUNDLE_MAC_HEADER]: configMac(d.running.cfg.cluster.key, body) },
        body,
        timeoutMs: 60_000,
        answerBytesMax: 64 * 1024,
      });
      const a = JSON.parse(r.body.toString() || '{}') as { applied?: string; to?: string; error?: { message?: string } };
      if (r.status === 200) return a.applied === 'restart' ? `restart ${a.to}` : 'already on it';
      return `refused (${r.status}): ${a.error?.message ?? ''}`;
    } catch (e) {
      return `unreachable: ${(e as Error).message}`;
    }
  }
}
