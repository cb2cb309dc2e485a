// PUT /api/config (admin, answered by the master): one config for the whole cluster. The master
// checks it whole (400 naming every problem; nothing is sent anywhere), gives it the next
// configVersion when it has none, and sends it to every board signed with the cluster key
// (config-apply.ts answers there). A change every board takes live goes to all at once; one that
// needs a restart rolls: each node in turn is drained, restarts into the config, rejoins with the
// new version and is undrained; the master goes last, after handing the cluster to a board that
// already runs it. A board that is down, or that boots later with an older version, gets the
// master's config when its HEALTH is heard (`converge`). One push at a time: a second gets 409.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BoardConfig, Config } from '../../shared/config.ts';
import { CORE_SECTIONS, configPlan } from '../../shared/config-plan.ts';
import { EwsError } from '../../shared/errors.ts';
import type { HealthBook } from '../cluster/board-health.ts';
import { requestBoard } from '../cluster/board-request.ts';
import { drainBoard, handOverTo } from '../cluster/maintenance-routes.ts';
import type { ClusterMirror } from '../cluster-plane/mirror.ts';
import { readBody, sendJson, whenDelivered } from '../http/http-io.ts';
import type { Intake } from '../http/intake.ts';
import type { Logger } from '../log.ts';
import type { OperatorState } from '../operator/operator-state.ts';
import type { TlsMaterial } from '../tls-material.ts';
import { CONFIG_BYTES_MAX, CONFIG_MAC_HEADER, type ConfigApply, checkConfig, configMac } from './config-apply.ts';
import type { RunningConfig } from './running-config.ts';

/** How long a restarting board has to rejoin with the new version before the rollout stops. */
export const REJOIN_WAIT_MS = 30_000;
/** A board that runs an older config is sent the master's at most this often. */
const CONVERGE_EVERY_MS = 10_000;
const POLL_MS = 25;
/** How long a master waits for its queue to empty by itself before it hands the cluster on (a QoS change). */
const RETUNE_WAIT_MS = 1000;

export interface PushDeps {
  running: RunningConfig;
  self: BoardConfig;
  mirror: ClusterMirror;
  health(): HealthBook;
  operator(): OperatorState;
  apply: ConfigApply;
  intake: Intake;
  tls: TlsMaterial | undefined;
  log: Logger;
  /** Start this board again from its file (after it handed the cluster on). */
  restart: (() => void) | undefined;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class ConfigPush {
  private busy = false;
  private readonly sentAt = new Map<number, number>();

  constructor(private readonly d: PushDeps) {}

  async route(req: IncomingMessage, res: ServerResponse, user: string | null): Promise<void> {
    if (this.busy) throw new EwsError('PUSH_IN_PROGRESS');
    this.busy = true;
    let restartSelf = false;
    try {
      const report = await this.push(await readBody(req, CONFIG_BYTES_MAX), user);
      restartSelf = report.master === 'restarting';
      sendJson(res, 200, report);
    } finally {
      if (!restartSelf) this.busy = false;
    }
    if (restartSelf) whenDelivered(res, () => void this.handOnAndRestart(user));
  }

  private async push(body: Buffer, user: string | null) {
    const { d } = this;
    const cur = d.running.cfg;
    const { raw } = checkConfig(body);
    if (raw.configVersion === undefined) raw.configVersion = cur.configVersion + 1;
    const text = Buffer.from(`${JSON.stringify(raw, null, 2)}\n`);
    const { next } = checkConfig(text);
    if (next.configVersion <= cur.configVersion) throw new EwsError('CONFIG_STALE', `configVersion ${next.configVersion} is not above ${cur.configVersion}, the one the cluster runs`);
    const plan = configPlan(cur, next);
    const t = d.mirror.table;
    const boards: Record<string, string> = {};
    const nodes = cur.boards.filter((b) => b.index !== d.self.index);
    const up = nodes.filter((b) => t.runstate(b.index) !== -1);
    for (const b of nodes) if (t.runstate(b.index) === -1) boards[b.id] = 'down: it gets this config when it rejoins';
    let master: 'applied' | 'restarting' | 'kept the previous config' = 'applied';
    if (plan.restart.length === 0) {
      // Live everywhere, at once; a board that refuses keeps its config and says why.
      const answers = await Promise.all(up.map((b) => this.send(b, text)));
      for (const [i, b] of up.entries()) boards[b.id] = answers[i]!;
      boards[d.self.id] = this.applyHere(text);
      // A new dispatch core is made when the master's is idle; a busy master hands the cluster on so it empties.
      if (plan.changed.some((s) => CORE_SECTIONS.includes(s)) && boards[d.self.id] === 'applied live') boards[d.self.id] = await this.retuneHere(user);
    } else {
      // One board at a time, the master last.
      let stopped = false;
      for (const b of up) {
        if (stopped) {
          boards[b.id] = 'not reached: the rollout stopped';
          continue;
        }
        boards[b.id] = await this.roll(b, next, text, user);
        stopped = !boards[b.id]!.startsWith('restarted');
      }
      if (stopped) {
        master = 'kept the previous config';
        boards[d.self.id] = 'kept the previous config: the rollout stopped';
      } else {
        boards[d.self.id] = this.applyHere(text);
        if (boards[d.self.id]!.startsWith('restart')) master = 'restarting';
        else master = 'kept the previous config';
      }
    }
    const failed = Object.values(boards).filter((v) => !/^(applied|restart|down|already)/.test(v)).length;
    d.operator().record('command', {
      user,
      subject: 'config',
      status: failed ? 207 : 200,
      text: `config ${next.configVersion} pushed (${plan.changed.join(', ') || 'no change'})${failed ? `; ${failed} board(s) refused` : ''}`.slice(0, 200),
    });
    return { configVersion: next.configVersion, configHash: next.digest, changed: plan.changed, restart: plan.restart, master, boards };
  }

  /** The master's own turn: its answer, as a line of the report. */
  private applyHere(text: Buffer): string {
    try {
      const a = this.d.apply.take(text);
      return a.applied === 'live' ? 'applied live' : a.applied === 'restart' ? 'restarting: it hands the cluster on first' : 'already running it';
    } catch (e) {
      return e instanceof EwsError ? `refused: ${e.message}` : `failed: ${(e as Error).message}`;
    }
  }

  /** The master's dispatch core made again: at once when idle, else after handing the cluster to the next board. */
  private async retuneHere(user: string | null): Promise<string> {
    const { d } = this;
    const idle = async (ms: number) => {
      for (const end = Date.now() + ms; !d.intake.retuned() && Date.now() < end; ) await sleep(POLL_MS);
      return d.intake.retuned();
    };
    if (await idle(RETUNE_WAIT_MS)) return 'applied live';
    try {
      const h = await handOverTo({ cfg: d.running.cfg, mirror: d.mirror, operator: d.operator, pause: (ms) => d.intake.pauseDispatch(ms) }, null, user);
      return (await idle(d.running.cfg.limits.requestTimeoutMs))
        ? `applied live, after handing the cluster to ${h.to} (its queue was never empty)`
        : 'applied live; its dispatch core is made again once its last request is answered';
    } catch {
      return 'applied live; its dispatch core is made again the first moment its queue is empty (no board could take the cluster)';
    }
  }

  /** One node of a rolling restart: drained, sent the config, back with the new version, undrained. */
  private async roll(b: BoardConfig, next: Config, text: Buffer, user: string | null): Promise<string> {
    const { d } = this;
    const deps = { cfg: d.running.cfg, mirror: d.mirror, operator: d.operator };
    await drainBoard(deps, b.index, true, user);
    const sent = await this.send(b, text);
    if (!sent.startsWith('restart')) {
      await drainBoard(deps, b.index, false, user);
      return sent;
    }
    const started = Date.now();
    const nb = next.boards.find((x) => x.id === b.id)!;
    let back = false;
    while (Date.now() - started < REJOIN_WAIT_MS && d.mirror.role === 'master') {
      const h = d.health().get(b.index);
      if (d.mirror.table.runstate(b.index) === 1 && h?.configVersion === next.configVersion && h.at >= started) {
        back = true;
        break;
      }
      await sleep(POLL_MS);
    }
    // The master dispatches to it where it listens now (the rest of the new config waits for the master's own turn).
    if (back && d.running.cfg.boards[b.index]!.httpPort !== nb.httpPort) this.portOf(b.index).httpPort = nb.httpPort;
    await drainBoard(deps, b.index, false, user);
    return back ? `restarted in ${Date.now() - started} ms` : `did not rejoin with configVersion ${next.configVersion} within ${REJOIN_WAIT_MS} ms: the rollout stopped`;
  }

  /** The master's running copy of a board's entry, made writable for its port (a Config is frozen). */
  private portOf(index: number): { httpPort: number } {
    const boards = [...this.d.running.cfg.boards];
    const entry = { ...boards[index]! };
    boards[index] = entry;
    this.d.running.cfg = { ...this.d.running.cfg, boards };
    return entry;
  }

  /** Send the config to one board; its answer as a line of the report. */
  private async send(b: BoardConfig, text: Buffer): Promise<string> {
    const { d } = this;
    const key = d.running.cfg.cluster.key;
    try {
      const r = await requestBoard(b, d.tls, {
        method: 'POST',
        path: '/api/cluster/config',
        headers: { 'content-type': 'application/json', [CONFIG_MAC_HEADER]: configMac(key, text) },
        body: text,
        timeoutMs: d.running.cfg.limits.requestTimeoutMs,
        answerBytesMax: 64 * 1024,
      });
      const body = JSON.parse(r.body.toString() || '{}') as { applied?: string; error?: { message?: string } };
      if (r.status === 200) return body.applied === 'live' ? 'applied live' : body.applied === 'restart' ? 'restart' : 'already running it';
      return `refused (${r.status}): ${body.error?.message ?? ''}`;
    } catch (e) {
      return `unreachable: ${(e as Error).message}`;
    }
  }

  /** After the answer: hand the cluster to a board that runs the new config, then start again from it. */
  private async handOnAndRestart(user: string | null): Promise<void> {
    const { d } = this;
    try {
      await handOverTo({ cfg: d.running.cfg, mirror: d.mirror, operator: d.operator, pause: (ms) => d.intake.pauseDispatch(ms) }, null, user);
    } catch (e) {
      d.log.warn({ err: (e as Error).message }, 'no board took the cluster before the restart: a failover follows');
    }
    d.restart?.();
  }

  /** HEALTH from a board: the master sends a board that runs an older config its own (at most every CONVERGE_EVERY_MS). */
  converge(board: number): void {
    const { d } = this;
    if (d.mirror.role !== 'master' || this.busy || board === d.self.index) return;
    const h = d.health().get(board);
    const cur = d.running.cfg;
    if (!h || h.configVersion === null || h.configVersion >= cur.configVersion) return;
    const now = Date.now();
    if (now - (this.sentAt.get(board) ?? -Infinity) < CONVERGE_EVERY_MS) return;
    this.sentAt.set(board, now);
    const b = cur.boards[board];
    if (!b) return;
    const text = Buffer.from(`${JSON.stringify(d.running.raw, null, 2)}\n`);
    void this.send(b, text).then((answer) => d.log.info({ board: b.id, from: h.configVersion, to: cur.configVersion, answer }, 'sent the cluster config to a board running an older one'));
  }
}
