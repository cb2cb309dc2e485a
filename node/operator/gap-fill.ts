// A board that was away asks the master for what it missed (GET /api/sync?since=ms): the audit
// entries and the history samples since then, all of them, not only the last few. Bounded in
// time and in bytes; a failure is retried at the next master.
import type { BoardConfig } from '../../shared/config.ts';
import { requestBoard } from '../cluster/board-request.ts';
import type { TlsMaterial } from '../tls-material.ts';

/** The most a sync answer may hold (a full history of many points is a few MB). */
const SYNC_BYTES_MAX = 32 << 20;

export async function fetchSync(master: BoardConfig, tls: TlsMaterial | undefined, sinceMs: number, headers: Record<string, string>, timeoutMs: number): Promise<unknown> {
  const a = await requestBoard(master, tls, { method: 'GET', path: `/api/sync?since=${Math.max(0, Math.floor(sinceMs))}`, headers, timeoutMs, answerBytesMax: SYNC_BYTES_MAX });
  if (a.status !== 200) throw new Error(`${master.id} answered ${a.status}`);
  try {
    return JSON.parse(a.body.toString('utf8'));
  } catch {
    throw new Error(`${master.id} answered garbage`);
  }
}
