// GET /api/backup and POST /api/restore, answered by the board asked (see backup.ts).
import type { IncomingMessage } from 'node:http';
import type { BoardConfig, Config } from '../../shared/config.ts';
import { EwsError } from '../../shared/errors.ts';
import { type Answer, readBody, sendJson } from '../http/http-io.ts';
import type { TlsMaterial } from '../tls-material.ts';
import { BACKUP_BYTES_MAX, makeBackup, passRestore, RESTORE_PEER_HEADER, restoreInto } from './backup.ts';
import type { OperatorState } from './operator-state.ts';

/** The credentials a restore passes on to the other boards: the admin's own. */
const CREDENTIALS = ['authorization', 'cookie', 'x-csrf-token', 'origin'] as const;

export interface BackupDeps {
  cfg: Config;
  self: BoardConfig;
  operator(): OperatorState;
  /** The config file as JSON. */
  raw: unknown;
  tls: TlsMaterial | undefined;
}

export function backupRoutes(d: BackupDeps) {
  return {
    backup(res: Answer): void {
      const body = JSON.stringify(makeBackup(d.operator(), d.raw, d.cfg.cluster.name, d.self.id));
      const day = new Date().toISOString().slice(0, 10);
      res.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'content-disposition': `attachment; filename="ews-${d.cfg.cluster.name}-${day}.json"`,
        'content-length': String(Buffer.byteLength(body)),
        'cache-control': 'no-store',
      });
      res.end(body);
    },
    async restore(req: IncomingMessage, res: Answer): Promise<void> {
      const raw = await readBody(req, BACKUP_BYTES_MAX);
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        throw new EwsError('BAD_REQUEST', 'the backup is not JSON');
      }
      const here = restoreInto(d.operator(), body, d.cfg.cluster.name);
      const boards: Record<string, string> = { [d.self.id]: `merged ${here.entries} log entries, ${here.points} points` };
      if (req.headers[RESTORE_PEER_HEADER] === undefined) {
        const headers: Record<string, string> = {};
        for (const h of CREDENTIALS) if (typeof req.headers[h] === 'string') headers[h] = req.headers[h];
        const others = d.cfg.boards.filter((b) => b.index !== d.self.index);
        const statuses = await Promise.all(others.map((b) => passRestore(b, d.tls, raw, headers, d.cfg.limits.requestTimeoutMs)));
        others.forEach((b, i) => {
          const s = statuses[i]!;
          boards[b.id] = s === 200 ? 'merged' : s === 0 ? 'unreachable: restore again once it is back (a second merge changes nothing)' : `refused (${s})`;
        });
      }
      sendJson(res, 200, { restored: true, boards });
    },
  };
}
