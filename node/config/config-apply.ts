// A pushed config on one board (POST /api/cluster/config, from the master, signed with the
// cluster key): checked again here, written durably beside the previous one, then applied: live
// when every change is one a running board can take (shared/config-plan.ts), else by restarting
// the board (its host starts it again from the file just written). A board that cannot run it
// (a serial port it does not have) keeps the config it runs and says why.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BoardConfig, Config } from '../../shared/config.ts';
import { ConfigError, parseConfig, startProblems } from '../../shared/config.ts';
import { CORE_SECTIONS, configPlan, type Section } from '../../shared/config-plan.ts';
import { EwsError } from '../../shared/errors.ts';
import type { AuthGuard } from '../auth/guard.ts';
import type { DeviceDirectory } from '../devices/device-directory.ts';
import type { DeviceManager } from '../devices/device-manager.ts';
import { readBody, sendJson } from '../http/http-io.ts';
import type { Intake } from '../http/intake.ts';
import type { Logger } from '../log.ts';
import type { OperatorState } from '../operator/operator-state.ts';
import type { Notifier } from '../services/notifier.ts';
import type { Schedules } from '../services/schedules.ts';
import { writeConfigFile } from './config-file.ts';
import type { RunningConfig } from './running-config.ts';

/** The most a config may weigh (a push, and what the master sends each board). */
export const CONFIG_BYTES_MAX = 1 << 20;
/** The header that carries the config's HMAC (SHA-256 under the cluster key). */
export const CONFIG_MAC_HEADER = 'x-ews-config-mac';

export const configMac = (key: Buffer, body: Buffer): string => createHmac('sha256', key).update(body).digest('hex');

/** Whether `mac` (a header's value) is the body's HMAC under the cluster key or a key it accepts: what the master sends a board (a config, a release). */
export function fromMaster(cluster: Config['cluster'], body: Buffer, mac: string | string[] | undefined): boolean {
  return typeof mac === 'string' && /^[0-9a-f]{64}$/.test(mac) && [cluster.key, ...cluster.acceptKeys].some((k) => timingSafeEqual(Buffer.from(configMac(k, body), 'hex'), Buffer.from(mac, 'hex')));
}

/** A config as JSON text, checked whole: every problem named, or the typed config. */
export function checkConfig(text: Buffer | string): { raw: Record<string, unknown>; next: Config } {
  let raw: unknown;
  try {
    raw = JSON.parse(text.toString());
  } catch (e) {
    throw new EwsError('BAD_CONFIG', 'the config is not JSON', { problems: [`: not valid JSON (${(e as Error).message})`] });
  }
  try {
    const next = parseConfig(raw);
    const problems = startProblems(next);
    if (problems.length > 0) throw new ConfigError(problems);
    return { raw: raw as Record<string, unknown>, next };
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    throw new EwsError('BAD_CONFIG', `the config has ${e.problems.length} problem${e.problems.length === 1 ? '' : 's'}: ${e.problems.join('; ')}`, { problems: e.problems });
  }
}

/** What this board cannot run in `next`: a serial port its devices name that is not here. */
export function boardProblems(next: Config, board: BoardConfig, portExists: (path: string) => boolean = existsSync): string[] {
  const out: string[] = [];
  for (const d of next.devices)
    for (const a of d.attach) if (a.board === board.index && a.port !== '' && !portExists(a.port)) out.push(`devices.${d.id}: serial port ${a.port} does not exist on board ${board.id}`);
  return out;
}

export interface ApplyDeps {
  running: RunningConfig;
  /** The config the board was built from: what needs a restart is judged against it (the running one may differ in live parts, and the master's in where it reaches a board that moved). */
  started: Config;
  self: BoardConfig;
  log: Logger;
  /** Where a pushed config is written (BoardOptions.pushedConfigFile); none: a board made in code cannot take a push. */
  file: string | undefined;
  /** Whether a serial port is there (the system's; a board with simulated ports has them all). */
  portExists(path: string): boolean;
  /** Start the board again from its file; none: nothing would. */
  restart: (() => void) | undefined;
  guard: AuthGuard;
  intake: Intake;
  devices: DeviceManager;
  directory: DeviceDirectory;
  operator(): OperatorState;
  notifier: Notifier | undefined;
  schedules: Schedules;
}

export interface Applied {
  board: string;
  configVersion: number;
  /** `live`: running now; `restart`: written, the board is restarting into it; `already`: it ran it. */
  applied: 'live' | 'restart' | 'already';
  changed: string[];
  restart: string[];
}

export class ConfigApply {
  constructor(private readonly d: ApplyDeps) {}

  /** The route: the master's signed push. The answer goes out before a restart begins. */
  async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req, CONFIG_BYTES_MAX);
    if (!fromMaster(this.d.running.cfg.cluster, body, req.headers[CONFIG_MAC_HEADER])) throw new EwsError('FORBIDDEN', 'a config comes only from the master, signed with the cluster key');
    const out = this.take(body);
    if (out.applied === 'restart') res.once('finish', () => setTimeout(() => this.d.restart!(), 20));
    sendJson(res, 200, out);
  }

  /** Check, write and apply `text` here; throws (nothing changed) when it cannot. A restart is left to the caller. */
  take(text: Buffer | string): Applied {
    const { d } = this;
    const { raw, next } = checkConfig(text);
    const cur = d.running.cfg;
    const plan = { changed: configPlan(cur, next).changed, restart: configPlan(d.started, next).restart };
    const base = { board: d.self.id, configVersion: next.configVersion, changed: plan.changed, restart: plan.restart };
    if (next.configVersion === cur.configVersion && next.digest === cur.digest) return { ...base, applied: 'already' };
    if (next.configVersion <= cur.configVersion) throw new EwsError('CONFIG_STALE', `configVersion ${next.configVersion} is not above ${cur.configVersion}, the one board ${d.self.id} runs`);
    const self = next.boards.find((b) => b.id === d.self.id);
    const problems = self ? boardProblems(next, self, (p) => d.portExists(p)) : [`boards: board ${d.self.id} is not in it`];
    if (!d.file) problems.push(`board ${d.self.id} was not started from a config file`);
    if (plan.restart.length > 0 && !d.restart) problems.push(`board ${d.self.id} cannot restart itself (${plan.restart.join(', ')} changed)`);
    if (problems.length > 0) throw new EwsError('CONFIG_NOT_APPLIED', problems.join('; '), { problems });
    try {
      writeConfigFile(d.file!, `${JSON.stringify(raw, null, 2)}\n`);
    } catch (e) {
      throw new EwsError('CONFIG_NOT_APPLIED', `board ${d.self.id} cannot write ${d.file}: ${(e as Error).message}`, { problems: [`${d.file}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`] });
    }
    d.log.info({ configVersion: next.configVersion, changed: plan.changed, restart: plan.restart }, 'config written');
    if (plan.restart.length > 0) return { ...base, applied: 'restart' };
    this.live(next, raw, plan.changed);
    return { ...base, applied: 'live' };
  }

  /** Every live section swapped in: the running config first, then what keeps state of its own. */
  private live(next: Config, raw: unknown, changed: readonly Section[]): void {
    const { d } = this;
    d.running.cfg = next;
    d.running.raw = raw;
    d.guard.reloadUsers(next.auth);
    d.intake.reclassify(next.classes);
    if (changed.some((s) => CORE_SECTIONS.includes(s))) d.intake.retune(next);
    d.devices.reconfigure(next.devices);
    d.directory.reconfigure(next.devices);
    d.operator().reconfigure(next);
    if (next.notify) d.notifier?.retarget(next.notify);
    if (d.schedules.running) {
      d.schedules.stop();
      d.schedules.start();
    }
  }
}
