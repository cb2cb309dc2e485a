// Backup and restore of the station's memory: GET /api/backup (operator) is one JSON file with
// the config (secrets left out), every point's history, the audit log and the alarm episodes;
// POST /api/restore (admin; `ews restore`) merges such a file into every running board: the
// board asked merges it, then passes it to each other board (marked, so it goes no further).
// Merging never removes anything a board holds: entries are added by id, samples by time, an
// acknowledgement by its time, so restoring twice changes nothing. A board that is down when the
// restore runs misses it (the answer says so): restore again once it is back.

import type { BoardConfig } from '../../shared/config.ts';
import { redactConfig } from '../../shared/config-redact.ts';
import { EwsError } from '../../shared/errors.ts';
import { requestBoard } from '../cluster/board-request.ts';
import type { TlsMaterial } from '../tls-material.ts';
import type { OperatorState } from './operator-state.ts';

export const BACKUP_FORMAT = 'ews-backup/1';
/** The largest backup a board takes (a full history of many points is a few MB). */
export const BACKUP_BYTES_MAX = 32 << 20;
/** Marks a restore passed on by another board: merged here, not passed on again. */
export const RESTORE_PEER_HEADER = 'x-ews-restore-peer';

export function makeBackup(op: OperatorState, rawConfig: unknown, cluster: string, board: string, nowMs = Date.now()): Record<string, unknown> {
  return { format: BACKUP_FORMAT, cluster, board, at: nowMs, config: redactConfig(rawConfig), ...op.syncSince(0), alarms: op.alarms.list() };
}

/** A backup file merged into this board; 400 for anything that is not one. */
export function restoreInto(op: OperatorState, body: unknown, cluster: string): { entries: number; points: number } {
  if (typeof body !== 'object' || body === null || (body as { format?: unknown }).format !== BACKUP_FORMAT) throw new EwsError('BAD_REQUEST', `not an ews backup (format "${BACKUP_FORMAT}")`);
  const b = body as { cluster?: unknown; alarms?: unknown };
  if (b.cluster !== cluster) throw new EwsError('BAD_REQUEST', `this backup is of cluster "${String(b.cluster).slice(0, 64)}", not "${cluster}"`);
  const got = op.mergeSync(body);
  if (Array.isArray(b.alarms)) op.mergeAlarms(b.alarms);
  return got;
}

/** The same file to another board (headers: the admin's own credentials); its status, 0 when unreachable. */
export function passRestore(to: BoardConfig, tls: TlsMaterial | undefined, body: Buffer, headers: Record<string, string>, timeoutMs: number): Promise<number> {
  const h = { ...headers, 'content-type': 'application/json', 'content-length': String(body.length), [RESTORE_PEER_HEADER]: '1' };
  return requestBoard(to, tls, { method: 'POST', path: '/api/restore', headers: h, body, timeoutMs, answerBytesMax: 64 * 1024 }).then(
    (a) => a.status,
    () => 0,
  );
}
