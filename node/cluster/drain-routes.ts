// POST /api/boards/{id}/drain and /undrain (admin, answered by the master): a board taken out of
// service for maintenance without failing anything. Drained, it gets no new work (the master's
// dispatch sees it at once, and the flag rides in every STATE, so a new master keeps it); the
// answer waits until the work it was given has finished, within limits.requestTimeoutMs. Devices
// with another attached board go on there; those with none left answer 503 MAINTENANCE, and the
// drain's answer names them.
import type { Config } from '../../shared/config.ts';
import { EwsError } from '../../shared/errors.ts';
import type { ClusterMirror } from '../cluster-plane/mirror.ts';
import { sendJson } from '../http/http-io.ts';
import type { OperatorState } from '../operator/operator-state.ts';

/** How often the answer looks whether the drained board's work has finished. */
const SETTLE_POLL_MS = 20;

export interface DrainDeps {
  cfg: Config;
  mirror: ClusterMirror;
  operator(): OperatorState;
}

type Answer = Parameters<typeof sendJson>[0];

/** What a drain leaves behind: the devices no running, undrained board can reach. */
export function devicesInMaintenance(cfg: Config, mirror: ClusterMirror): string[] {
  const t = mirror.table;
  return cfg.devices.filter((d) => d.attach.every((a) => t.drained(a.board) || t.runstate(a.board) === -1)).map((d) => d.id);
}

export async function drainRoute(d: DrainDeps, path: string, user: string | null, res: Answer): Promise<void> {
  const m = /^\/api\/boards\/([^/]+)\/(drain|undrain)$/.exec(path);
  const board = m ? d.cfg.boards.find((b) => b.id === decodeURIComponent(m[1]!)) : undefined;
  if (!m || !board) throw new EwsError('NOT_FOUND', `no board ${m ? decodeURIComponent(m[1]!) : ''} in the config`);
  const on = m[2] === 'drain';
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
  sendJson(res, 200, {
    board: board.id,
    drained: on,
    /** Work given to it that had not finished when this answered (0: it is idle). */
    inFlight,
    /** Devices no undrained, running board reaches: their commands get 503 MAINTENANCE. */
    maintenance,
    message: `board ${board.id} ${text}`,
  });
}
