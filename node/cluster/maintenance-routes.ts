// Maintenance without failing anything (admin, answered by the master).
// POST /api/boards/{id}/drain and /undrain: a board taken out of service. Drained, it gets no new
// work (the master's dispatch sees it at once, and the flag rides in every STATE, so a new master
// keeps it); the answer waits until the work it was given has finished, within
// limits.requestTimeoutMs. Devices with another attached board go on there; those with none left
// answer 503 MAINTENANCE, and the drain's answer names them.
// POST /api/cluster/handover[?to=ID]: the master hands the cluster to another board at once (the
// next running, undrained one round the ring by default): that board takes over with the master's
// table and claims the VIP, this one follows it and passes on what waited in its queue.
import type { Config } from '../../shared/config.ts';
import { EwsError } from '../../shared/errors.ts';
import type { ClusterMirror } from '../cluster-plane/mirror.ts';
import { sendJson } from '../http/http-io.ts';
import type { OperatorState } from '../operator/operator-state.ts';

/** How often an answer looks whether the drained board's work has finished, or the successor took over. */
const SETTLE_POLL_MS = 20;
/** How long a handover may take before its answer says it did not happen (a successor takes over within a round trip). */
const HANDOVER_WAIT_MS = 2000;

export interface DrainDeps {
  cfg: Config;
  mirror: ClusterMirror;
  operator(): OperatorState;
  /** A handover: hold the master's dispatch for `ms` (0: go on), so no frame goes out in a term the boards are leaving. */
  pause?(ms: number): void;
}

type Answer = Parameters<typeof sendJson>[0];

/** What a drain leaves behind: the devices no running, undrained board can reach. */
export function devicesInMaintenance(cfg: Config, mirror: ClusterMirror): string[] {
  const t = mirror.table;
  return cfg.devices.filter((d) => d.attach.every((a) => t.drained(a.board) || t.runstate(a.board) === -1)).map((d) => d.id);
}

export interface DrainOutcome {
  board: string;
  drained: boolean;
  /** Work given to it that had not finished when this answered (0: it is idle). */
  inFlight: number;
  /** Devices no undrained, running board reaches: their commands get 503 MAINTENANCE. */
  maintenance: string[];
  message: string;
}

/** Drain (on) or undrain board `index`; a drain returns once its work has finished (within limits.requestTimeoutMs). */
export async function drainBoard(d: DrainDeps, index: number, on: boolean, user: string | null): Promise<DrainOutcome> {
  const board = d.cfg.boards[index]!;
  const { mirror } = d;
  mirror.drain(board.index, on);
  let inFlight = mirror.table.ownCount(board.index);
  if (on) {
    // The work it was given finishes there: wait for it, within the request timeout.
    const until = Date.now() + d.cfg.limits.requestTimeoutMs;
    while (inFlight > 0 && Date.now() < until && mirror.role === 'master') {
      await new Promise((r) => setTimeout(r, SETTLE_POLL_MS));
      inFlight = mirror.table.ownCount(board.index);
    }
  }
  const maintenance = devicesInMaintenance(d.cfg, mirror);
  const mine = maintenance.filter((id) => d.cfg.devices.find((x) => x.id === id)!.attach.some((a) => a.board === board.index));
  const text = on
    ? `drained${inFlight > 0 ? `, ${inFlight} still running after ${d.cfg.limits.requestTimeoutMs} ms` : ''}${mine.length > 0 ? `; no other board reaches ${mine.join(', ')}: maintenance until undrained` : ''}`
    : 'undrained';
  d.operator().record('command', { user, subject: board.id, status: 200, text });
  return { board: board.id, drained: on, inFlight, maintenance, message: `board ${board.id} ${text}` };
}

export async function drainRoute(d: DrainDeps, path: string, user: string | null, res: Answer): Promise<void> {
  const m = /^\/api\/boards\/([^/]+)\/(drain|undrain)$/.exec(path);
  const board = m ? d.cfg.boards.find((b) => b.id === decodeURIComponent(m[1]!)) : undefined;
  if (!m || !board) throw new EwsError('NOT_FOUND', `no board ${m ? decodeURIComponent(m[1]!) : ''} in the config`);
  sendJson(res, 200, await drainBoard(d, board.index, m[2] === 'drain', user));
}

export interface HandoverOutcome {
  from: string;
  to: string;
  term: number;
  ms: number;
  message: string;
}

/** Hand mastership to the board named (or the next eligible one round the ring); throws NO_SUCCESSOR when none can take it. */
export async function handOverTo(d: DrainDeps, named: string | null, user: string | null): Promise<HandoverOutcome> {
  const { cfg, mirror } = d;
  const self = mirror.master;
  const t = mirror.table;
  const eligible = (i: number) => i !== self && t.runstate(i) === 1 && !t.drained(i);
  let to: number;
  if (named !== null) {
    const b = cfg.boards.find((x) => x.id === named);
    if (!b) throw new EwsError('NOT_FOUND', `no board ${named} in the config`);
    if (!eligible(b.index)) throw new EwsError('NO_SUCCESSOR', `board ${b.id} cannot take over: it is ${b.index === self ? 'the master' : t.drained(b.index) ? 'drained' : 'not running'}`);
    to = b.index;
  } else {
    // The next board round the ring that can: the one a failover would choose.
    const next = cfg.boards.map((_, k) => (self + 1 + k) % cfg.boards.length).find(eligible);
    if (next === undefined) throw new EwsError('NO_SUCCESSOR', 'no other board is running and undrained');
    to = next;
  }
  const from = cfg.boards[self]!.id;
  const started = performance.now();
  d.pause?.(HANDOVER_WAIT_MS);
  mirror.handOver(to);
  const until = Date.now() + HANDOVER_WAIT_MS;
  while (mirror.master !== to && Date.now() < until) await new Promise((r) => setTimeout(r, SETTLE_POLL_MS));
  const ms = Math.round(performance.now() - started);
  const id = cfg.boards[to]!.id;
  if (mirror.master !== to) d.pause?.(0);
  if (mirror.master !== to)
    throw new EwsError('NO_SUCCESSOR', `board ${id} did not take over within ${HANDOVER_WAIT_MS} ms; ${mirror.role === 'master' ? 'this board is still master' : 'the cluster is electing'}`);
  d.operator().record('master', { user, subject: id, status: 200, text: `handed over from ${from} to ${id} in ${ms} ms` });
  return { from, to: id, term: mirror.term, ms, message: `${from} handed the cluster to ${id} in ${ms} ms (term ${mirror.term})` };
}

export async function handoverRoute(d: DrainDeps, url: URL, user: string | null, res: Answer): Promise<void> {
  sendJson(res, 200, await handOverTo(d, url.searchParams.get('to'), user));
}
