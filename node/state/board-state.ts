// What a board keeps in its stateDir, opened once at boot: its boot epoch, the intent log, the
// logged-out sessions and the operator's state (audit log, alarm episodes, history). Without a
// stateDir ("stateDir": false) all of it lives in memory only.
import type { BoardConfig, Config } from '../../shared/config.ts';
import { RevokedSessions, revokedFile } from '../auth/revoked-sessions.ts';
import { SERVICE_SESSION_TTL_S } from '../auth/session.ts';
import { type IntentLog, openIntentLog } from '../idempotency/intent-log.ts';
import type { Logger } from '../log.ts';
import { OperatorDisk } from '../operator/operator-disk.ts';
import { nextBootEpoch } from './boot-epoch.ts';
import { JournalClosed } from './journal.ts';

export interface BoardState {
  durable: boolean;
  /** Bytes the journals gave the disk since boot (flash wear: ews_state_written_bytes_total). */
  bytesWritten(): number;
  bootEpoch: number;
  intents: IntentLog | undefined;
  revoked: RevokedSessions;
  disk: OperatorDisk | undefined;
}

export function openBoardState(stateDir: string | undefined, cfg: Config, self: BoardConfig, log: Logger): BoardState {
  const l = cfg.limits;
  const intents = openIntentLog(stateDir, self.id, l.idempotencyKeysMax, l.idempotencyTtlMs);
  const disk = stateDir
    ? new OperatorDisk(stateDir, self.id, (what, e) =>
        e instanceof JournalClosed ? log.debug({ err: e.message }, `${what} not written: stopping`) : log.error({ err: e.message }, `cannot write the ${what} to the stateDir`),
      )
    : undefined;
  return {
    durable: stateDir !== undefined,
    bytesWritten: () => (intents?.bytesWritten ?? 0) + (disk?.bytesWritten ?? 0),
    bootEpoch: nextBootEpoch(stateDir, self.id),
    intents,
    revoked: new RevokedSessions(
      l.revokedSessionsMax,
      stateDir ? revokedFile(stateDir, self.id) : undefined,
      Date.now(),
      (e) => log.error({ err: e.message }, 'cannot save the revoked sessions'),
      Math.max(cfg.auth?.sessionTtlS ?? 0, SERVICE_SESSION_TTL_S),
    ),
    disk,
  };
}
