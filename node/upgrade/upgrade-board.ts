// A new release on one board. The master sends the bundle (POST /api/cluster/upgrade, the
// bundle signed with upgrade.publicKey's key, the request with the cluster key); the board opens
// it (nothing is touched unless it verifies), installs it beside the running release, marks it on
// trial (upgrade-pending.json), switches `current` and exits with UPGRADE_EXIT so its supervisor
// starts the new release. The release is confirmed only once it has rejoined the cluster with
// runstate 1 and passed its self-test within upgrade.healthS; otherwise `current` goes back to
// the previous release and the board exits again. A release that dies before it can judge itself
// is judged by the guard, run from the previous release before every start (`ews upgrade-guard`):
// after ATTEMPTS_MAX starts on trial, it goes back.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { basename, dirname, join } from 'node:path';
import { BUNDLE_BYTES_MAX, openBundle, parsePublicKey } from '../../shared/bundle.ts';
import type { BoardConfig, Config } from '../../shared/config.ts';
import { EwsError } from '../../shared/errors.ts';
import { fromMaster } from '../config/config-apply.ts';
import type { RunningConfig } from '../config/running-config.ts';
import { readBody, sendJson } from '../http/http-io.ts';
import type { Logger } from '../log.ts';
import { VERSION } from '../version.ts';
import { abandon, currentRelease, installRelease, prune, rollBack, switchRelease } from './releases.ts';

/** The exit code that asks the supervisor to start `current` again (systemd's Restart=on-failure restarts it). */
export const UPGRADE_EXIT = 75;
export const BUNDLE_MAC_HEADER = 'x-ews-bundle-mac';
/** Starts on trial before the guard takes the board back to its previous release. */
export const ATTEMPTS_MAX = 3;
const PENDING = 'upgrade-pending.json';
/** How far a rollback request's time may be from this board's (a replayed one is refused). */
const FRESH_MS = 30_000;

interface Pending {
  from: string;
  to: string;
  at: number;
  attempts: number;
}

/** Where this board's releases live: upgrade.prefix, else the directory above the `current` it runs from. */
export function releasePrefix(cfg: Config, main = process.argv[1]): string | undefined {
  if (cfg.upgrade.prefix) return cfg.upgrade.prefix;
  if (!main) return undefined;
  const dir = dirname(main);
  return basename(dir) === 'current' ? dirname(dir) : undefined;
}

function readPending(prefix: string): Pending | undefined {
  try {
    const p = JSON.parse(readFileSync(join(prefix, PENDING), 'utf8')) as Pending;
    return typeof p.to === 'string' && typeof p.from === 'string' && Number.isInteger(p.attempts) ? p : undefined;
  } catch {
    return undefined;
  }
}

/** Back to the release before the one on trial; what happened, for the log. */
export function goBack(prefix: string, why: string): string {
  const p = readPending(prefix);
  rmSync(join(prefix, PENDING), { force: true });
  const failed = p?.to ?? currentRelease(prefix) ?? '?';
  const back = p ? abandon(prefix, failed, p.from) : rollBack(prefix);
  return `release ${failed} ${why}: ${back ? `back to ${currentRelease(prefix)}` : 'no release to go back to'}`;
}

/**
 * Before a start (run from the previous release): one more start of the release on trial, or,
 * past ATTEMPTS_MAX, back to the previous one. Undefined when nothing is on trial.
 */
export function guardStart(prefix: string): string | undefined {
  const p = readPending(prefix);
  if (!p) return undefined;
  if (currentRelease(prefix) !== p.to) {
    rmSync(join(prefix, PENDING), { force: true });
    return `the release on trial (${p.to}) is not current: nothing to judge`;
  }
  if (p.attempts >= ATTEMPTS_MAX) return goBack(prefix, `did not confirm itself in ${ATTEMPTS_MAX} starts`);
  writeFileSync(join(prefix, PENDING), JSON.stringify({ ...p, attempts: p.attempts + 1 }));
  return `release ${p.to} on trial, start ${p.attempts + 1} of ${ATTEMPTS_MAX}`;
}

/** The release this board runs is on trial (upgrade-pending.json names it). */
export function onTrial(prefix: string | undefined): boolean {
  return prefix !== undefined && readPending(prefix)?.to === VERSION && currentRelease(prefix) === VERSION;
}

/** The release on trial proved itself: it stays. */
export function confirm(prefix: string): void {
  rmSync(join(prefix, PENDING), { force: true });
}

export interface UpgradeDeps {
  running: RunningConfig;
  self: BoardConfig;
  log: Logger;
  /** Stop the board and exit with UPGRADE_EXIT; none: nothing would start the new release. */
  exit: (() => void) | undefined;
}

export class UpgradeBoard {
  /** An install under way here, or done and the board about to restart into it: one at a time. */
  private taking = false;
  constructor(private readonly d: UpgradeDeps) {}

  async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req, BUNDLE_BYTES_MAX);
    this.verify(req, body);
    const out = await this.take(body);
    if (out.applied === 'restart') res.once('finish', () => setTimeout(() => this.d.exit!(), 20));
    sendJson(res, 200, out);
  }

  /** POST /api/cluster/rollback: back to this board's previous release (the request fresh, signed with the cluster key). */
  async rollbackRoute(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req, 1024);
    this.verify(req, body);
    const at = (JSON.parse(body.toString() || '{}') as { at?: unknown }).at;
    if (typeof at !== 'number' || Math.abs(Date.now() - at) > FRESH_MS) throw new EwsError('FORBIDDEN', 'a rollback request must be fresh (its time within 30 s of this board’s)');
    const out = this.rollBackHere();
    if (out.applied === 'restart') res.once('finish', () => setTimeout(() => this.d.exit!(), 20));
    sendJson(res, 200, out);
  }

  /** Switch to the previous release here (the caller exits into it). */
  rollBackHere(): { board: string; from: string; to: string; applied: 'restart' } {
    const { d } = this;
    const prefix = releasePrefix(d.running.cfg);
    if (!prefix || !d.exit) throw new EwsError('UPGRADE_NOT_POSSIBLE', `board ${d.self.id} does not run from a releases layout under a supervisor`);
    if (!rollBack(prefix)) throw new EwsError('UPGRADE_NOT_POSSIBLE', `board ${d.self.id} has no previous release`);
    confirm(prefix); // a known release: nothing on trial
    d.log.info({ from: VERSION, to: currentRelease(prefix) }, 'rolled back: restarting into the previous release');
    return { board: d.self.id, from: VERSION, to: currentRelease(prefix)!, applied: 'restart' };
  }

  private verify(req: IncomingMessage, body: Buffer): void {
    if (!fromMaster(this.d.running.cfg.cluster, body, req.headers[BUNDLE_MAC_HEADER])) throw new EwsError('FORBIDDEN', 'a release comes only from the master, signed with the cluster key');
  }

  /** Check, install and switch to the bundle's release here; throws (nothing touched) when it cannot. */
  async take(body: Buffer): Promise<{ board: string; from: string; to: string; applied: 'restart' | 'already' }> {
    const { d } = this;
    const cfg = d.running.cfg;
    const key = parsePublicKey(cfg.upgrade.publicKey);
    if (typeof key === 'string') throw new EwsError('UPGRADE_NOT_POSSIBLE', `board ${d.self.id}: upgrade.publicKey ${cfg.upgrade.publicKey === undefined ? 'is not set' : key}`);
    let opened: ReturnType<typeof openBundle>;
    try {
      opened = openBundle(body, key, process.arch);
    } catch (e) {
      throw new EwsError('BAD_BUNDLE', `board ${d.self.id} refused the bundle: ${(e as Error).message}`);
    }
    const to = opened.manifest.version;
    if (to === VERSION) return { board: d.self.id, from: VERSION, to, applied: 'already' };
    const prefix = releasePrefix(cfg);
    if (!prefix || !existsSync(join(prefix, 'current'))) throw new EwsError('UPGRADE_NOT_POSSIBLE', `board ${d.self.id} does not run from a releases layout (<prefix>/current/ews.js)`);
    if (!d.exit) throw new EwsError('UPGRADE_NOT_POSSIBLE', `board ${d.self.id} has no supervisor to start the new release`);
    if (this.taking) throw new EwsError('PUSH_IN_PROGRESS', `board ${d.self.id} is installing a release already, or restarting into one`);
    this.taking = true;
    try {
      await installRelease(prefix, opened);
      writeFileSync(join(prefix, PENDING), JSON.stringify({ from: VERSION, to, at: Date.now(), attempts: 0 } satisfies Pending));
      switchRelease(prefix, to);
      await prune(prefix);
    } catch (e) {
      this.taking = false;
      throw e;
    }
    d.log.info({ from: VERSION, to }, 'release installed: restarting into it');
    return { board: d.self.id, from: VERSION, to, applied: 'restart' };
  }
}
